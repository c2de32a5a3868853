"""Unary math (tl.exp ... tl.erf, tl.fma, unary minus, ~, tl.abs) and tl.clamp, against NumPy.

Tolerances, in units in the last place (ulp) of the result dtype, against a float64 reference
(`math.erf` for erf, exact rational arithmetic for f64 fma):
- exact (0 ulp): abs, unary minus, ~, sqrt (correctly rounded; float32 on a GPU backend is
  Triton's fast `tl.sqrt`, NVIDIA's `sqrt.approx.f32`: 2 ulp); bf16 results of one op (the
  interp computes bf16 math in float64 and rounds once, as the reference does).
- 1 ulp: f16 (NumPy computes f16 math in f32 and rounds), rsqrt, fma (f64 too), erf in f32.
- 4 ulp: f32 exp, exp2, log, log2, sin, cos (NumPy's f32 SIMD libm); 8 ulp: sigmoid, which is
  1 / (1 + exp(-x)) in the input dtype, three roundings (3 ulp in f16 and bf16); sin and cos
  also get an absolute
  4 ulp-of-1 slack near their zeros.
- f64: 2 ulp (libm), erf 16 ulp (tilec_interp.special.erf's documented accuracy).
"""

import math
from fractions import Fraction

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
from language_kernels import clamp_kernel, unary_kernel

N = 256
POSITIVE = {"log", "log2", "sqrt", "rsqrt"}
REFERENCE = {
    "exp": np.exp,
    "exp2": np.exp2,
    "log": np.log,
    "log2": np.log2,
    "sqrt": np.sqrt,
    "rsqrt": lambda x: 1.0 / np.sqrt(x),
    "abs": np.abs,
    "neg": np.negative,
    "sin": np.sin,
    "cos": np.cos,
    "sigmoid": lambda x: 1.0 / (1.0 + np.exp(-x)),
    "erf": lambda x: np.array([math.erf(v) for v in x]),
    "fma": lambda x: np.array([float(Fraction(v) * Fraction(v) + Fraction(v)) for v in x]),
}
F32_ULPS = {"exp": 4, "exp2": 4, "log": 4, "log2": 4, "sin": 4, "cos": 4, "sigmoid": 8}
F64_ULPS = {"erf": 16, "fma": 1}
GPU_F32 = {
    "exp": (16, 0.0),
    "exp2": (4, 0.0),
    "log": (4, 2.0**-21),
    "log2": (4, 2.0**-21),
    "sin": (4, 2.0**-18),
    "cos": (4, 2.0**-18),
    "erf": (4, 0.0),
    "tanh": (4, 2.0**-22),
}
"""(ulps, absolute error) allowed on GPU backends for f32, whose exp/log/sin/cos are the fast
hardware approximations (`ex2.approx`, `lg2.approx`, `sin.approx` on NVIDIA), as Triton's are."""  # fmt: skip


def ulp(values: np.ndarray, dtype: str) -> np.ndarray:
    """The spacing of `dtype` at each of `values` (float64 in, float64 out)."""
    if dtype == "bfloat16":
        return np.spacing(np.abs(values).astype(np.float32)).astype(np.float64) * 65536
    return np.spacing(np.abs(values).astype(dtype)).astype(np.float64)


def allowed_ulps(op: str, dtype: str) -> int:
    if op == "sigmoid" and dtype in ("float16", "bfloat16"):
        return 3
    if op == "sqrt" and GPU and dtype == "float32":
        return 2
    if op in ("abs", "neg", "sqrt") or dtype == "bfloat16":
        return 0
    if dtype == "float16":
        return 1
    if dtype == "float32":
        return F32_ULPS.get(op, 1)
    return F64_ULPS.get(op, 2)


def launch(op: str, dtype: str, x: np.ndarray) -> np.ndarray:
    out = np.zeros(N, storage(dtype))
    run(unary_kernel, [("*" + dtype, x), ("*" + dtype, out)], OP=op, N=N)
    return out


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("op", list(REFERENCE))
def test_float_math(rng, op, dtype):
    x = random_values(rng, dtype, low=0.01 if op in POSITIVE else -8.0, high=8.0)
    out = launch(op, dtype, x)
    x64 = as_float64(x, dtype)
    exact = REFERENCE[op](x64)
    if dtype == "bfloat16" and allowed_ulps(op, dtype) == 0:
        np.testing.assert_array_equal(out, rounded(exact, "bfloat16"), err_msg=f"{op} bf16")
        return
    got = (bf16_values(out) if dtype == "bfloat16" else out).astype(np.float64)
    if allowed_ulps(op, dtype) == 0:  # correctly rounded
        np.testing.assert_array_equal(out, exact.astype(dtype), err_msg=f"{op} {dtype}")
        return
    error = np.abs(got - exact)
    limit = allowed_ulps(op, dtype) * ulp(exact, dtype)
    if op in ("sin", "cos"):
        limit = limit + 4 * ulp(np.ones(1), dtype)
    if GPU and dtype == "float32" and op in GPU_F32:
        ulps, absolute = GPU_F32[op]
        limit = np.maximum(limit, ulps * ulp(exact, dtype) + absolute)
    bad = error > limit
    assert not bad.any(), (
        f"{op} {dtype}: x={x64[bad][:4]} got={got[bad][:4]} expected={exact[bad][:4]} "
        f"error={(error[bad] / ulp(exact[bad], dtype))[:4]} ulp, allowed {allowed_ulps(op, dtype)}"
    )


@pytest.mark.parametrize("dtype", INTS + UINTS)
@pytest.mark.parametrize("op", ["abs", "neg", "invert"])
def test_integer_unary_wraps(rng, op, dtype):
    x = random_values(rng, dtype)
    info = np.iinfo(dtype)
    x[0] = info.min if info.min < 0 else info.max  # abs(-128) and -(-128) wrap to -128 in int8
    out = launch(op, dtype, x)
    with np.errstate(over="ignore"):
        expected = {"abs": np.abs, "neg": np.negative, "invert": np.invert}[op](x)
    np.testing.assert_array_equal(out, expected)


@pytest.mark.parametrize("dtype", ["float16", "float32", "float64"])
def test_erf_matches_math_erf_closely(dtype):
    """Across [-6, 6] and the tails: f32 results are math.erf rounded to f32 (within 1 ulp)."""
    x = np.linspace(-6.0, 6.0, N).astype(dtype)
    out = launch("erf", dtype, x).astype(np.float64)
    exact = np.array([math.erf(v) for v in x.astype(np.float64)])
    ulps = {"float16": 1, "float32": 4 if GPU else 1, "float64": 16}[dtype]
    assert (np.abs(out - exact) <= ulps * ulp(exact, dtype)).all()


def test_erf_special_values():
    x = np.array([np.nan, np.inf, -np.inf, 0.0, -0.0, 1e-30, -1e-30, 30.0] * (N // 8))
    out = launch("erf", "float64", x)
    assert np.isnan(out[0])
    np.testing.assert_array_equal(out[1:8], [1.0, -1.0, 0.0, -0.0, math.erf(1e-30), -1e-30 *
                                            2 / math.sqrt(math.pi), 1.0])  # fmt: skip
    assert np.signbit(out[4])


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("propagate", [False, True])
def test_clamp(rng, dtype, propagate):
    """NaN x: `lo` with the default PropagateNan.NONE (fmax then fmin), NaN with ALL."""
    x = random_values(rng, dtype)
    nan = rounded(np.array([np.nan]), dtype)[0]
    x[[5, 50]] = nan
    out = np.zeros(N, storage(dtype))
    lo, hi = -2.5, 3.0
    scalar = "float32" if dtype != "float64" else "float64"
    run(clamp_kernel, [("*" + dtype, x), ("*" + dtype, out), (scalar, lo), (scalar, hi)],
        PROPAGATE=propagate, N=N)  # fmt: skip
    x64 = as_float64(x, dtype)
    expected = np.minimum(np.maximum(x64, lo), hi) if propagate else np.clip(x64, lo, hi)
    if not propagate:
        expected = np.where(np.isnan(x64), lo, expected)
    got = bf16_values(out) if dtype == "bfloat16" else out
    np.testing.assert_array_equal(got.astype(np.float64), expected)
