"""`tl.extra.libdevice`'s arithmetic with a directed rounding (`libdevice_directed`): `add`,
`sub`, `mul`, `div`, `rcp`, `sqrt` (float32 and float64) and `fma` (float32) with `_rz`, `_rd`,
`_ru`, exactly as IEEE 754 rounds them, against the exact value (Python's fractions) rounded by
the definition; exact zeros' signs, results past the largest float, subnormals. Run on interp in
CI, on a GPU backend with `TILEC_TEST_BACKEND=nvidia` (checked against the interpreter too)."""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest
from compat_helpers import compile_error
from compat_names_helpers import run
from test_compat_libdevice_bits import directed

import tilec
import tilec.language as tl
from tilec.language.extra import libdevice

N = 512
OPS = ["add", "sub", "mul", "div", "rcp", "sqrt", "fma"]


def directed_kernel_for(name: str, arity: int):
    function = getattr(libdevice, name)

    @tilec.jit
    def directed_kernel(x_ptr, y_ptr, z_ptr, out_ptr, BLOCK: tl.constexpr):
        offs = tl.arange(0, BLOCK)
        x = tl.load(x_ptr + offs)
        if arity == 1:
            r = function(x)
        elif arity == 2:
            r = function(x, tl.load(y_ptr + offs))
        else:
            r = function(x, tl.load(y_ptr + offs), tl.load(z_ptr + offs))
        tl.store(out_ptr + offs, r)

    return directed_kernel


ARITY = {"add": 2, "sub": 2, "mul": 2, "div": 2, "rcp": 1, "sqrt": 1, "fma": 3}
EXACT = {
    "add": lambda x, y, z: x + y,
    "sub": lambda x, y, z: x - y,
    "mul": lambda x, y, z: x * y,
    "div": lambda x, y, z: x / y,
    "rcp": lambda x, y, z: 1 / x,
    "fma": lambda x, y, z: x * y + z,
}


def inputs(op: str, dtype, rng) -> list[np.ndarray]:
    info = np.finfo(dtype)
    span = 30 if op in ("mul", "div", "rcp", "fma") else 300 if dtype is np.float64 else 30
    x, y, z = (rng.standard_normal(N) * 2.0 ** rng.integers(-span, span, N) for _ in range(3))
    if op in ("add", "sub", "fma"):  # near cancellation, and a far smaller addend
        x[:64] = -y[:64] * (1 + rng.integers(-4, 5, 64) * 2.0 ** -rng.integers(10, 60, 64))
        z[64:96] = -(x[64:96] * y[64:96]) * (1 + 2.0 ** -rng.integers(20, 50, 32))
        y[96:128] = x[96:128] * 2.0 ** -rng.integers(20, 80, 32)
    if op == "sub":
        x[:64] = -x[:64]
    if op == "sqrt":
        x = np.abs(x)
    x[128:136] = info.smallest_subnormal * rng.integers(1, 1000, 8)  # subnormal results
    y[128:136] = rng.uniform(0.1, 3, 8)
    x[136:140], y[136:140] = info.max / 2, [4.0, 3.0, -5.0, 0.5]  # past the largest float
    x[140:144], y[140:144] = [0.0, -0.0, 0.0, 3.0], [0.0, -0.0, -0.0, -3.0]  # exact zeros
    z[140:144] = [0.0, -0.0, 0.0, 0.0]
    return [v.astype(dtype) for v in (x, y, z)]


def expected_values(op: str, args: list[np.ndarray], mode: str, dtype) -> np.ndarray:
    out = np.empty(N, dtype)
    for i in range(N):
        x, y, z = (float(a[i]) for a in args)
        values = (x,) if op in ("rcp", "sqrt") else (x, y) if op != "fma" else (x, y, z)
        with np.errstate(all="ignore"):
            if op == "sqrt":
                nearest = np.sqrt(dtype(x))
            elif op == "rcp":
                nearest = dtype(1) / dtype(x)
            elif op == "fma":
                nearest = dtype(np.float64(x) * np.float64(y) + np.float64(z))
            else:
                nearest = {"add": np.add, "sub": np.subtract, "mul": np.multiply,
                           "div": np.divide}[op](dtype(x), dtype(y))  # fmt: skip
        if not all(math.isfinite(v) for v in values) or (op in ("div",) and y == 0) or (
            op == "rcp" and x == 0) or (op == "sqrt" and x <= 0):  # fmt: skip
            out[i] = nearest  # no rounding decides these: inf, NaN, +-0
            continue
        with np.errstate(over="ignore"):
            candidates = [float(v) for v in (nearest, np.nextafter(nearest, dtype(-np.inf)),
                                             np.nextafter(nearest, dtype(np.inf)))]  # fmt: skip
        if math.isinf(candidates[0]):
            largest = float(np.finfo(dtype).max)
            candidates += [math.copysign(largest, candidates[0])]
        if op == "sqrt":
            exact = Fraction(x)
            # the root's position: compare the candidates' squares with x
            below = [c for c in candidates if math.isfinite(c) and Fraction(c) ** 2 <= exact]
            above = [c for c in candidates if not math.isfinite(c) or Fraction(c) ** 2 >= exact]
            out[i] = {"rd": max(below), "ru": min(above), "rz": max(below)}[mode]
            continue
        exact = EXACT[op](*(Fraction(v) for v in (x, y, z)))
        result = directed(exact, candidates, mode)
        if exact == 0 and op in ("add", "sub", "fma"):
            # IEEE: a sum of two operands of one sign keeps it (only zeros can), any other
            # exact zero sum is +0, but -0 rounding down
            first, second = {"add": (x, y), "sub": (x, -y), "fma": (x * y, z)}[op]
            sign = math.copysign(1, first)
            if sign == math.copysign(1, second):
                result = math.copysign(0.0, sign)
            else:
                result = -0.0 if mode == "rd" else 0.0
        elif exact == 0:
            result = nearest  # a product or quotient: the operands' signs
        out[i] = result
    return out


CASES = [(op, dtype, mode) for op in OPS for dtype in (np.float32, np.float64)
         for mode in ("rz", "rd", "ru") if (op, dtype) != ("fma", np.float64)]  # fmt: skip


@pytest.mark.parametrize(("op", "dtype", "mode"), CASES)
def test_directed_rounding_is_exact(op, dtype, mode, rng):
    args = inputs(op, dtype, rng)
    out = np.zeros(N, dtype)
    sig = "*fp64" if dtype is np.float64 else "*fp32"
    signature = {"x_ptr": sig, "y_ptr": sig, "z_ptr": sig, "out_ptr": sig}
    run(directed_kernel_for(f"{op}_{mode}", ARITY[op]), signature, [*args, out], BLOCK=N)
    expected = expected_values(op, args, mode, dtype)
    wrong = np.nonzero(~((out == expected) | (np.isnan(out) & np.isnan(expected))))[0]
    assert not len(wrong), [(float(args[0][i]), float(args[1][i]), float(args[2][i]), out[i],
                             expected[i]) for i in wrong[:5]]  # fmt: skip
    np.testing.assert_array_equal(np.signbit(out), np.signbit(expected))


def test_fma_of_float64_is_refused():
    error = compile_error(
        directed_kernel_for("fma_rz", 3),
        {"x_ptr": "*fp64", "y_ptr": "*fp64", "z_ptr": "*fp64", "out_ptr": "*fp64"}, BLOCK=16,
    )  # fmt: skip
    assert "tilec provides the float32 forms only" in str(error)


@pytest.mark.parametrize(("backend", "target"), [("nvidia", "sm_90a"), ("amd", "gfx942")])
def test_the_gpu_backends_compile_them(backend, target):
    for name, dtype in [("add_rd", "fp64"), ("div_rz", "fp32"), ("div_ru", "fp64"),
                        ("sqrt_rd", "fp64"), ("fma_ru", "fp32")]:  # fmt: skip
        sig = {n: f"*{dtype}" for n in ("x_ptr", "y_ptr", "z_ptr", "out_ptr")}
        kernel = directed_kernel_for(name, ARITY[name[:-3]])
        tilec.compile(kernel, signature=sig, constexprs={"BLOCK": 64}, backend=backend,
                      target=target)  # fmt: skip


def test_rsqrt_rn_is_correctly_rounded(rng):
    """float32 1 / sqrt(x) to nearest: the float32 nearest the exact root (mpmath, 60 digits),
    subnormal and power-of-4 arguments included, and IEEE's special values."""
    mp = pytest.importorskip("mpmath")
    x = (rng.uniform(0, 1, N) * 2.0 ** rng.integers(-149, 127, N)).astype(np.float32)
    x[x == 0] = np.finfo(np.float32).smallest_subnormal
    x[:16] = 4.0 ** np.arange(-8, 8)
    x[16:24] = np.finfo(np.float32).smallest_subnormal * rng.integers(1, 2**20, 8)
    x[24:29] = [0.0, -0.0, np.inf, -1.0, np.nan]
    out = np.zeros(N, np.float32)
    sig = {"x_ptr": "*fp32", "y_ptr": "*fp32", "z_ptr": "*fp32", "out_ptr": "*fp32"}
    run(directed_kernel_for("rsqrt_rn", 1), sig, [x, x, x, out], BLOCK=N)
    np.testing.assert_array_equal(out[24:29], [np.inf, -np.inf, 0.0, np.nan, np.nan])
    with mp.workdps(60):
        for value, result in zip(x[29:], out[29:], strict=True):
            exact = 1 / mp.sqrt(mp.mpf(float(value)))
            nearest = np.float32(float(exact))
            candidates = [nearest, np.nextafter(nearest, np.float32(0)),
                          np.nextafter(nearest, np.float32(np.inf))]  # fmt: skip
            best = min(candidates, key=lambda c: abs(mp.mpf(float(c)) - exact))
            assert result == best, (value, result, best)
