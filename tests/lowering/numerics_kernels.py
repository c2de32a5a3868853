"""The masked matmul of the `tl.dot` numerics tests (tf32, 3xTF32, ieee, int8): compiled and
emulated in `test_lower_mma_numerics.py`, run on the GPU in `tests/nvidia/test_nvidia_dot_numerics.py`."""

from __future__ import annotations

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
