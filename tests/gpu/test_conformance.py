"""Kernels of the frontend and runtime tests on a GPU backend (nvidia; amd with
`TILEC_TEST_BACKEND=amd`), checked against the
interpreter (`check=True` compares every written buffer with tolerances by dtype)."""

from __future__ import annotations

import numpy as np
import pytest
from frontend_kernels import add_kernel, branchy_kernel, matmul_kernel, softmax_kernel, while_kernel
from gpu_backend import BACKEND

import tilec

pytestmark = pytest.mark.gpu


@pytest.mark.parametrize("n", [1, 1000, 98432, 1 << 20])
@pytest.mark.parametrize("block", [128, 1024])
def test_vector_add(rng, n, block):
    x, y = rng.standard_normal(n, dtype=np.float32), rng.standard_normal(n, dtype=np.float32)
    out = np.full_like(x, np.nan)
    add_kernel[(tilec.cdiv(n, block),)](x, y, out, n, BLOCK_SIZE=block, backend=BACKEND, check=True)
    np.testing.assert_array_equal(out, x + y)


@pytest.mark.parametrize("num_warps", [1, 4, 8])
@pytest.mark.parametrize("cols", [1, 100, 781, 1024, 4096])
def test_softmax(rng, cols, num_warps):
    rows = 37
    x = rng.standard_normal((rows, cols), dtype=np.float32)
    out = np.full_like(x, np.nan)
    block = 1 << (cols - 1).bit_length()
    softmax_kernel[(rows,)](
        out, x, cols, cols, cols, BLOCK=block, num_warps=num_warps, backend=BACKEND, check=True
    )
    e = np.exp(x - x.max(axis=1, keepdims=True))
    np.testing.assert_allclose(out, e / e.sum(axis=1, keepdims=True), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("blocks", [(16, 16, 16), (64, 64, 32), (32, 64, 16)])
def test_matmul(rng, blocks):
    bm, bn, bk = blocks
    m, n, k = 128, 192, 64
    a = rng.standard_normal((m, k), dtype=np.float32)
    b = rng.standard_normal((k, n), dtype=np.float32)
    c = np.zeros((m, n), dtype=np.float16)
    matmul_kernel[(m // bm, n // bn)](
        a, b, c, m, n, k, BLOCK_M=bm, BLOCK_N=bn, BLOCK_K=bk, backend=BACKEND, check=True
    )
    np.testing.assert_allclose(c.astype(np.float32), a @ b, rtol=2e-2, atol=2e-2)


@pytest.mark.parametrize("flag", [-1, 3])
@pytest.mark.parametrize("use_scale", [False, True])
def test_control_flow(rng, flag, use_scale):
    block, n = 64, 5
    x = rng.standard_normal(n * block, dtype=np.float32)
    out = np.full(block, np.nan, dtype=np.float32)
    branchy_kernel[(1,)](
        x, out, n, flag, BLOCK=block, USE_SCALE=use_scale, backend=BACKEND, check=True
    )


def test_while_loop(rng):
    x = rng.standard_normal(17).astype(np.float32)
    expected = np.float32(x.astype(np.float64).sum())
    while_kernel[(1,)](x, 17, backend=BACKEND, check=True)
    np.testing.assert_allclose(x[0], expected, rtol=1e-5)
