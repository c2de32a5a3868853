"""tl.dot in a blocked matmul: a K loop carrying the accumulator, masks for sizes that are not
multiples of the blocks, f16, bf16 and f32 (tf32) inputs into f32 (tensor cores on GPUs that have
them), against NumPy (and, on a GPU backend, against the interpreter as well)."""

import numpy as np
import pytest
from lang_helpers import BACKEND, SIGNATURE, as_float64, bf16_bits, bf16_values, random_values, run

import tilec
import tilec.language as tl
from tilec.runtime import check
from tilec_interp.dtypes import tf32_truncate


@tilec.jit
def matmul_kernel(a_ptr, b_ptr, c_ptr, M, N, K, stride_am, stride_ak, stride_bk, stride_bn,
                  BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):  # fmt: skip
    offs_m = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = tl.program_id(1) * BLOCK_N + tl.arange(0, BLOCK_N)
    offs_k = tl.arange(0, BLOCK_K)
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k in range(0, K, BLOCK_K):
        rk = k + offs_k
        a_mask = (offs_m[:, None] < M) & (rk[None, :] < K)
        b_mask = (rk[:, None] < K) & (offs_n[None, :] < N)
        a = tl.load(a_ptr + offs_m[:, None] * stride_am + rk[None, :] * stride_ak, mask=a_mask)
        b = tl.load(b_ptr + rk[:, None] * stride_bk + offs_n[None, :] * stride_bn, mask=b_mask)
        acc = tl.dot(a, b, acc)
    c_mask = (offs_m[:, None] < M) & (offs_n[None, :] < N)
    tl.store(c_ptr + offs_m[:, None] * N + offs_n[None, :], acc * 2.0 + 1.0, mask=c_mask)


CASES = [  # (M, N, K), (BLOCK_M, BLOCK_N, BLOCK_K), num_warps
    ((100, 72, 80), (64, 64, 32), 4),
    ((48, 40, 64), (32, 32, 32), 4),
    ((16, 24, 40), (16, 16, 16), 4),
    ((200, 150, 100), (128, 128, 64), 8),
    ((130, 70, 96), (64, 128, 32), 2),
]


@pytest.mark.parametrize("dtype", ["float16", "bfloat16", "float32"])
@pytest.mark.parametrize(("sizes", "blocks", "num_warps"), CASES)
def test_matmul_with_masks(rng, dtype, sizes, blocks, num_warps):
    (m, n, k), (block_m, block_n, block_k) = sizes, blocks
    a = random_values(rng, dtype, m * k, low=-2.0, high=2.0)
    b = random_values(rng, dtype, k * n, low=-2.0, high=2.0)
    c = np.full(m * n, np.nan, np.float32)
    pointer = "*" + SIGNATURE[dtype]
    signature = {"a_ptr": pointer, "b_ptr": pointer, "c_ptr": "*fp32", "M": "i32", "N": "i32",
                 "K": "i32", "stride_am": "i32", "stride_ak": "i32", "stride_bk": "i32",
                 "stride_bn": "i32"}  # fmt: skip
    constexprs = dict(BLOCK_M=block_m, BLOCK_N=block_n, BLOCK_K=block_k)

    def compiled(backend: str):
        return tilec.compile(matmul_kernel, signature, constexprs, backend=backend,
                             num_warps=num_warps)  # fmt: skip

    grid = (-(-m // block_m), -(-n // block_n))
    args = [a, b, c, m, n, k, k, 1, n, 1]
    kernel = compiled(BACKEND)
    if BACKEND == "interp":
        kernel.run(grid, args)
    else:  # also against the interpreter, with --check's tolerances
        check.run_checked(kernel, grid, args, lambda: compiled("interp"))
    a64, b64 = as_float64(a, dtype).reshape(m, k), as_float64(b, dtype).reshape(k, n)
    if dtype == "float32":  # the default input_precision, "tf32", cuts the inputs
        a64, b64 = tf32_truncate(a64.astype(np.float32)), tf32_truncate(b64.astype(np.float32))
        a64, b64 = a64.astype(np.float64), b64.astype(np.float64)
    expected = (a64 @ b64) * 2.0 + 1.0
    bound = (k + 2) * 2.0**-22 * (np.abs(a64) @ np.abs(b64) + 1.0)
    assert (np.abs(c.reshape(m, n) - expected) <= bound).all()


@tilec.jit
def precision_kernel(a_ptr, b_ptr, c_ptr, M: tl.constexpr, N: tl.constexpr, K: tl.constexpr,
                     PRECISION: tl.constexpr):  # fmt: skip
    rm, rn, rk = tl.arange(0, M), tl.arange(0, N), tl.arange(0, K)
    a = tl.load(a_ptr + rm[:, None] * K + rk[None, :])
    b = tl.load(b_ptr + rk[:, None] * N + rn[None, :])
    acc = tl.full((M, N), 0.25, tl.float32)
    c = tl.dot(a, b, acc, input_precision=PRECISION)
    tl.store(c_ptr + rm[:, None] * N + rn[None, :], c)


def bf16_parts(x: np.ndarray, count: int) -> list[np.ndarray]:
    """float32 `x` split as Triton's F32DotTC splits it: each part the rest rounded to bf16
    (nearest even), the rest less that part (exact in f32)."""
    parts, rest = [], x.astype(np.float32)
    for _ in range(count):
        part = bf16_values(bf16_bits(rest.astype(np.float64))).astype(np.float64)
        parts.append(part)
        rest = (rest.astype(np.float64) - part).astype(np.float32)
    return parts


@pytest.mark.parametrize("precision", ["bf16x3", "bf16x6"])
def test_dot_bf16_split_precisions(rng, precision):
    """input_precision "bf16x3" (hi hi + hi mid + mid hi) and "bf16x6" (and mid mid, hi lo,
    lo hi) of Triton 3.6: the sum of those products of the bf16 parts, exactly as NumPy forms
    them here, within f32 summation error,
    and the next test tells the sets of products apart."""
    m, n, k = 32, 32, 64
    a = (rng.standard_normal((m, k)) * 4).astype(np.float32)
    b = (rng.standard_normal((k, n)) * 4).astype(np.float32)
    c = np.full((m, n), np.nan, np.float32)
    run(precision_kernel, [("*float32", a), ("*float32", b), ("*float32", c)], exact_order=False,
        M=m, N=n, K=k, PRECISION=precision)  # fmt: skip
    count = 2 if precision == "bf16x3" else 3
    (ah, am, *al), (bh, bm, *bl) = bf16_parts(a, count), bf16_parts(b, count)
    expected = ah @ bh + ah @ bm + am @ bh + 0.25
    if precision == "bf16x6":
        expected += am @ bm + ah @ bl[0] + al[0] @ bh
    magnitude = np.abs(a.astype(np.float64)) @ np.abs(b.astype(np.float64)) + 0.25
    bound = (k + 4) * 2.0**-24 * magnitude
    assert (np.abs(c - expected) <= bound).all()


@pytest.mark.parametrize(
    ("precision", "sum_of_row"),
    [
        ("bf16x3", 1 + 2**-8),
        ("bf16x6", 1 + 2**-8 + 3 * 2**-18),
        ("ieee", 1 + 2**-8 + 3 * 2**-18 + 2**-26),
    ],
)
def test_dot_bf16_split_terms(precision, sum_of_row):
    """Which products of the parts are summed: every input is `1 + 2**-9 + 2**-18` (bf16 parts
    hi 1, mid 2**-9, lo 2**-18), so bf16x3 has `hi hi + 2 hi mid` per product and bf16x6 adds
    `mid mid + 2 hi lo`; every sum is exact in f32, whatever its order."""
    m = n = k = 16
    a = np.full((m, k), 1 + 2**-9 + 2**-18, np.float32)
    b = a.copy()
    c = np.zeros((m, n), np.float32)
    run(precision_kernel, [("*float32", a), ("*float32", b), ("*float32", c)], M=m, N=n, K=k,
        PRECISION=precision)  # fmt: skip
    np.testing.assert_array_equal(c, np.float32(k * sum_of_row + 0.25))


def test_dot_bf16x3_infinite_input():
    """An infinite input's `mid` part is NaN (inf - inf): Triton zeroes the NaNs of the small
    products before adding `hi hi`, so the result is the infinity, not NaN."""
    m = n = k = 16
    a = np.ones((m, k), np.float32)
    a[3, 5] = np.inf
    b = np.full((k, n), 0.5, np.float32)
    c = np.zeros((m, n), np.float32)
    run(precision_kernel, [("*float32", a), ("*float32", b), ("*float32", c)], exact_order=False,
        M=m, N=n, K=k, PRECISION="bf16x3")  # fmt: skip
    assert np.isposinf(c[3]).all()
    np.testing.assert_array_equal(np.delete(c, 3, axis=0), np.full((m - 1, n), k * 0.5 + 0.25))


@tilec.jit
def out_dtype_kernel(a_ptr, b_ptr, c_ptr, M: tl.constexpr, N: tl.constexpr, K: tl.constexpr,
                     OUT: tl.constexpr):  # fmt: skip
    rm, rn, rk = tl.arange(0, M), tl.arange(0, N), tl.arange(0, K)
    a = tl.load(a_ptr + rm[:, None] * K + rk[None, :])
    b = tl.load(b_ptr + rk[:, None] * N + rn[None, :])
    tl.store(c_ptr + rm[:, None] * N + rn[None, :], tl.dot(a, b, out_dtype=OUT))


@pytest.mark.parametrize("out", [tl.int8, tl.int16, tl.int32], ids=str)
def test_int8_dot_with_an_out_dtype_keeps_the_int32_sums(rng, out):
    """Triton 3.6 makes an int8 dot int32 whatever `out_dtype` says (issue 22: tilec truncated
    the sums to out_dtype on every backend)."""
    m, n, k = 64, 64, 64
    a = rng.integers(-128, 128, (m, k), dtype=np.int8)
    b = rng.integers(-128, 128, (k, n), dtype=np.int8)
    c = np.zeros((m, n), np.int32)
    run(out_dtype_kernel, [("*int8", a), ("*int8", b), ("*int32", c)], M=m, N=n, K=k, OUT=out)
    np.testing.assert_array_equal(c, a.astype(np.int64) @ b.astype(np.int64))
