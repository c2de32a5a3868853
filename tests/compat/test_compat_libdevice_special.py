"""`tl.extra.libdevice`'s special functions written in `tl` (`libdevice_special`): `erfc`,
`erfcx`, `erfinv`, `erfcinv`, `normcdf`, `normcdfinv`, `lgamma`, `tgamma` within an ulp of the
exact float32 result and a few ulps in float64 (exact values from mpmath), `ldexp`, `scalbn` and
`nextafter` exact, with C's special values. Run on interp in CI, on a GPU backend with
`TILEC_TEST_BACKEND=nvidia` (checked against the interpreter too: compat_names_helpers)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from compat_helpers import compile_error
from compat_names_helpers import run
from test_compat_libdevice_elementary import ulps

import tilec
import tilec.language as tl
from tilec.language.extra import libdevice

mp = pytest.importorskip("mpmath")
N = 512


@tilec.jit
def special_kernel(x_ptr, n_ptr, out_ptr, OP: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs)
    if OP == "erfc":
        z = libdevice.erfc(x)
    elif OP == "erfcx":
        z = libdevice.erfcx(x)
    elif OP == "erfinv":
        z = libdevice.erfinv(x)
    elif OP == "erfcinv":
        z = libdevice.erfcinv(x)
    elif OP == "normcdf":
        z = libdevice.normcdf(x)
    elif OP == "normcdfinv":
        z = libdevice.normcdfinv(x)
    elif OP == "lgamma":
        z = libdevice.lgamma(x)
    elif OP == "tgamma":
        z = libdevice.tgamma(x)
    elif OP == "nextafter":
        z = libdevice.nextafter(x, tl.load(n_ptr + offs))
    elif OP == "ldexp":
        z = libdevice.ldexp(x, tl.load(n_ptr + offs))
    else:
        z = libdevice.scalbn(x, tl.load(n_ptr + offs))
    tl.store(out_ptr + offs, z)


def _inverse_erfc(y):
    """erfcinv in mpmath: erfinv(1 - y) while 1 - y keeps y's digits, else a root of log erfc."""
    if y > 1:
        return -_inverse_erfc(2 - y)
    if y > mp.mpf("1e-20"):
        return mp.erfinv(1 - y)
    return mp.findroot(lambda t: mp.log(mp.erfc(t)) - mp.log(y), mp.sqrt(-mp.log(y)))


def _lgamma(x):
    return mp.inf if x <= 0 and x == mp.floor(x) else mp.log(abs(mp.gamma(x)))


EXACT = {
    "erfc": mp.erfc,
    "erfcx": lambda x: mp.exp(x * x) * mp.erfc(x),
    "erfinv": lambda x: mp.erfinv(x) if abs(x) < 1 else mp.sign(x) * mp.inf,
    "erfcinv": lambda x: _inverse_erfc(x) if 0 < x < 2 else (mp.inf if x == 0 else -mp.inf),
    "normcdf": mp.ncdf,
    "normcdfinv": lambda x: -mp.sqrt(2) * _inverse_erfc(2 * x) if 0 < x < 1 else mp.inf * (x - 0.5),
    "lgamma": _lgamma,
    "tgamma": mp.gamma,
}
AT_INFINITY = {  # (f(-inf), f(inf)) where mpmath has no answer
    "erfc": (2.0, 0.0),
    "erfcx": (math.inf, 0.0),
    "normcdf": (0.0, 1.0),
    "lgamma": (math.inf, math.inf),
    "tgamma": (math.nan, math.inf),
}
DOMAIN = {"erfinv": (-1, 1), "erfcinv": (0, 2), "normcdfinv": (0, 1)}


def inputs(op: str, dtype, rng) -> np.ndarray:
    tiny = 1e-300 if dtype is np.float64 else 1e-37
    if op in DOMAIN:
        lo, hi = DOMAIN[op]
        x = rng.uniform(lo, hi, N)
        near = 10.0 ** -rng.uniform(1, -math.log10(tiny), 64)  # the tails, down to `tiny`
        x[:64] = lo + near if op != "erfinv" else 1 - near
        x[64:128] = hi - near if op != "erfinv" else near - 1
        x[128:136] = [lo, hi, (lo + hi) / 2, 0.5, -0.0, 0.0, lo - 0.5, np.nan]
    else:
        x = rng.standard_normal(N) * rng.choice([1e-6, 0.3, 1.0, 3.0, 10.0, 30.0], N)
        x[:80] = rng.uniform(0.5, 2.5, 80)  # lgamma's roots at 1 and 2
        x[80:88] = [1.0, 2.0, 1.0 + 2**-20, 2.0 - 2**-20, 0.5, 1.5, 2.5, 8.0]
        x[88:100] = [0.0, -0.0, np.inf, -np.inf, np.nan, -1.0, -2.0, -0.5, 1e-30, 27.0, -27.0, 35.0]
        if op in ("normcdf", "erfc", "erfcx"):
            x[100:140] = -rng.uniform(5, 38, 40)  # the far tail, below float32's range
    return x.astype(dtype)


def exact_values(op: str, x: np.ndarray) -> np.ndarray:
    out = np.empty(len(x))
    with mp.workdps(60):
        for i, value in enumerate(x.astype(np.float64)):
            if np.isnan(value) or (op in DOMAIN and not DOMAIN[op][0] <= value <= DOMAIN[op][1]):
                out[i] = np.nan
            elif np.isinf(value) and op in AT_INFINITY:
                out[i] = AT_INFINITY[op][int(value > 0)]
            elif op == "tgamma" and value <= 0 and value == math.floor(value):
                out[i] = math.copysign(math.inf, value) if value == 0 else math.nan
            else:  # mpmath has no -0: erfinv is odd, erfinv(-0) is -0
                out[i] = float(EXACT[op](mp.mpf(value)))
                if out[i] == 0 and op == "erfinv":
                    out[i] = math.copysign(0.0, value)
    return out


CASES = [(op, dtype) for op in EXACT for dtype in (np.float32, np.float64)]


@pytest.mark.parametrize(("op", "dtype"), [c for c in CASES if c != ("tgamma", np.float64)])
def test_special_functions_are_accurate(op, dtype, rng):
    x = inputs(op, dtype, rng)
    out = np.zeros(N, dtype)
    sig = "*fp64" if dtype is np.float64 else "*fp32"
    run(special_kernel, {"x_ptr": sig, "n_ptr": "*i32", "out_ptr": sig},
        [x, np.zeros(N, np.int32), out], OP=op, BLOCK=N)  # fmt: skip
    exact = exact_values(op, x)
    error = ulps(out, exact, dtype)
    if op == "lgamma":
        # below 0, lgamma is log(pi / |sin(pi x)|) - lgamma(1 - x): near its roots there the
        # difference of the two loses relative accuracy (as libdevice's does); the bound is
        # then a few ulps of the larger term
        negative = (x < 0) & np.isfinite(exact)
        larger = np.array([float(_lgamma(mp.mpf(1 - float(v)))) for v in x[negative]])
        spacing = np.spacing(np.maximum(np.abs(exact[negative]), larger).astype(dtype))
        error[negative] = np.abs(out[negative] - exact[negative]) / spacing
    worst = int(np.argmax(error))
    limit = 1.0 if dtype is np.float32 else 4.0
    assert error[worst] <= limit, (x[worst], out[worst], exact[worst], error[worst])
    zero = out == 0
    np.testing.assert_array_equal(np.signbit(out[zero]), np.signbit(exact[zero]))


@pytest.mark.parametrize("op", ["ldexp", "scalbn"])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_ldexp_is_exact(op, dtype, rng):
    info = np.finfo(dtype)
    x = (rng.standard_normal(N) * 10.0 ** rng.integers(-30, 30, N)).astype(dtype)
    x[:8] = [0.0, -0.0, np.inf, -np.inf, np.nan, info.smallest_subnormal, info.max, -info.tiny]
    n = rng.integers(-2 * info.maxexp - 60, 2 * info.maxexp + 60, N).astype(np.int32)
    n[8:16] = [2**31 - 1, -(2**31), 0, 1, -1, 1, -1074, 2098]
    x[13:16] = [info.max, info.smallest_subnormal, info.smallest_subnormal]
    out = np.zeros(N, dtype)
    sig = "*fp64" if dtype is np.float64 else "*fp32"
    run(special_kernel, {"x_ptr": sig, "n_ptr": "*i32", "out_ptr": sig}, [x, n, out],
        OP=op, BLOCK=N)  # fmt: skip
    with np.errstate(over="ignore", under="ignore"):
        expected = np.ldexp(x, n)
    np.testing.assert_array_equal(out, expected)
    np.testing.assert_array_equal(np.signbit(out), np.signbit(expected))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_nextafter_steps_one_float(dtype, rng):
    info = np.finfo(dtype)
    x = (rng.standard_normal(N) * 10.0 ** rng.integers(-30, 30, N)).astype(dtype)
    y = (rng.standard_normal(N) * 10.0 ** rng.integers(-30, 30, N)).astype(dtype)
    special = [0.0, -0.0, np.inf, -np.inf, np.nan, info.smallest_subnormal, info.max, 1.0]
    x[:64] = np.repeat(special, 8)
    y[:64] = np.tile(special, 8)
    y[64:72] = x[64:72]  # equal
    out = np.zeros(N, dtype)
    sig = "*fp64" if dtype is np.float64 else "*fp32"
    run(special_kernel, {"x_ptr": sig, "n_ptr": sig, "out_ptr": sig}, [x, y, out],
        OP="nextafter", BLOCK=N)  # fmt: skip
    with np.errstate(over="ignore"):
        expected = np.nextafter(x, y)
    np.testing.assert_array_equal(out, expected)
    np.testing.assert_array_equal(np.signbit(out), np.signbit(expected))


def test_tgamma_of_float64_is_refused():
    error = compile_error(
        special_kernel, {"x_ptr": "*fp64", "n_ptr": "*i32", "out_ptr": "*fp64"},
        OP="tgamma", BLOCK=16,
    )  # fmt: skip
    assert "libdevice.tgamma: tilec provides tgammaf (float32) only" in str(error)


@pytest.mark.parametrize("op", ["erfinv", "lgamma", "ldexp"])
def test_half_precision_is_refused_naming_the_function(op):
    error = compile_error(
        special_kernel, {"x_ptr": "*fp16", "n_ptr": "*i32", "out_ptr": "*fp16"}, OP=op, BLOCK=16
    )
    assert f"libdevice.{op} takes float32 or float64 (libdevice's {op}f and {op})" in str(error)


def test_nextafter_of_mixed_types_is_refused():
    error = compile_error(
        special_kernel, {"x_ptr": "*fp32", "n_ptr": "*fp64", "out_ptr": "*fp32"},
        OP="nextafter", BLOCK=16,
    )  # fmt: skip
    assert "libdevice.nextafter takes two float32 or two float64 values" in str(error)


@pytest.mark.parametrize(("backend", "target"), [("nvidia", "sm_90a"), ("amd", "gfx942")])
@pytest.mark.parametrize(("op", "dtype"), [("lgamma", "fp64"), ("erfc", "fp32"), ("ldexp", "fp64"),
                                           ("nextafter", "fp32")])  # fmt: skip
def test_the_gpu_backends_compile_them(backend, target, op, dtype):
    """Everything these functions are built from lowers for both vendors (and assembles: ptxas,
    ld.lld); the GPU machine runs them, checked against interp."""
    sig = {"x_ptr": f"*{dtype}", "n_ptr": f"*{dtype}" if op == "nextafter" else "*i32"}
    sig["out_ptr"] = f"*{dtype}"
    compiled = tilec.compile(special_kernel, signature=sig, constexprs={"OP": op, "BLOCK": 128},
                             backend=backend, target=target)  # fmt: skip
    assert compiled.asm["cubin" if backend == "nvidia" else "hsaco"]
