"""Blocked matrix multiply with a fused epilogue, C = activation(A @ B + bias): fp16 inputs, fp32
accumulation, a K loop and masks for sizes that are not multiples of the block.

Programs run in grouped order as in Triton's matmul tutorial: a launch is one-dimensional and
GROUP_SIZE_M consecutive programs walk down a column of C's blocks before moving right, so the
blocks of B they read stay in L2 while A's rows are reused across the group. The bias (one value a
column) and the activation ("" for none, "relu" or "leaky_relu") are applied to the accumulator
before the single store.
"""

import numpy as np

import tilec
import tilec.language as tl

ACTIVATIONS = ("", "relu", "leaky_relu")


@tilec.jit
def matmul_kernel(
    a_ptr, b_ptr, c_ptr, bias_ptr, M, N, K,
    stride_am, stride_ak, stride_bk, stride_bn, stride_cm, stride_cn,
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
    GROUP_SIZE_M: tl.constexpr = 8, HAS_BIAS: tl.constexpr = False, ACTIVATION: tl.constexpr = "",
):  # fmt: skip
    pid = tl.program_id(0)
    num_pid_m = tl.cdiv(M, BLOCK_M)
    num_pid_n = tl.cdiv(N, BLOCK_N)
    num_pid_in_group = GROUP_SIZE_M * num_pid_n
    group_id = pid // num_pid_in_group
    first_pid_m = group_id * GROUP_SIZE_M
    group_size_m = min(num_pid_m - first_pid_m, GROUP_SIZE_M)
    pid_m = first_pid_m + ((pid % num_pid_in_group) % group_size_m)
    pid_n = (pid % num_pid_in_group) // group_size_m
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
    if HAS_BIAS:
        bias = tl.load(bias_ptr + offs_n, mask=offs_n < N, other=0.0)
        acc = acc + bias[None, :].to(tl.float32)
    if ACTIVATION == "relu":
        acc = tl.maximum(acc, 0.0)
    elif ACTIVATION == "leaky_relu":
        acc = tl.where(acc >= 0.0, acc, 0.01 * acc)
    c_mask = (offs_m[:, None] < M) & (offs_n[None, :] < N)
    tl.store(c_ptr + offs_m[:, None] * stride_cm + offs_n[None, :] * stride_cn, acc, mask=c_mask)


def matmul(a, b, bias=None, activation="", block_m=64, block_n=64, block_k=32, group_size_m=8):
    """activation(a @ b + bias) in float32 for fp16 NumPy arrays a (M x K), b (K x N), bias (N)."""
    if activation not in ACTIVATIONS:
        raise ValueError(f"unknown activation {activation!r}: use one of {ACTIVATIONS}")
    (m, k), (_, n) = a.shape, b.shape
    c = np.empty((m, n), dtype=np.float32)
    grid = (tilec.cdiv(m, block_m) * tilec.cdiv(n, block_n),)
    sa, sb, sc = (np.array(t.strides) // t.itemsize for t in (a, b, c))
    matmul_kernel[grid](
        a, b, c, c if bias is None else bias, m, n, k, *map(int, sa), *map(int, sb), *map(int, sc),
        BLOCK_M=block_m, BLOCK_N=block_n, BLOCK_K=block_k, GROUP_SIZE_M=group_size_m,
        HAS_BIAS=bias is not None, ACTIVATION=activation,
    )  # fmt: skip
    return c


def reference(a, b, bias=None, activation=""):
    """The same in NumPy float32."""
    c = a.astype(np.float32) @ b.astype(np.float32)
    if bias is not None:
        c = c + bias.astype(np.float32)
    if activation == "relu":
        return np.maximum(c, 0.0)
    if activation == "leaky_relu":
        return np.where(c >= 0.0, c, 0.01 * c)
    return c


def main():
    rng = np.random.default_rng(0)
    # 200 x 150 x 100: no dimension is a multiple of its block, and 4 x 3 blocks with groups of
    # 3 rows leave a ragged last group.
    m, n, k = 200, 150, 100
    a = rng.standard_normal((m, k)).astype(np.float16)
    b = rng.standard_normal((k, n)).astype(np.float16)
    bias = rng.standard_normal(n).astype(np.float16)
    worst = 0.0
    for bias_, activation in ((None, ""), (bias, "relu"), (bias, "leaky_relu")):
        c = matmul(a, b, bias_, activation, group_size_m=3)
        expected = reference(a, b, bias_, activation)
        np.testing.assert_allclose(c, expected, rtol=1e-3, atol=1e-3)
        worst = max(worst, float(np.max(np.abs(c - expected))))
    print(f"matmul: max abs error {worst:.3g} (OK)")


if __name__ == "__main__":
    main()
