"""`tl.extra.libdevice`'s Bessel functions (`libdevice_bessel`): `j0`, `j1`, `y0`, `y1` within
an ulp of the exact float32 result and 8 ulps in float64 of the larger of the result and its
envelope `sqrt(2 / (pi x))` times the type's epsilon (near their zeros the bound is absolute, as
libdevice's), `cyl_bessel_i0` and `cyl_bessel_i1` relative; exact values from mpmath, C's
special values. Run on interp in CI, on a GPU backend with `TILEC_TEST_BACKEND=nvidia`."""

from __future__ import annotations

import math

import numpy as np
import pytest
from compat_names_helpers import run

import tilec
import tilec.language as tl
from tilec.language.extra import libdevice

mp = pytest.importorskip("mpmath")
N = 512


@tilec.jit
def bessel_kernel(x_ptr, out_ptr, OP: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs)
    if OP == "j0":
        r = libdevice.j0(x)
    elif OP == "j1":
        r = libdevice.j1(x)
    elif OP == "y0":
        r = libdevice.y0(x)
    elif OP == "y1":
        r = libdevice.y1(x)
    elif OP == "cyl_bessel_i0":
        r = libdevice.cyl_bessel_i0(x)
    else:
        r = libdevice.cyl_bessel_i1(x)
    tl.store(out_ptr + offs, r)


EXACT = {
    "j0": lambda x: mp.besselj(0, x),
    "j1": lambda x: mp.besselj(1, x),
    "y0": lambda x: mp.bessely(0, x),
    "y1": lambda x: mp.bessely(1, x),
    "cyl_bessel_i0": lambda x: mp.besseli(0, x),
    "cyl_bessel_i1": lambda x: mp.besseli(1, x),
}
SPECIAL = {  # x: f(x) for x in (0, -0, inf, -inf, nan, -1)
    "j0": [1.0, 1.0, 0.0, 0.0, math.nan, float(mp.besselj(0, -1))],
    "j1": [0.0, -0.0, 0.0, -0.0, math.nan, float(mp.besselj(1, -1))],
    "y0": [-math.inf, -math.inf, 0.0, math.nan, math.nan, math.nan],
    "y1": [-math.inf, -math.inf, 0.0, math.nan, math.nan, math.nan],
    "cyl_bessel_i0": [1.0, 1.0, math.inf, math.inf, math.nan, float(mp.besseli(0, -1))],
    "cyl_bessel_i1": [0.0, -0.0, math.inf, -math.inf, math.nan, float(mp.besseli(1, -1))],
}
SPECIAL_X = [0.0, -0.0, math.inf, -math.inf, math.nan, -1.0]


def inputs(op: str, dtype, rng) -> np.ndarray:
    if op.startswith("cyl"):
        limit = 700.0 if dtype is np.float64 else 88.0
        x = rng.uniform(-limit, limit, N)
        x[: N // 4] = rng.uniform(-10, 10, N // 4)
    else:
        x = rng.uniform(0, 1, N) * 10.0 ** rng.uniform(-3, 3, N)
        x[: N // 4] = rng.uniform(0, 16, N // 4)  # both sides of 4 and 8
        if op.startswith("j"):
            x[N // 2 :] *= -1
    x[-len(SPECIAL_X) :] = SPECIAL_X
    return x.astype(dtype)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("op", list(EXACT))
def test_bessel_functions_are_accurate(op, dtype, rng):
    x = inputs(op, dtype, rng)
    out = np.zeros(N, dtype)
    sig = "*fp64" if dtype is np.float64 else "*fp32"
    run(bessel_kernel, {"x_ptr": sig, "out_ptr": sig}, [x, out], OP=op, BLOCK=N)
    count = N - len(SPECIAL_X)
    with mp.workdps(40):
        exact = np.array([float(EXACT[op](mp.mpf(float(v)))) for v in x[:count]])
    wide = np.abs(x[:count].astype(np.float64))
    envelope = np.abs(exact)
    if not op.startswith("cyl"):
        envelope = np.maximum(envelope, np.sqrt(2 / (np.pi * np.maximum(wide, 1.0))))
    with np.errstate(over="ignore"):
        ulp = np.spacing(np.abs(exact).astype(dtype)).astype(np.float64)
    scale = np.maximum(ulp, np.finfo(dtype).eps * envelope)
    error = np.abs(out[:count].astype(np.float64) - exact) / scale
    error[out[:count] == exact.astype(dtype)] = 0.0
    worst = int(np.argmax(error))
    limit = 1.0 if dtype is np.float32 else 8.0
    assert error[worst] <= limit, (x[worst], out[worst], exact[worst], error[worst])
    special = out[count:]
    expected = np.array(SPECIAL[op], dtype)
    np.testing.assert_allclose(special, expected, rtol=1e-6)
    np.testing.assert_array_equal(np.signbit(special[:2]), np.signbit(expected[:2]))


@pytest.mark.parametrize(("backend", "target"), [("nvidia", "sm_90a"), ("amd", "gfx942")])
def test_the_gpu_backends_compile_them(backend, target):
    for op, dtype in [("j0", "fp64"), ("y1", "fp32"), ("cyl_bessel_i1", "fp64")]:
        tilec.compile(bessel_kernel, signature={"x_ptr": f"*{dtype}", "out_ptr": f"*{dtype}"},
                      constexprs={"OP": op, "BLOCK": 64}, backend=backend, target=target)  # fmt: skip
