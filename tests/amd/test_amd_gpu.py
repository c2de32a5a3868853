"""On an AMD GPU (ROCm and hip-python): kernels launched for real, checked against the
interpreter. Skipped, with the reason, elsewhere. The full conformance run on a ROCm machine:
`TILEC_TEST_BACKEND=amd pytest -q tests/language tests/gpu tests/amd`."""

from __future__ import annotations

import sys

import numpy as np
import pytest

import tilec

pytestmark = pytest.mark.gpu
sys.path.insert(0, "tests/frontend")


def test_vector_add_numpy_and_device_arrays(private_cache, rng):
    from frontend_kernels import add_kernel

    n = 98432
    x, y = rng.standard_normal(n, dtype=np.float32), rng.standard_normal(n, dtype=np.float32)
    out = np.full_like(x, np.nan)
    add_kernel[(tilec.cdiv(n, 1024),)](x, y, out, n, BLOCK_SIZE=1024, backend="amd", check=True)
    np.testing.assert_array_equal(out, x + y)
    dx, dy = tilec.to_device(x, backend="amd"), tilec.to_device(y, backend="amd")
    dout = tilec.to_device(np.zeros_like(x), backend="amd")
    add_kernel[(tilec.cdiv(n, 1024),)](dx, dy, dout, n, BLOCK_SIZE=1024, backend="amd")
    np.testing.assert_array_equal(dout.numpy(), x + y)


@pytest.mark.parametrize("num_warps", [1, 4, 8])
def test_softmax_cross_wavefront_reduction(private_cache, num_warps, rng):
    from frontend_kernels import softmax_kernel

    rows, cols = 37, 781
    x = rng.standard_normal((rows, cols), dtype=np.float32)
    out = np.full_like(x, np.nan)
    softmax_kernel[(rows,)](
        out, x, cols, cols, cols, BLOCK=1024, num_warps=num_warps, backend="amd", check=True
    )
    e = np.exp(x - x.max(axis=1, keepdims=True))
    np.testing.assert_allclose(out, e / e.sum(axis=1, keepdims=True), rtol=1e-5, atol=1e-6)
