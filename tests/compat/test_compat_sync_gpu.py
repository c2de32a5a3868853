"""Programs that wait on each other on a GPU backend (nvidia; amd with `TILEC_TEST_BACKEND=amd`):
the tutorial's layer-norm backward with its spin lock, and a spin-lock counter, against NumPy.
The interpreter runs the same kernels in tests/compat/test_compat_sync.py."""

import compat_sync_kernels as kernels
import numpy as np
import pytest
from compat_helpers import GPU_BACKEND as BACKEND

pytestmark = [pytest.mark.gpu, pytest.mark.usefixtures("gpu_backend")]


@pytest.mark.parametrize(("M", "N", "group"), [(37, 50, 4), (1151, 1024, 64)])
def test_tutorial_layer_norm_backward_matches_numpy(rng, M, N, group):
    x = rng.standard_normal((M, N)).astype(np.float32)
    w = rng.standard_normal(N).astype(np.float32)
    dy = rng.standard_normal((M, N)).astype(np.float32)
    mean = x.mean(axis=1).astype(np.float32)
    rstd = (1 / np.sqrt(x.var(axis=1) + 1e-5)).astype(np.float32)
    dx = np.zeros_like(x)
    partial_dw = np.zeros((group, N), np.float32)
    partial_db = np.zeros((group, N), np.float32)
    locks = np.zeros(2 * group, np.int32)
    block_n = 1 << (N - 1).bit_length()
    kernels.layer_norm_bwd_dx_fused[(M,)](
        dx, dy, partial_dw, partial_db, x, w, mean, rstd, locks, N, N,
        GROUP_SIZE_M=group, BLOCK_SIZE_N=block_n, backend=BACKEND,
    )  # fmt: skip
    dw, db = np.zeros(N, np.float32), np.zeros(N, np.float32)
    kernels.layer_norm_bwd_dwdb[(N + 31) // 32,](
        partial_dw, partial_db, dw, db, group, N,
        BLOCK_SIZE_M=16, BLOCK_SIZE_N=32, backend=BACKEND,
    )  # fmt: skip
    xhat = (x - mean[:, None]) * rstd[:, None]
    wdy = w * dy
    c1 = (xhat * wdy).sum(axis=1, keepdims=True) / N
    c2 = wdy.sum(axis=1, keepdims=True) / N
    np.testing.assert_allclose(dx, (wdy - (xhat * c1 + c2)) * rstd[:, None], rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(dw, (dy * xhat).sum(axis=0), rtol=1e-3, atol=1e-3)
    np.testing.assert_allclose(db, dy.sum(axis=0), rtol=1e-3, atol=1e-3)
    np.testing.assert_array_equal(locks[:group], 0)


@pytest.mark.parametrize("programs", [7, 300])
def test_spin_lock_counter_counts_every_program_once(programs):
    lock, count = np.zeros(1, np.int32), np.zeros(1, np.int32)
    order = np.full(programs, -1, np.int32)
    kernels.locked_counter[(programs,)](lock, count, order, backend=BACKEND)
    assert count[0] == programs and lock[0] == 0
    np.testing.assert_array_equal(np.sort(order), np.arange(programs))
