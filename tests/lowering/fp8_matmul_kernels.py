"""A float8 matmul kernel and its inputs, shared by the CPU tests of float8 on wgmma
(test_lower_wgmma_fp8.py, on the emulated wgmma) and the GPU tests
(tests/nvidia/test_nvidia_fp8_wgmma.py, against the interpreter and NumPy).

`float8_values` decodes e4m3 and e5m2 bytes from the formats' definitions (sign, exponent,
mantissa, subnormals where the exponent is 0), apart from tilec's own tables."""

from __future__ import annotations

import numpy as np

import tilec
import tilec.language as tl

FLOAT8_FIELDS = {"fp8e4nv": (3, 7), "fp8e5": (2, 15)}
"""(mantissa bits, exponent bias) of e4m3 (no infinities; 0x7F and 0xFF are NaN) and e5m2
(IEEE-like: exponent 31 is infinity or NaN), by signature name."""


@tilec.jit
def fp8_matmul(a_ptr, b_ptr, c_ptr, M, N, K, stride_am, stride_ak, stride_bk, stride_bn,
               BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
               IMPRECISE: tl.constexpr):  # fmt: skip
    """C = A B (f32) of float8 A (M x K) and B (K x N), any strides: B K-major in memory
    (`stride_bk` 1) as Triton's fp8 tutorial has it, or row-major."""
    offs_m = (tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)) % M
    offs_n = (tl.program_id(1) * BLOCK_N + tl.arange(0, BLOCK_N)) % N
    offs_k = tl.arange(0, BLOCK_K)
    a_ptrs = a_ptr + offs_m[:, None] * stride_am + offs_k[None, :] * stride_ak
    b_ptrs = b_ptr + offs_k[:, None] * stride_bk + offs_n[None, :] * stride_bn
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k in range(0, tl.cdiv(K, BLOCK_K)):
        a = tl.load(a_ptrs, mask=offs_k[None, :] < K - k * BLOCK_K, other=0.0)
        b = tl.load(b_ptrs, mask=offs_k[:, None] < K - k * BLOCK_K, other=0.0)
        acc = tl.dot(a, b, acc, max_num_imprecise_acc=IMPRECISE)
        a_ptrs += BLOCK_K * stride_ak
        b_ptrs += BLOCK_K * stride_bk
    offs_cm = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_cn = tl.program_id(1) * BLOCK_N + tl.arange(0, BLOCK_N)
    c_mask = (offs_cm[:, None] < M) & (offs_cn[None, :] < N)
    tl.store(c_ptr + offs_cm[:, None] * N + offs_cn[None, :], acc, mask=c_mask)


def compile_fp8(a_type, b_type, blocks, warps, stages, b_k_major=True, imprecise=None,
                target="sm_90a", backend="nvidia", divisible=True):  # fmt: skip
    """`fp8_matmul` for `a_type` x `b_type` ("fp8e4nv", "fp8e5"), A row-major and B K-major or
    row-major (the unit strides compiled in), the other sizes and strides multiples of 16 where
    `divisible`."""
    signature = {"a_ptr": f"*{a_type}", "b_ptr": f"*{b_type}", "c_ptr": "*fp32", "M": "i32",
                 "N": "i32", "K": "i32", "stride_am": "i32", "stride_ak": "i32",
                 "stride_bk": "i32", "stride_bn": "i32"}  # fmt: skip
    unit = ("stride_ak", "stride_bk") if b_k_major else ("stride_ak", "stride_bn")
    multiples = ("a_ptr", "b_ptr", "c_ptr", "M", "N", "K", "stride_am",
                 "stride_bn" if b_k_major else "stride_bk")  # fmt: skip
    block_m, block_n, block_k = blocks
    return tilec.compile(
        fp8_matmul, signature,
        dict(BLOCK_M=block_m, BLOCK_N=block_n, BLOCK_K=block_k, IMPRECISE=imprecise),
        divisibility=multiples if divisible else ("a_ptr", "b_ptr", "c_ptr"), equal_to_1=unit,
        backend=backend, target=target, num_warps=warps, num_stages=stages,
    )  # fmt: skip


def matmul_args(a, b, m, n, k, b_k_major=True) -> list:
    """The launch arguments of `fp8_matmul` for codes `a` (M x K) and `b` (K x N), B stored
    K-major (its transpose row-major) or row-major, and a C of NaNs."""
    b_memory = np.ascontiguousarray(b.T) if b_k_major else b
    strides_b = (1, k) if b_k_major else (n, 1)
    c = np.full(m * n, np.nan, np.float32)
    return [a.reshape(-1), b_memory.reshape(-1), c, m, n, k, k, 1, *strides_b]


def float8_codes(rng, shape: tuple[int, ...], dtype: str) -> np.ndarray:
    """Random finite float8 codes of magnitude 2^-3 to 2^4 (no NaN, no infinity)."""
    mantissa_bits, bias = FLOAT8_FIELDS[dtype]
    sign = rng.integers(0, 2, shape) << 7
    exponent = rng.integers(bias - 3, bias + 4, shape) << mantissa_bits
    mantissa = rng.integers(0, 1 << mantissa_bits, shape)
    return (sign | exponent | mantissa).astype(np.uint8)


def float8_values(codes: np.ndarray, dtype: str) -> np.ndarray:
    """The `dtype` ("fp8e4nv" or "fp8e5") bytes `codes` as f64 (module doc)."""
    mantissa_bits, bias = FLOAT8_FIELDS[dtype]
    codes = codes.astype(np.int64)
    sign = np.where(codes & 0x80, -1.0, 1.0)
    top = (0x80 >> mantissa_bits) - 1
    exponent = (codes >> mantissa_bits) & top
    mantissa = codes & ((1 << mantissa_bits) - 1)
    fraction = mantissa / float(1 << mantissa_bits)
    values = np.where(
        exponent == 0,
        fraction * 2.0 ** (1 - bias),
        (1 + fraction) * 2.0 ** (exponent.astype(np.float64) - bias),
    )
    if dtype == "fp8e4nv":
        values = np.where((codes & 0x7F) == 0x7F, np.nan, values)
    else:
        values = np.where(exponent == top, np.where(mantissa == 0, np.inf, np.nan), values)
    return sign * values
