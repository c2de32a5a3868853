"""Binary operators and tl.minimum / tl.maximum / tl.where on every dtype, against NumPy.

Integers must match exactly, wrapping at their width (`//` and `%` truncate toward zero as in C,
`>>` is arithmetic on signed and logical on unsigned types); floats must match bit for bit:
+ - * / are correctly rounded (f16 and bf16 round to nearest even from the exact result), except
float32 `/` on a GPU backend, Triton's fast division (NVIDIA's `div.full.f32`): within 2 ulp.
"""

import numpy as np
import pytest
from lang_helpers import (
    FLOATS,
    GPU,
    INTS,
    UINTS,
    as_float64,
    bf16_values,
    random_values,
    rounded,
    run,
    storage,
)
from language_kernels import binary_kernel

N = 256
COMPARES = {"lt": np.less, "le": np.less_equal, "gt": np.greater, "ge": np.greater_equal,
            "eq": np.equal, "ne": np.not_equal}  # fmt: skip
INT_OPS = ["add", "sub", "mul", "truediv", "floordiv", "mod", "and", "or", "xor", "shl", "shr",
           "minimum", "maximum", "where", "py_min", "py_max", *COMPARES]  # fmt: skip
FLOAT_OPS = ["add", "sub", "mul", "truediv", "mod", "minimum", "maximum", "minimum_nan",
             "maximum_nan", "where", "py_min", "py_max", *COMPARES]  # fmt: skip


def wrap(values: list[int], dtype: str) -> np.ndarray:
    """Python ints reduced modulo 2**width into `dtype` (two's complement)."""
    info = np.iinfo(dtype)
    width = info.bits
    out = [(v % (1 << width)) for v in values]
    if info.min < 0:
        out = [v - (1 << width) if v >= 1 << (width - 1) else v for v in out]
    return np.array(out, dtype)


def int_reference(op: str, a: np.ndarray, b: np.ndarray, dtype: str) -> np.ndarray:
    if op in COMPARES:
        return COMPARES[op](a, b)
    if op == "truediv":  # Triton: int / int divides in float32
        return a.astype(np.float32) / b.astype(np.float32)
    if op in ("minimum", "py_min"):
        return np.minimum(a, b)
    if op in ("maximum", "py_max", "where"):
        return np.maximum(a, b)
    x, y = [int(v) for v in a], [int(v) for v in b]
    if op in ("floordiv", "mod"):
        quotients = [
            abs(p) // abs(q) * (1 if (p < 0) == (q < 0) else -1) for p, q in zip(x, y, strict=True)
        ]
        if op == "floordiv":
            return wrap(quotients, dtype)
        return wrap([p - q * d for p, q, d in zip(x, y, quotients, strict=True)], dtype)
    python = {
        "add": lambda p, q: p + q,
        "sub": lambda p, q: p - q,
        "mul": lambda p, q: p * q,
        "and": lambda p, q: p & q,
        "or": lambda p, q: p | q,
        "xor": lambda p, q: p ^ q,
        "shl": lambda p, q: p << q,
        "shr": lambda p, q: p >> q,  # Python's >> is arithmetic; unsigned values are >= 0
    }[op]
    return wrap([python(p, q) for p, q in zip(x, y, strict=True)], dtype)


def float_reference(op: str, a: np.ndarray, b: np.ndarray, dtype: str) -> np.ndarray:
    x, y = as_float64(a, dtype), as_float64(b, dtype)
    if op in COMPARES:
        return COMPARES[op](x, y)
    exact = {
        "add": np.add,
        "sub": np.subtract,
        "mul": np.multiply,
        "truediv": np.divide,
        "mod": np.fmod,  # exact, so the rounding below changes nothing
        "minimum": np.fmin,  # PropagateNan.NONE: a NaN operand is ignored
        "maximum": np.fmax,
        "py_min": np.fmin,
        "py_max": np.fmax,
        "minimum_nan": np.minimum,  # PropagateNan.ALL
        "maximum_nan": np.maximum,
        "where": lambda p, q: np.where(p > q, p, q),
    }[op]
    if dtype in ("float16", "float32", "float64"):
        # NumPy's own f16/f32/f64 arithmetic is correctly rounded for these ops.
        return exact(a, b) if op != "where" else np.where(a > b, a, b)
    return rounded(exact(x, y), dtype)


def result_dtype(op: str, dtype: str) -> str:
    if op in COMPARES:
        return "bool"
    if op == "truediv" and dtype in INTS + UINTS:
        return "float32"
    return dtype


def launch(op: str, dtype: str, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    out_dtype = result_dtype(op, dtype)
    out = np.zeros(N, storage(out_dtype))
    run(binary_kernel, [("*" + dtype, a), ("*" + dtype, b), ("*" + out_dtype, out)], OP=op, N=N)
    return out


@pytest.mark.parametrize("dtype", INTS + UINTS)
@pytest.mark.parametrize("op", INT_OPS)
def test_integer_binary(rng, op, dtype):
    a = random_values(rng, dtype)
    b = random_values(rng, dtype)
    if op in ("shl", "shr"):
        b = rng.integers(0, np.iinfo(dtype).bits, N).astype(dtype)
    out = launch(op, dtype, a, b)
    expected = int_reference(op, a, b, dtype)
    if op == "truediv" and GPU:  # the operands rounded to float32 first, as Triton does
        wide = [v.astype(np.float32).astype(np.float64) for v in (a, b)]
        assert_fast_quotient(out, wide[0] / wide[1])
        return
    np.testing.assert_array_equal(out, expected, err_msg=f"{op} {dtype}")


def assert_fast_quotient(out: np.ndarray, exact: np.ndarray) -> None:
    """float32 quotients within 2 ulp of the exact ones (`div.full.f32`'s bound), NaNs alike."""
    nan = np.isnan(exact)
    np.testing.assert_array_equal(np.isnan(out), nan, err_msg="truediv float32 (NaNs)")
    ulp = np.spacing(np.abs(exact[~nan]).astype(np.float32)).astype(np.float64)
    error = np.abs(out[~nan].astype(np.float64) - exact[~nan])
    assert (error <= 2 * ulp).all(), f"truediv float32: {np.max(error / ulp)} ulp"


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("op", FLOAT_OPS)
def test_float_binary(rng, op, dtype):
    a = random_values(rng, dtype)
    b = random_values(rng, dtype)
    if op != "mod":  # put NaNs in both operands, apart and together
        nan = np.array(np.nan, np.float64)
        for arr, where in ((a, [3, 10]), (b, [10, 17])):
            arr[where] = rounded(nan, dtype) if dtype == "bfloat16" else np.nan
    out = launch(op, dtype, a, b)
    expected = float_reference(op, a, b, dtype)
    if op == "truediv" and dtype == "float32" and GPU:
        assert_fast_quotient(out, a.astype(np.float64) / b.astype(np.float64))
        return
    if dtype == "bfloat16" and op not in COMPARES:  # bit patterns; NaN payloads unspecified
        nan = np.isnan(bf16_values(expected))
        np.testing.assert_array_equal(np.isnan(bf16_values(out)), nan, err_msg=f"{op} bf16 NaNs")
        np.testing.assert_array_equal(out[~nan], expected[~nan], err_msg=f"{op} {dtype}")
    elif expected.dtype == np.float64 or op in COMPARES:
        np.testing.assert_array_equal(out, expected, err_msg=f"{op} {dtype}")
    else:
        # Bit patterns, so that -0.0 and rounding are exact; a NaN's payload is unspecified.
        nan = np.isnan(expected)
        np.testing.assert_array_equal(np.isnan(out), nan, err_msg=f"{op} {dtype} (NaNs)")
        np.testing.assert_array_equal(out[~nan].view(f"u{out.itemsize}"), expected[~nan].view(
            f"u{out.itemsize}"), err_msg=f"{op} {dtype} (bit patterns)")  # fmt: skip


def test_integer_wraps_at_width(rng):
    """Not a tautology: int8 127 + 1 is -128, not 128."""
    a = np.full(N, 127, np.int8)
    b = np.ones(N, np.int8)
    np.testing.assert_array_equal(launch("add", "int8", a, b), np.full(N, -128, np.int8))


def test_fp16_rounds_to_nearest_even():
    """2048 + 1 in f16 is a tie between 2048 and 2050: nearest even keeps 2048; 2050 + 1 is a
    tie between 2050 and 2052: nearest even gives 2052."""
    a = np.array([2048.0, 2050.0] * (N // 2), np.float16)
    b = np.ones(N, np.float16)
    out = launch("add", "float16", a, b)
    np.testing.assert_array_equal(out[:2], np.array([2048.0, 2052.0], np.float16))
