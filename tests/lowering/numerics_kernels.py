"""The masked matmul of the `tl.dot` numerics tests (tf32, 3xTF32, ieee, int8): compiled and
emulated in `test_lower_mma_numerics.py`, run on the GPU in `tests/nvidia/test_nvidia_dot_numerics.py`;
Triton's test_dot kernel, for its int8 cases with an `out_dtype` (`test_lower_dot_out_dtype.py`,
`tests/nvidia/test_nvidia_dot_out_dtype.py`)."""

from __future__ import annotations

import numpy as np

import tilec
import tilec.language as tl


@tilec.jit
def matmul_kernel(a_ptr, b_ptr, c_ptr, M, N, K, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
                  BLOCK_K: tl.constexpr, PRECISION: tl.constexpr, INTEGER: tl.constexpr):  # fmt: skip
    offs_m = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = tl.program_id(1) * BLOCK_N + tl.arange(0, BLOCK_N)
    offs_k = tl.arange(0, BLOCK_K)
    if INTEGER:
        acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.int32)
    else:
        acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k in range(0, K, BLOCK_K):
        rk = k + offs_k
        a_mask = (offs_m[:, None] < M) & (rk[None, :] < K)
        b_mask = (rk[:, None] < K) & (offs_n[None, :] < N)
        a = tl.load(a_ptr + offs_m[:, None] * K + rk[None, :], mask=a_mask)
        b = tl.load(b_ptr + rk[:, None] * N + offs_n[None, :], mask=b_mask)
        acc = tl.dot(a, b, acc, input_precision=PRECISION)
    c_mask = (offs_m[:, None] < M) & (offs_n[None, :] < N)
    tl.store(c_ptr + offs_m[:, None] * N + offs_n[None, :], acc, mask=c_mask)


@tilec.jit
def triton_test_dot_kernel(X, stride_xm, stride_xk, Y, stride_yk, stride_yn, Z, stride_zm, stride_zn,
                           BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
                           OUT: tl.constexpr, RESULT: tl.constexpr):  # fmt: skip
    """Triton's test_dot kernel (its 'none' epilogue): `tl.dot(x, y, out_dtype=OUT)` stored into
    Z; `RESULT` is the dtype the dot must have (Triton's: int32 for int8 operands, whatever OUT)."""
    off_m = tl.arange(0, BLOCK_M)
    off_n = tl.arange(0, BLOCK_N)
    off_k = tl.arange(0, BLOCK_K)
    x = tl.load(X + off_m[:, None] * stride_xm + off_k[None, :] * stride_xk)
    y = tl.load(Y + off_k[:, None] * stride_yk + off_n[None, :] * stride_yn)
    z = tl.dot(x, y, out_dtype=OUT)
    tl.static_assert(z.dtype == RESULT)
    tl.store(Z + off_m[:, None] * stride_zm + off_n[None, :] * stride_zn, z)


TEST_DOT_SIGNATURE = {"X": "*i8", "stride_xm": "i32", "stride_xk": "i32", "Y": "*i8",
                      "stride_yk": "i32", "stride_yn": "i32", "Z": "*i32", "stride_zm": "i32",
                      "stride_zn": "i32"}  # fmt: skip
TEST_DOT_INT8_SHAPES = [  # Triton's test_dot: BLOCK_M, BLOCK_N, BLOCK_K, num_warps
    (128, 256, 32, 8), (128, 16, 32, 4), (32, 128, 64, 4), (128, 128, 64, 4), (64, 128, 128, 4),
    (32, 128, 64, 2), (64, 64, 32, 4), (32, 32, 128, 16), (128, 128, 64, 2), (64, 128, 128, 2),
]  # fmt: skip


def int8_test_dot_case(rng, m: int, n: int, k: int, col_a: bool, col_b: bool, out: np.ndarray):
    """Triton's test_dot int8 case: the kernel's arguments (x [M, K] and y [K, N] held
    column-major where asked, as contiguous arrays with their element strides; `out` [M, N]) and
    the int32 sums Triton expects. The operands' values make the sums overflow int8."""
    x = rng.integers(-128, 128, (k, m) if col_a else (m, k), dtype=np.int8)
    y = rng.integers(-128, 128, (n, k) if col_b else (k, n), dtype=np.int8)
    x_strides = (1, m) if col_a else (k, 1)
    y_strides = (1, k) if col_b else (n, 1)
    sums = (x.T if col_a else x).astype(np.int64) @ (y.T if col_b else y).astype(np.int64)
    args = [x, *x_strides, y, *y_strides, out, n, 1]
    return args, sums.astype(np.int32)
