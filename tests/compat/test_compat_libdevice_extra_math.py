"""`tl.extra.libdevice`'s `libdevice_extra_math` functions: `sinpi`, `cospi`, `exp10`, `cbrt`,
`rcbrt`, `rhypot` and the norms within an ulp of the exact float32 result and 4 in float64
(exact values from mpmath), `remainder`, `fmod`, `fdim`, `ilogb`, `logb` exact, with C's special values;
the `fast_` variants are the precise functions. Run on interp in CI, on a GPU backend with
`TILEC_TEST_BACKEND=nvidia` (checked against the interpreter too: compat_names_helpers)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from compat_names_helpers import run
from test_compat_libdevice_elementary import ulps

import tilec
import tilec.language as tl
from tilec.language.extra import libdevice

mp = pytest.importorskip("mpmath")
N = 512


@tilec.jit
def math_kernel(a_ptr, b_ptr, c_ptr, d_ptr, out_ptr, OP: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    a = tl.load(a_ptr + offs)
    b = tl.load(b_ptr + offs)
    c = tl.load(c_ptr + offs)
    d = tl.load(d_ptr + offs)
    if OP == "sinpi":
        r = libdevice.sinpi(a)
    elif OP == "cospi":
        r = libdevice.cospi(a)
    elif OP == "exp10":
        r = libdevice.exp10(a)
    elif OP == "cbrt":
        r = libdevice.cbrt(a)
    elif OP == "rcbrt":
        r = libdevice.rcbrt(a)
    elif OP == "rhypot":
        r = libdevice.rhypot(a, b)
    elif OP == "norm3d":
        r = libdevice.norm3d(a, b, c)
    elif OP == "rnorm3d":
        r = libdevice.rnorm3d(a, b, c)
    elif OP == "norm4d":
        r = libdevice.norm4d(a, b, c, d)
    elif OP == "rnorm4d":
        r = libdevice.rnorm4d(a, b, c, d)
    elif OP == "remainder":
        r = libdevice.remainder(a, b)
    elif OP == "fmod":
        r = libdevice.fmod(a, b)
    elif OP == "fdim":
        r = libdevice.fdim(a, b)
    elif OP == "ilogb":
        r = libdevice.ilogb(a)
    elif OP == "logb":
        r = libdevice.logb(a)
    elif OP == "fast_tanf":
        r = libdevice.fast_tanf(a) - libdevice.tan(a)
    elif OP == "fast_exp10f":
        r = libdevice.fast_exp10f(a) - libdevice.exp10(a)
    elif OP == "fast_log10f":
        r = libdevice.fast_log10f(a) - libdevice.log10(a)
    else:
        r = libdevice.fast_powf(a, b) - libdevice.pow(a, b)
    tl.store(out_ptr + offs, r)


def _norm(*values):
    if any(mp.isinf(v) for v in values):
        return mp.inf
    return mp.sqrt(mp.fsum(v * v for v in values))


def _reciprocal(v):
    return mp.inf if v == 0 else 1 / v


EXACT = {  # name: (arguments, the exact function of mpf arguments)
    "sinpi": (1, mp.sinpi),
    "cospi": (1, mp.cospi),
    "exp10": (1, lambda x: mp.power(10, x)),
    "cbrt": (1, lambda x: mp.sign(x) * mp.cbrt(abs(x))),
    "rcbrt": (1, lambda x: mp.sign(x) / mp.cbrt(abs(x)) if x else mp.inf),
    "rhypot": (2, lambda x, y: _reciprocal(_norm(x, y))),
    "norm3d": (3, _norm),
    "rnorm3d": (3, lambda *v: _reciprocal(_norm(*v))),
    "norm4d": (4, _norm),
    "rnorm4d": (4, lambda *v: _reciprocal(_norm(*v))),
}
SPECIAL = [0.0, -0.0, np.inf, -np.inf, np.nan, 1.0, -1.0, 0.5, -0.5, 1.5, 2.0, -3.0, 2.0**60]


def inputs(op: str, dtype, rng) -> list[np.ndarray]:
    args = []
    for _ in range(4):
        x = rng.standard_normal(N) * 10.0 ** rng.integers(-30, 30, N)
        x[: N // 4] = rng.uniform(-6, 6, N // 4)
        if op == "exp10":
            x = rng.uniform(
                -320 if dtype is np.float64 else -46, 308 if dtype is np.float64 else 38, N
            )
        if op.startswith(("cbrt", "rcbrt")) and dtype is np.float64:
            x[N // 4 : N // 2] = rng.standard_normal(N // 4) * 10.0 ** rng.integers(
                -320, 300, N // 4
            )
        x[-len(SPECIAL) :] = SPECIAL
        args.append(x.astype(dtype))
    return args


def exact_values(op: str, args: list[np.ndarray]) -> np.ndarray:
    count, function = EXACT[op]
    out = np.empty(N)
    with mp.workdps(50):
        for i in range(N):
            values = [float(a[i]) for a in args[:count]]
            if any(math.isinf(v) for v in values) and op in (
                "rhypot",
                "norm3d",
                "rnorm3d",
                "norm4d",
                "rnorm4d",
            ):
                out[i] = 0.0 if op.startswith("r") else math.inf
            elif any(math.isnan(v) for v in values) or (
                math.isinf(values[0]) and op in ("sinpi", "cospi")
            ):
                out[i] = math.nan
            elif math.isinf(values[0]):
                out[i] = {"exp10": math.inf if values[0] > 0 else 0.0, "cbrt": values[0],
                          "rcbrt": math.copysign(0.0, values[0])}[op]  # fmt: skip
            else:
                out[i] = float(function(*[mp.mpf(v) for v in values]))
                if out[i] == 0.0 and op in ("sinpi", "cbrt"):  # mpmath has no -0
                    out[i] = math.copysign(0.0, values[0])
                if op == "rcbrt" and values[0] == 0.0:
                    out[i] = math.copysign(math.inf, values[0])
    return out


def launch(op, args, out_dtype):
    out = np.zeros(N, out_dtype)
    sig = {f"{name}_ptr": "*fp64" if a.dtype == np.float64 else "*fp32"
           for name, a in zip("abcd", args, strict=True)}  # fmt: skip
    sig["out_ptr"] = {np.float64: "*fp64", np.float32: "*fp32", np.int32: "*i32"}[out_dtype]
    run(math_kernel, sig, [*args, out], OP=op, BLOCK=N)
    return out


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("op", list(EXACT))
def test_extra_functions_are_accurate(op, dtype, rng):
    args = inputs(op, dtype, rng)
    out = launch(op, args, dtype)
    exact = exact_values(op, args)
    error = ulps(out, exact, dtype)
    worst = int(np.argmax(error))
    limit = 1.0 if dtype is np.float32 else 4.0
    assert error[worst] <= limit, ([a[worst] for a in args], out[worst], exact[worst])
    zero = out == 0
    np.testing.assert_array_equal(np.signbit(out[zero]), np.signbit(exact[zero]))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_remainder_and_fdim_are_exact(dtype, rng):
    x, y, _, _ = inputs("remainder", dtype, rng)
    y[:40] = x[:40] / rng.integers(1, 9, 40) * 2  # halfway quotients: ties go to even
    y[40:48] = [
        0.0,
        np.inf,
        -np.inf,
        3.0,
        np.finfo(dtype).max,
        np.finfo(dtype).smallest_subnormal,
        1e-30,
        7.0,
    ]
    remainder = launch("remainder", [x, y, x, x], dtype)
    expected = c_remainders("remainder", x, y)
    np.testing.assert_array_equal(remainder, expected.astype(dtype))
    np.testing.assert_array_equal(np.signbit(remainder), np.signbit(expected))
    fdim = launch("fdim", [x, y, x, x], dtype)
    with np.errstate(invalid="ignore", over="ignore"):
        expected = np.where(np.isnan(x) | np.isnan(y), np.nan, np.where(x > y, x - y, 0.0))
    np.testing.assert_array_equal(fdim, expected.astype(dtype))


def c_remainders(op: str, x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """C's `fmod` or `remainder` of each pair, exact (Python's `math`), with C's NaN and
    infinite divisor."""

    def one(a, b):
        if math.isnan(a) or math.isnan(b) or b == 0 or math.isinf(a):
            return math.nan
        return a if math.isinf(b) else getattr(math, op)(a, b)

    return np.array([one(float(a), float(b)) for a, b in zip(x, y, strict=True)])


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("op", ["fmod", "remainder"])
def test_fmod_and_remainder_are_exact_for_any_quotient(op, dtype, rng):
    """Quotients up to the whole exponent range (2**276 in float32, 2**2097 in float64),
    subnormal divisors, exact multiples (zeros with x's sign) and their neighbours, both signs:
    exactly C's values. The float `%` (LLVM's frem) is not: the NVPTX backend expands it as
    x - trunc(x / y) * y (got -8.7e10 for 8.81 on an H200)."""
    info = np.finfo(dtype)
    low, high = (-149, 127) if dtype is np.float32 else (-1074, 1023)

    def spread(count):
        values = rng.uniform(1, 2, count) * 2.0 ** rng.integers(low, high + 1, count)
        return (values * rng.choice([-1.0, 1.0], count)).astype(dtype)

    x, y = spread(N), spread(N)
    y[:64] = (rng.integers(1, 2**20, 64) * info.smallest_subnormal).astype(dtype)
    y[64:128] = rng.uniform(0.5, 8, 64).astype(dtype)  # x / y up to 2**128, 2**1024
    with np.errstate(over="ignore"):
        multiple = (y[128:192] * 2.0 ** rng.integers(0, 40, 64)).astype(dtype)
    x[128:192] = np.where(np.isfinite(multiple), multiple, x[128:192])
    x[192:256] = np.nextafter(x[128:192], np.array(np.inf, dtype))
    special = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 1.0, -3.0, info.max,
                        info.smallest_subnormal, -info.tiny], dtype)  # fmt: skip
    x[-100:], y[-100:] = np.repeat(special, 10), np.tile(special, 10)
    out = launch(op, [x, y, x, x], dtype)
    expected = c_remainders(op, x, y).astype(dtype)
    np.testing.assert_array_equal(out, expected)
    np.testing.assert_array_equal(np.signbit(out), np.signbit(expected))
    assert (np.abs(x[64:128].astype(np.float64) / y[64:128]) > 2.0**100).any()


def test_fmod_and_remainder_use_no_frem():
    """Their NVIDIA code has no `frem` (the NVPTX expansion of the float `%`, inexact for large
    quotients: test_fmod_and_remainder_are_exact_for_any_quotient on a GPU); it assembles."""
    for op, dtype in [("fmod", "fp32"), ("fmod", "fp64"), ("remainder", "fp32")]:
        sig = {n: f"*{dtype}" for n in ("a_ptr", "b_ptr", "c_ptr", "d_ptr", "out_ptr")}
        compiled = tilec.compile(math_kernel, signature=sig, constexprs={"OP": op, "BLOCK": 64},
                                 backend="nvidia", target="sm_90a")  # fmt: skip
        assert "frem" not in compiled.asm["llir"] and "fma.rn.f64" in compiled.asm["ptx"], op


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_ilogb_and_logb(dtype, rng):
    info = np.finfo(dtype)
    x = (rng.standard_normal(N) * 10.0 ** rng.integers(-30, 30, N)).astype(dtype)
    x[:8] = [0.0, -0.0, np.inf, -np.inf, np.nan, info.smallest_subnormal, info.tiny, info.max]
    x[8:40] = (rng.integers(1, 2**20, 32) * info.smallest_subnormal).astype(dtype)  # subnormals
    exponents = [math.frexp(float(v))[1] - 1 for v in x[5:]]
    ilogb = launch("ilogb", [x, x, x, x], np.int32)
    np.testing.assert_array_equal(ilogb[:5], [-(2**31), -(2**31), 2**31 - 1, 2**31 - 1, -(2**31)])
    np.testing.assert_array_equal(ilogb[5:], exponents)
    logb = launch("logb", [x, x, x, x], dtype)
    np.testing.assert_array_equal(logb[:5], [-np.inf, -np.inf, np.inf, np.inf, np.nan])
    np.testing.assert_array_equal(logb[5:], exponents)


@pytest.mark.parametrize("op", ["fast_tanf", "fast_exp10f", "fast_log10f", "fast_powf"])
def test_fast_variants_are_the_precise_functions(op, rng):
    args = [rng.uniform(0.5, 30, N).astype(np.float32) for _ in range(4)]
    args[1] = rng.uniform(-3, 3, N).astype(np.float32)  # finite results
    np.testing.assert_array_equal(launch(op, args, np.float32), 0.0)


@pytest.mark.parametrize(("backend", "target"), [("nvidia", "sm_90a"), ("amd", "gfx942")])
def test_the_gpu_backends_compile_them(backend, target):
    for op, dtype in [("sinpi", "fp32"), ("exp10", "fp64"), ("cbrt", "fp64"), ("remainder", "fp32"),
                      ("ilogb", "fp64"), ("norm4d", "fp32"), ("fmod", "fp64")]:  # fmt: skip
        sig = {n: f"*{dtype}" for n in ("a_ptr", "b_ptr", "c_ptr", "d_ptr")}
        sig["out_ptr"] = "*i32" if op == "ilogb" else f"*{dtype}"
        tilec.compile(math_kernel, signature=sig, constexprs={"OP": op, "BLOCK": 64},
                      backend=backend, target=target)  # fmt: skip
