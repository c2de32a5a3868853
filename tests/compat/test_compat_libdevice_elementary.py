"""`tl.extra.libdevice`'s elementary functions written in `tl` (`libdevice_elementary`): within
an ulp of the exact float32 result (they compute in float64) and a few ulps in float64, with C's
special values (signed zeros, infinities, NaN). Run on interp in CI, on a GPU backend with
`TILEC_TEST_BACKEND=nvidia` (checked against the interpreter too: compat_names_helpers)."""

from __future__ import annotations

import numpy as np
import pytest
from compat_helpers import compile_error
from compat_names_helpers import run

import tilec
import tilec.language as tl
from tilec.language.extra import libdevice

N = 512


@tilec.jit
def elementary_kernel(x_ptr, y_ptr, out_ptr, OP: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs)
    y = tl.load(y_ptr + offs)
    if OP == "log1p":
        z = libdevice.log1p(x)
    elif OP == "expm1":
        z = libdevice.expm1(x)
    elif OP == "log10":
        z = libdevice.log10(x)
    elif OP == "tan":
        z = libdevice.tan(x)
    elif OP == "sinh":
        z = libdevice.sinh(x)
    elif OP == "cosh":
        z = libdevice.cosh(x)
    elif OP == "asinh":
        z = libdevice.asinh(x)
    elif OP == "acosh":
        z = libdevice.acosh(x)
    elif OP == "atanh":
        z = libdevice.atanh(x)
    elif OP == "atan":
        z = libdevice.atan(x)
    elif OP == "atan2":
        z = libdevice.atan2(x, y)
    elif OP == "hypot":
        z = libdevice.hypot(x, y)
    elif OP == "pow":
        z = libdevice.pow(x, y)
    elif OP == "fmod":
        z = libdevice.fmod(x, y)
    elif OP == "llrint":
        z = libdevice.llrint(x).to(x.dtype)
    else:
        z = libdevice.fast_tanhf(x)
    tl.store(out_ptr + offs, z)


REFERENCE = {
    "log1p": lambda x, y: np.log1p(x),
    "expm1": lambda x, y: np.expm1(x),
    "log10": lambda x, y: np.log10(x),
    "tan": lambda x, y: np.tan(x),
    "sinh": lambda x, y: np.sinh(x),
    "cosh": lambda x, y: np.cosh(x),
    "asinh": lambda x, y: np.arcsinh(x),
    "acosh": lambda x, y: np.arccosh(x),
    "atanh": lambda x, y: np.arctanh(x),
    "atan": lambda x, y: np.arctan(x),
    "atan2": np.arctan2,
    "hypot": np.hypot,
    "pow": np.power,
    "fmod": np.fmod,
    "llrint": lambda x, y: np.rint(x),
    "fast_tanhf": lambda x, y: np.tanh(x),
}
SPECIAL = [0.0, -0.0, np.inf, -np.inf, np.nan, 1.0, -1.0, 0.5, 710.0, -710.0, 89.0, -3.0]


def inputs(op: str, dtype, rng) -> tuple[np.ndarray, np.ndarray]:
    scale = rng.choice([1e-8, 1e-3, 0.5, 3.0, 30.0, 1e4], N)
    x = (rng.standard_normal(N) * scale).astype(dtype)
    y = (rng.standard_normal(N) * rng.choice([1e-3, 0.5, 3.0, 30.0], N)).astype(dtype)
    if op == "acosh":
        x = np.abs(x) + 1
    if op == "atanh":
        x = np.clip(x, -1, 1)
    if op == "pow":
        x, y = np.abs(x), np.clip(y, -10, 10)
        y[:40], x[:20] = np.round(y[:40]), -x[:20]  # negative bases, integer exponents
    if op != "llrint":  # out of int64's range, llrint is undefined
        x[-len(SPECIAL) :] = SPECIAL
        y[-len(SPECIAL) :] = SPECIAL[::-1]
    return x, y


def ulps(result: np.ndarray, exact: np.ndarray, dtype) -> np.ndarray:
    """|result - exact| in ulps of the exact value rounded to `dtype` (0 where both are NaN or
    they are equal, infinities included)."""
    with np.errstate(over="ignore", invalid="ignore"):
        rounded = exact.astype(dtype)
        same = (np.isnan(result) & np.isnan(rounded)) | (result == rounded)
        spacing = np.spacing(np.abs(rounded)).astype(np.float64)
        error = np.abs(result.astype(np.float64) - exact) / spacing
    return np.where(same, 0.0, error)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("op", list(REFERENCE))
def test_elementary_functions_are_accurate(op, dtype, rng):
    if op == "pow" and dtype is np.float64:
        pytest.skip("libdevice.pow: float32 only (test_pow_of_float64_is_refused)")
    x, y = inputs(op, dtype, rng)
    out = np.zeros(N, dtype)
    sig = "*fp64" if dtype is np.float64 else "*fp32"
    signature = {"x_ptr": sig, "y_ptr": sig, "out_ptr": sig}
    run(elementary_kernel, signature, [x, y, out], OP=op, BLOCK=N)
    with np.errstate(all="ignore"):  # the exact value: float64 NumPy (glibc, within an ulp)
        exact = np.asarray(REFERENCE[op](x.astype(np.float64), y.astype(np.float64)))
    error = ulps(out, exact, dtype)
    worst = int(np.argmax(error))
    limit = 1.0 if dtype is np.float32 else 4.0
    if op == "fast_tanhf":  # tl.tanh: on a GPU the hardware's approximation, as libdevice's
        limit = 2.0**13  # __nv_fast_tanhf (relative error below 2**-10)
    assert error[worst] <= limit, (x[worst], y[worst], out[worst], exact[worst], error[worst])
    if op != "llrint":  # an int64 result has no signed zero
        zero = out == 0
        np.testing.assert_array_equal(np.signbit(out[zero]), np.signbit(exact[zero]))


def test_pow_of_float64_is_refused():
    error = compile_error(
        elementary_kernel, {"x_ptr": "*fp64", "y_ptr": "*fp64", "out_ptr": "*fp64"},
        OP="pow", BLOCK=16,
    )  # fmt: skip
    assert "libdevice.pow: tilec provides powf (float32) only" in str(error)


def test_half_precision_is_refused_naming_the_function():
    error = compile_error(
        elementary_kernel, {"x_ptr": "*fp16", "y_ptr": "*fp16", "out_ptr": "*fp16"},
        OP="log1p", BLOCK=16,
    )  # fmt: skip
    assert "libdevice.log1p takes float32 or float64 (libdevice's log1pf and log1p)" in str(error)
