"""tl.sum, tl.max, tl.min, tl.argmax, tl.argmin, tl.xor_sum, tl.reduce, tl.cumsum, tl.cumprod
along axis 1 of an [8, 32] tile, for every dtype, against NumPy.

Integers are exact: sums and scans of types narrower than 32 bits widen to the 32-bit type of the
same signedness (Triton's rule), everything else wraps at its width. Float max/min/arg* are exact;
float sums and scans may round in a different order than NumPy, so they must be within
`2 * log2(32) * eps * sum(|x|)` of the float64 result (sums) or `32 * eps * running sum(|x|)`
(sequential scans), eps being the result dtype's machine epsilon.
"""

import numpy as np
import pytest
from lang_helpers import FLOATS, INTS, UINTS, as_float64, bf16_values, random_values, run, storage
from language_kernels import reduce_kernel

M, N = 8, 32
EPS = {"float16": 2.0**-10, "bfloat16": 2.0**-7, "float32": 2.0**-23, "float64": 2.0**-52}


def wide(dtype: str) -> str:
    if dtype in ("int8", "int16"):
        return "int32"
    if dtype in ("uint8", "uint16"):
        return "uint32"
    return dtype


def out_dtype(op: str, dtype: str) -> str:
    if op in ("argmax", "argmin"):
        return "int32"
    if op in ("sum", "cumsum"):
        return wide(dtype) if dtype != "bfloat16" or op == "sum" else "float32"
    if op == "cumprod" and dtype == "bfloat16":
        return "float32"  # Triton scans bf16 in f32
    return dtype


def launch(op: str, dtype: str, x: np.ndarray) -> np.ndarray:
    scan = op.startswith("cum")
    out = np.zeros((M, N) if scan else M, storage(out_dtype(op, dtype)))
    # Float sums and scans round differently in another association order: their tests bound
    # the error against float64 instead of comparing with the interpreter.
    exact_order = dtype not in FLOATS or op not in ("sum", "cumsum", "cumprod")
    run(reduce_kernel, [("*" + dtype, x), ("*" + out_dtype(op, dtype), out)], OP=op, M=M, N=N,
        exact_order=exact_order)  # fmt: skip
    return out


def wrap_to(values: np.ndarray, dtype: str) -> np.ndarray:
    """Python ints (object array) into `dtype`, modulo 2**width."""
    bits = np.iinfo(dtype).bits
    unsigned = np.vectorize(lambda v: int(v) % (1 << bits), otypes=[object])(values)
    return unsigned.astype(np.uint64).astype(f"u{bits // 8}").view(dtype)


INT_OPS = ["sum", "max", "min", "argmax", "argmin", "xor_sum", "reduce_or", "cumsum", "cumprod"]


@pytest.mark.parametrize("dtype", INTS + UINTS)
@pytest.mark.parametrize("op", INT_OPS)
def test_integer_reductions(rng, op, dtype):
    if op in ("argmax", "argmin"):  # a narrow range makes ties: the first index must win
        x = random_values(rng, dtype, M * N, low=1, high=6).reshape(M, N)
    else:
        x = random_values(rng, dtype, M * N).reshape(M, N)
    out = launch(op, dtype, x)
    big = x.astype(object)
    expected = {
        "sum": lambda: wrap_to(big.sum(axis=1), out_dtype(op, dtype)),
        "max": lambda: x.max(axis=1),
        "min": lambda: x.min(axis=1),
        "argmax": lambda: x.argmax(axis=1).astype(np.int32),
        "argmin": lambda: x.argmin(axis=1).astype(np.int32),
        "xor_sum": lambda: np.bitwise_xor.reduce(x, axis=1),
        "reduce_or": lambda: np.bitwise_or.reduce(x, axis=1),
        "cumsum": lambda: wrap_to(np.cumsum(big, axis=1), out_dtype(op, dtype)),
        "cumprod": lambda: wrap_to(np.cumprod(big, axis=1), dtype),
    }[op]()
    np.testing.assert_array_equal(out, expected, err_msg=f"{op} {dtype}")


FLOAT_OPS = ["sum", "max", "min", "argmax", "argmin", "reduce_max", "cumsum", "cumprod"]


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("op", FLOAT_OPS)
def test_float_reductions(rng, op, dtype):
    low, high = (0.5, 1.5) if op == "cumprod" else (-8.0, 8.0)
    x = random_values(rng, dtype, M * N, low=low, high=high).reshape(M, N)
    out = launch(op, dtype, x)
    if out_dtype(op, dtype) == "bfloat16":
        out = bf16_values(out)
    x64 = as_float64(x, dtype)
    got = out.astype(np.float64)
    eps = EPS[out_dtype(op, dtype) if out_dtype(op, dtype) != "int32" else dtype]
    if op in ("argmax", "argmin"):
        np.testing.assert_array_equal(out, getattr(x64, op)(axis=1))
    elif op in ("max", "min", "reduce_max"):
        np.testing.assert_array_equal(got, getattr(x64, op[-3:])(axis=1))
    elif op == "sum":
        bound = 2 * np.log2(N) * eps * np.abs(x64).sum(axis=1)
        assert (np.abs(got - x64.sum(axis=1)) <= bound).all(), (got, x64.sum(axis=1))
    else:
        exact = np.cumsum(x64, axis=1) if op == "cumsum" else np.cumprod(x64, axis=1)
        scale = np.cumsum(np.abs(x64), axis=1) if op == "cumsum" else np.abs(exact)
        bound = N * eps * scale
        assert (np.abs(got - exact) <= bound).all(), (got, exact)


@pytest.mark.parametrize("dtype", FLOATS)
def test_float_max_min_ignore_nan(rng, dtype):
    """tl.max / tl.min combine with maxnum / minnum (Triton's compiled default): a NaN element
    is skipped unless the whole row is NaN."""
    x = random_values(rng, dtype, M * N).reshape(M, N)
    nan = x.dtype.type(0x7FC0) if dtype == "bfloat16" else np.nan
    x[0, 3] = x[1, :] = nan
    for op in ("max", "min"):
        out = launch(op, dtype, x)
        got = (bf16_values(out) if dtype == "bfloat16" else out).astype(np.float64)
        expected = getattr(np, "nan" + op)(as_float64(x, dtype)[[0, *range(2, M)]], axis=1)
        np.testing.assert_array_equal(got[[0, *range(2, M)]], expected)
        assert np.isnan(got[1])


def test_sum_of_int8_widens():
    """Not a tautology: 32 x 100 in int8 would wrap; widened to int32 it is 3200."""
    x = np.full((M, N), 100, np.int8)
    np.testing.assert_array_equal(launch("sum", "int8", x), np.full(M, 3200, np.int32))
