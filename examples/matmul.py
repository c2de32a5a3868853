"""Blocked matrix multiply C = A @ B: fp16 inputs, fp32 accumulation, a K loop and masks for
sizes that are not multiples of the block."""

import numpy as np

import tilec
import tilec.language as tl


@tilec.jit
def matmul_kernel(
    a_ptr,
    b_ptr,
    c_ptr,
    M,
    N,
    K,
    stride_am,
    stride_ak,
    stride_bk,
    stride_bn,
    stride_cm,
    stride_cn,
    BLOCK_M: tl.constexpr,
    BLOCK_N: tl.constexpr,
    BLOCK_K: tl.constexpr,
):
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    offs_k = tl.arange(0, BLOCK_K)
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k in range(0, K, BLOCK_K):
        rk = k + offs_k
        a_mask = (offs_m[:, None] < M) & (rk[None, :] < K)
        b_mask = (rk[:, None] < K) & (offs_n[None, :] < N)
        a = tl.load(
            a_ptr + offs_m[:, None] * stride_am + rk[None, :] * stride_ak, mask=a_mask, other=0.0
        )
        b = tl.load(
            b_ptr + rk[:, None] * stride_bk + offs_n[None, :] * stride_bn, mask=b_mask, other=0.0
        )
        acc = tl.dot(a, b, acc)
    c_mask = (offs_m[:, None] < M) & (offs_n[None, :] < N)
    tl.store(c_ptr + offs_m[:, None] * stride_cm + offs_n[None, :] * stride_cn, acc, mask=c_mask)


def matmul(a, b, block_m=64, block_n=64, block_k=32):
    (m, k), (_, n) = a.shape, b.shape
    c = np.empty((m, n), dtype=np.float32)
    grid = (tilec.cdiv(m, block_m), tilec.cdiv(n, block_n))
    sa, sb, sc = (np.array(t.strides) // t.itemsize for t in (a, b, c))
    matmul_kernel[grid](
        a, b, c, m, n, k, *map(int, sa), *map(int, sb), *map(int, sc),
        BLOCK_M=block_m, BLOCK_N=block_n, BLOCK_K=block_k,
    )  # fmt: skip
    return c


def main():
    rng = np.random.default_rng(0)
    m, n, k = 200, 150, 100
    a = rng.standard_normal((m, k)).astype(np.float16)
    b = rng.standard_normal((k, n)).astype(np.float16)
    c = matmul(a, b)
    expected = a.astype(np.float32) @ b.astype(np.float32)
    np.testing.assert_allclose(c, expected, rtol=1e-3, atol=1e-3)
    print(f"matmul: max abs error {np.max(np.abs(c - expected)):.3g} (OK)")


if __name__ == "__main__":
    main()
