"""On the GPU: `tl.dot` of f32 inputs (tf32 on wgmma m64nNk8 where the shape fits a warpgroup on
sm_90a, else mma.sync m16n8k8; 3xTF32 on mma.sync; ieee on FMAs) and of int8 inputs (mma.sync
m16n8k32 into i32), with sizes that are not multiples of the blocks, against the interpreter
(`check.run_checked`, --check's path) and against NumPy with bounds tight enough to tell tf32
inputs truncated (what the tensor cores read of f32 bits) from rounded ones."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

import tilec
from tilec.runtime import check
from tilec_interp.dtypes import tf32_truncate

sys.path.insert(0, str(Path(__file__).parent.parent / "lowering"))
from numerics_kernels import matmul_kernel

pytestmark = pytest.mark.gpu


CASES = [  # dtype, precision, (BLOCK_M, BLOCK_N, BLOCK_K), num_warps, (M, N, K)
    ("fp32", "tf32", (64, 64, 32), 4, (100, 72, 80)),
    ("fp32", "tf32", (128, 128, 32), 8, (200, 150, 100)),
    ("fp32", "tf32", (128, 256, 32), 8, (300, 260, 72)),  # wgmma m64n256k8 on sm_90a
    ("fp32", "tf32", (64, 128, 16), 4, (70, 130, 50)),  # K blocks of 16: 64-byte swizzle
    ("fp32", "tf32x3", (64, 64, 32), 4, (100, 72, 80)),
    ("fp32", "ieee", (64, 64, 32), 4, (100, 72, 80)),
    ("fp32", "tf32", (16, 16, 16), 4, (16, 24, 40)),
    ("i8", None, (64, 64, 64), 4, (100, 72, 200)),
    ("i8", None, (128, 64, 32), 8, (130, 70, 96)),
]


@pytest.mark.parametrize(("dtype", "precision", "blocks", "num_warps", "sizes"), CASES)
def test_dot_on_the_gpu_matches_the_interpreter(rng, dtype, precision, blocks, num_warps, sizes):
    (m, n, k), (block_m, block_n, block_k) = sizes, blocks
    integer = dtype == "i8"
    if integer:
        a = rng.integers(-128, 128, (m, k), dtype=np.int8)
        b = rng.integers(-128, 128, (k, n), dtype=np.int8)
        c = np.full(m * n, -1, np.int32)
    else:
        a = rng.standard_normal((m, k)).astype(np.float32)
        b = rng.standard_normal((k, n)).astype(np.float32)
        c = np.full(m * n, np.nan, np.float32)
    signature = {"a_ptr": f"*{dtype}", "b_ptr": f"*{dtype}", "c_ptr": "*i32" if integer else
                 "*fp32", "M": "i32", "N": "i32", "K": "i32"}  # fmt: skip
    constexprs = dict(BLOCK_M=block_m, BLOCK_N=block_n, BLOCK_K=block_k, PRECISION=precision,
                      INTEGER=integer)  # fmt: skip

    def compiled(backend: str):
        return tilec.compile(matmul_kernel, signature, constexprs, backend=backend,
                             num_warps=num_warps)  # fmt: skip

    kernel = compiled("nvidia")
    ptx = kernel.asm["ptx"]
    assert ("mma.sync" in ptx or "wgmma.mma_async" in ptx) == (precision != "ieee")
    grid = (-(-m // block_m), -(-n // block_n))
    args = [a.reshape(-1), b.reshape(-1), c, m, n, k]
    check.run_checked(kernel, grid, args, lambda: compiled("interp"))
    result = c.reshape(m, n)
    if integer:
        expected = (a.astype(np.int64) @ b.astype(np.int64)).astype(np.int32)
        np.testing.assert_array_equal(result, expected)
        return
    if precision == "tf32":  # truncated: inputs rounded to nearest would miss this bound
        a64, b64 = tf32_truncate(a).astype(np.float64), tf32_truncate(b).astype(np.float64)
    else:
        a64, b64 = a.astype(np.float64), b.astype(np.float64)
    bound = (k + 2) * 2.0**-22 * (np.abs(a64) @ np.abs(b64) + 1.0)
    assert (np.abs(result - a64 @ b64) <= bound).all()
