"""Generic LLVM IR expansions of the `math.*` functions a target has no instruction for.

Everything here is built from basic arithmetic, `llvm.fma`, `llvm.rint`, `llvm.fabs`,
`llvm.copysign` and bit manipulation, which every GPU backend selects. f64 functions aim at about
one ulp (the tests measure it against the host's libm):

- `exp`, `exp2`: `x = k ln2 + r` (Cody-Waite with fma, `|r| <= ln2/2`), a degree-13 Taylor
  polynomial of `e^r`, scaling by `2^k` in two steps (so subnormal and overflowing results round
  once);
- `log`, `log2`: `x = 2^e m` with `m` in `[sqrt(1/2), sqrt(2))`, `log(m) = 2 atanh(f / (2 + f))`
  in fdlibm's arrangement (exact `1/(2i+1)` coefficients, degree 22 in `s`);
- `sin`, `cos`: reduction by `pi/2` in three parts (accurate for `|x|` up to about `2^30`; larger
  arguments lose precision: there is no Payne-Hanek reduction), Taylor kernels on `[-pi/4, pi/4]`;
- `tanh`: the Taylor series (from Bernoulli numbers) below 0.55, `1 - 2/(e^2|x| + 1)` above;
- `erf`: the Taylor series below 1; above, `1 - e^-x^2 erfcx(x)` with `erfcx(x) (1 + 2x)` a
  Chebyshev series in `t = (x - 2)/(x + 2)` (Shepherd and Laframboise's variable), fitted to
  Python's `math.erfc`, and `e^-x^2` from the exact split `x^2 = hi + lo`.

f32 `erf` and `tanh` have their own shorter versions built on the target's f32 `exp`; the other f32
functions are computed in f64 and rounded when the target has no f32 instruction for them.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from fractions import Fraction
from functools import cache

from llvmlite import ir

from tilec.lowering.context import call_intrinsic

F32, F64, I64 = ir.FloatType(), ir.DoubleType(), ir.IntType(64)

_PI = Fraction(
    "3.14159265358979323846264338327950288419716939937510582097494459230781640628620899862803"
)
_LN2 = Fraction(
    "0.69314718055994530941723212145817656807550013436025525412068000949339362196969471560586"
)


def _split(value: Fraction, parts: int, clear_bits: int) -> list[float]:
    """`value` as a sum of doubles, each but the last with its lowest `clear_bits` bits zero."""
    out = []
    for _ in range(parts - 1):
        approx = float(value)
        mantissa, exponent = math.frexp(approx)
        scale = 2 ** (53 - clear_bits)
        head = math.ldexp(math.floor(mantissa * scale) / scale, exponent)
        out.append(head)
        value -= Fraction(head)
    out.append(float(value))
    return out


LN2_HI, LN2_LO = _split(_LN2, 2, 11)
PIO2 = _split(_PI / 2, 3, 20)
LOG2E = 1 / math.log(2)
SQRT2 = math.sqrt(2)

EXP_TAYLOR = [1 / math.factorial(n) for n in range(13, -1, -1)]
"""e^r, highest degree first."""
LOG_ATANH = [2 / (2 * i + 1) for i in range(11, 0, -1)]
"""R(z) / z for z = s^2, highest first (fdlibm's Lg1..Lg7 before Remez)."""
SIN_TAYLOR = [(-1) ** n / math.factorial(2 * n + 1) for n in range(9, 0, -1)]
COS_TAYLOR = [(-1) ** n / math.factorial(2 * n) for n in range(10, 0, -1)]
ERF_TAYLOR = [
    2 / math.sqrt(math.pi) * (-1) ** n / (math.factorial(n) * (2 * n + 1))
    for n in range(18, -1, -1)
]
ERF_TAYLOR_F32 = ERF_TAYLOR[-11:]

ERFCX_T_RANGE = (-1 / 3, 0.5)
"""`t = (x - 2) / (x + 2)` over x in [1, 6]."""
ERFCX_CHEBYSHEV = (
    1.2565099534438384, -0.040942883082745254, -0.011883561044153028, 0.002617944059419354,
    -0.00020473138585989594, -2.7385860247316857e-06, 1.4050309168479427e-06,
    4.327022376412665e-09, -1.1203001528549146e-08, -2.543612703164344e-10,
    9.612752475625094e-11, 6.589253305316142e-12, -6.585358754012699e-13,
    -1.1228042856333937e-13, -2.6910580310104704e-16, 1.304447121268301e-15,
    1.1159410767004376e-16,
)  # fmt: skip
"""`(1 + 2x) erfcx(x)` on x in [1, 6] as a Chebyshev series in `t` mapped onto [-1, 1]
(least squares at 4000 Chebyshev nodes against `math.erfc(x) * exp(x^2)`; max error 7e-16)."""
ERFCX_T_RANGE_F32 = (-1 / 3, 1 / 3)
"""x in [1, 4]."""
ERFCX_CHEBYSHEV_F32 = (
    1.2675071313300748, -0.026384652225190826, -0.009553089352229548, 0.001508844962162848,
    -8.14771139111454e-05, -2.005893009662905e-06, 3.603424288902378e-07,
)  # fmt: skip


@cache
def tanh_taylor(terms: int) -> list[float]:
    """tanh(x) = x + x z P(z) for z = x^2: P's coefficients, highest first (exact Bernoulli)."""
    bernoulli = _bernoulli(2 * terms + 2)
    coeffs = []
    for n in range(2, terms + 2):
        b2n = bernoulli[2 * n]
        coeffs.append(float(Fraction(4**n * (4**n - 1)) * b2n / math.factorial(2 * n)))
    return list(reversed(coeffs))


def _bernoulli(n: int) -> list[Fraction]:
    """B_0 .. B_n (Akiyama-Tanigawa), with B_1 = +1/2 (unused here)."""
    out, a = [], [Fraction(0)] * (n + 1)
    for m in range(n + 1):
        a[m] = Fraction(1, m + 1)
        for j in range(m, 0, -1):
            a[j - 1] = j * (a[j - 1] - a[j])
        out.append(a[0])
    return out


# Building blocks --------------------------------------------------------------------------------


class Emit:
    """Small helpers over one builder and one float type."""

    def __init__(self, builder: ir.IRBuilder, ty: ir.Type):
        self.b, self.t = builder, ty
        self.bits = ir.IntType(64 if ty == F64 else 32)

    def c(self, value: float) -> ir.Constant:
        return ir.Constant(self.t, value)

    def call(self, name: str, *args: ir.Value) -> ir.Value:
        suffix = "f64" if self.t == F64 else "f32"
        return call_intrinsic(self.b, f"llvm.{name}.{suffix}", self.t, args)

    def fma(self, a: ir.Value, b: ir.Value, c: ir.Value) -> ir.Value:
        return self.call("fma", a, b, c)

    def horner(self, x: ir.Value, coeffs: Sequence[float]) -> ir.Value:
        acc: ir.Value = self.c(coeffs[0])
        for coeff in coeffs[1:]:
            acc = self.fma(acc, x, self.c(coeff))
        return acc

    def chebyshev(self, u: ir.Value, coeffs: Sequence[float]) -> ir.Value:
        """Clenshaw's sum of `coeffs[k] T_k(u)`."""
        two_u = self.b.fmul(u, self.c(2.0))
        b1: ir.Value = self.c(0.0)
        b2: ir.Value = self.c(0.0)
        for coeff in reversed(coeffs[1:]):
            b1, b2 = self.b.fsub(self.fma(two_u, b1, self.c(coeff)), b2), b1
        return self.b.fsub(self.fma(u, b1, self.c(coeffs[0])), b2)

    def lt(self, a: ir.Value, b: float) -> ir.Value:
        return self.b.fcmp_ordered("<", a, self.c(b))

    def select(self, cond: ir.Value, a: ir.Value, b: ir.Value) -> ir.Value:
        return self.b.select(cond, a, b)

    def is_nan(self, x: ir.Value) -> ir.Value:
        return self.b.fcmp_unordered("uno", x, x)

    def clamp(self, x: ir.Value, lo: float, hi: float) -> ir.Value:
        """`x` within [lo, hi]; NaN becomes `lo` (callers restore NaN at the end)."""
        x = self.select(self.b.fcmp_ordered(">", x, self.c(lo)), x, self.c(lo))
        return self.select(self.b.fcmp_ordered("<", x, self.c(hi)), x, self.c(hi))

    def pow2(self, k: ir.Value) -> ir.Value:
        """2^k for an i64 `k` in [-1022, 1023] (f64)."""
        biased = self.b.add(k, I64(1023))
        return self.b.bitcast(self.b.shl(biased, I64(52)), F64)


# f64 --------------------------------------------------------------------------------------------


def _scale(e: Emit, p: ir.Value, k: ir.Value) -> ir.Value:
    """p * 2^k for an f64 integer `k` in about [-1100, 1100], rounding once."""
    b = e.b
    ki = b.fptosi(k, I64)
    k1 = b.ashr(ki, I64(1))
    k2 = b.sub(ki, k1)
    return b.fmul(b.fmul(p, e.pow2(k1)), e.pow2(k2))


def exp_f64(b: ir.IRBuilder, x: ir.Value) -> ir.Value:
    e = Emit(b, F64)
    xc = e.clamp(x, -750.0, 710.0)
    k = e.call("rint", b.fmul(xc, e.c(LOG2E)))
    neg_k = b.fneg(k)
    r = e.fma(neg_k, e.c(LN2_HI), xc)
    r = e.fma(neg_k, e.c(LN2_LO), r)
    return e.select(e.is_nan(x), x, _scale(e, e.horner(r, EXP_TAYLOR), k))


def exp2_f64(b: ir.IRBuilder, x: ir.Value) -> ir.Value:
    e = Emit(b, F64)
    xc = e.clamp(x, -1100.0, 1100.0)
    k = e.call("rint", xc)
    f = b.fsub(xc, k)
    r = e.fma(f, e.c(LN2_HI), b.fmul(f, e.c(LN2_LO)))
    return e.select(e.is_nan(x), x, _scale(e, e.horner(r, EXP_TAYLOR), k))


def _log_parts(e: Emit, x: ir.Value) -> tuple[ir.Value, ir.Value, ir.Value, ir.Value]:
    """(dk, f, hfsq, s*(hfsq+R)) with log(x) = dk ln2 + f - hfsq + s*(hfsq+R) (fdlibm)."""
    b = e.b
    subnormal = e.lt(x, 2.0**-1022)
    xs = e.select(subnormal, b.fmul(x, e.c(2.0**54)), x)
    bits = b.bitcast(xs, I64)
    exponent = b.sub(b.lshr(bits, I64(52)), I64(1023))
    exponent = b.sub(exponent, b.select(subnormal, I64(54), I64(0)))
    mantissa = b.or_(b.and_(bits, I64((1 << 52) - 1)), I64(1023 << 52))
    m = b.bitcast(mantissa, F64)
    big = b.fcmp_ordered(">", m, e.c(SQRT2))
    m = e.select(big, b.fmul(m, e.c(0.5)), m)
    exponent = b.add(exponent, b.zext(big, I64))
    f = b.fsub(m, e.c(1.0))
    s = b.fdiv(f, b.fadd(f, e.c(2.0)))
    z = b.fmul(s, s)
    r = b.fmul(z, e.horner(z, LOG_ATANH))
    hfsq = b.fmul(b.fmul(f, f), e.c(0.5))
    return b.sitofp(exponent, F64), f, hfsq, b.fmul(s, b.fadd(hfsq, r))


def _log_specials(e: Emit, x: ir.Value, value: ir.Value) -> ir.Value:
    b = e.b
    value = e.select(b.fcmp_ordered("==", x, e.c(math.inf)), x, value)
    value = e.select(b.fcmp_ordered("==", x, e.c(0.0)), e.c(-math.inf), value)
    invalid = b.fcmp_unordered("<", x, e.c(0.0))  # negative or NaN
    return e.select(invalid, e.c(math.nan), value)


def log_f64(b: ir.IRBuilder, x: ir.Value) -> ir.Value:
    e = Emit(b, F64)
    dk, f, hfsq, tail = _log_parts(e, x)
    low = b.fsub(b.fsub(hfsq, b.fadd(tail, b.fmul(dk, e.c(LN2_LO)))), f)
    return _log_specials(e, x, b.fsub(b.fmul(dk, e.c(LN2_HI)), low))


def log2_f64(b: ir.IRBuilder, x: ir.Value) -> ir.Value:
    e = Emit(b, F64)
    dk, f, hfsq, tail = _log_parts(e, x)
    log_m = b.fsub(f, b.fsub(hfsq, tail))
    return _log_specials(e, x, e.fma(log_m, e.c(LOG2E), dk))


def _sin_cos_f64(b: ir.IRBuilder, x: ir.Value, want_cos: bool) -> ir.Value:
    e = Emit(b, F64)
    finite = b.fcmp_ordered("<", e.call("fabs", x), e.c(math.inf))
    xf = e.select(finite, x, e.c(0.0))
    k = e.call("rint", b.fmul(xf, e.c(2 / math.pi)))
    neg_k = b.fneg(k)
    r = xf
    for part in PIO2:
        r = e.fma(neg_k, e.c(part), r)
    z = b.fmul(r, r)
    sin_r = e.fma(b.fmul(r, z), e.horner(z, SIN_TAYLOR), r)
    cos_r = e.fma(z, e.horner(z, COS_TAYLOR), e.c(1.0))
    quarter = b.fmul(k, e.c(0.25))
    q = b.fptoui(b.fsub(k, b.fmul(e.call("floor", quarter), e.c(4.0))), I64)
    if want_cos:
        q = b.add(q, I64(1))
    odd = b.trunc(b.and_(q, I64(1)), ir.IntType(1))
    negative = b.trunc(b.lshr(b.and_(q, I64(2)), I64(1)), ir.IntType(1))
    value = e.select(odd, cos_r, sin_r)
    value = e.select(negative, b.fneg(value), value)
    if not want_cos:  # sin(-0) is -0: the reduction's x - 0 * pi/2 made it +0
        value = e.select(b.fcmp_ordered("==", x, e.c(0.0)), x, value)
    return e.select(finite, value, e.c(math.nan))


def sin_f64(b: ir.IRBuilder, x: ir.Value) -> ir.Value:
    return _sin_cos_f64(b, x, want_cos=False)


def cos_f64(b: ir.IRBuilder, x: ir.Value) -> ir.Value:
    return _sin_cos_f64(b, x, want_cos=True)


def tanh_f64(b: ir.IRBuilder, x: ir.Value) -> ir.Value:
    e = Emit(b, F64)
    a = e.call("fabs", x)
    z = b.fmul(x, x)
    small = e.fma(b.fmul(x, z), e.horner(z, tanh_taylor(19)), x)
    wide = exp_f64(b, b.fmul(e.clamp(a, 0.0, 40.0), e.c(2.0)))
    big = b.fsub(e.c(1.0), b.fdiv(e.c(2.0), b.fadd(wide, e.c(1.0))))
    value = e.select(e.lt(a, 0.55), small, e.call("copysign", big, x))
    # x itself where it is 0 (tanh(-0) is -0: x^3 times the series' negative first term is +0)
    # or NaN
    keep = b.or_(e.is_nan(x), b.fcmp_ordered("==", x, e.c(0.0)))
    return e.select(keep, x, value)


def _erfc_tail(e: Emit, a: ir.Value, exp: Callable[[ir.Value], ir.Value], t_range, coeffs):
    """e^-a^2 * erfcx(a) for a in the fitted range."""
    b = e.b
    t = b.fdiv(b.fsub(a, e.c(2.0)), b.fadd(a, e.c(2.0)))
    t_lo, t_hi = t_range
    u = e.fma(t, e.c(2 / (t_hi - t_lo)), e.c(-(t_hi + t_lo) / (t_hi - t_lo)))
    g = b.fdiv(e.chebyshev(u, coeffs), e.fma(a, e.c(2.0), e.c(1.0)))
    hi = b.fmul(a, a)
    lo = e.fma(a, a, b.fneg(hi))
    decay = b.fmul(exp(b.fneg(hi)), b.fsub(e.c(1.0), lo))
    return b.fmul(decay, g)


def erf_f64(b: ir.IRBuilder, x: ir.Value) -> ir.Value:
    e = Emit(b, F64)
    a = e.call("fabs", x)
    small = b.fmul(x, e.horner(b.fmul(x, x), ERF_TAYLOR))
    ac = e.clamp(a, 1.0, 6.0)
    tail = _erfc_tail(e, ac, lambda v: exp_f64(b, v), ERFCX_T_RANGE, ERFCX_CHEBYSHEV)
    big = e.select(e.lt(a, 6.0), b.fsub(e.c(1.0), tail), e.c(1.0))
    value = e.select(e.lt(a, 1.0), small, e.call("copysign", big, x))
    return e.select(e.is_nan(x), x, value)


# f32 --------------------------------------------------------------------------------------------


def erf_f32(b: ir.IRBuilder, x: ir.Value, exp: Callable[[ir.Value], ir.Value]) -> ir.Value:
    e = Emit(b, F32)
    a = e.call("fabs", x)
    small = b.fmul(x, e.horner(b.fmul(x, x), ERF_TAYLOR_F32))
    ac = e.clamp(a, 1.0, 4.0)
    tail = _erfc_tail(e, ac, exp, ERFCX_T_RANGE_F32, ERFCX_CHEBYSHEV_F32)
    big = e.select(e.lt(a, 3.92), b.fsub(e.c(1.0), tail), e.c(1.0))
    value = e.select(e.lt(a, 1.0), small, e.call("copysign", big, x))
    return e.select(e.is_nan(x), x, value)


def tanh_f32(b: ir.IRBuilder, x: ir.Value, exp: Callable[[ir.Value], ir.Value]) -> ir.Value:
    e = Emit(b, F32)
    a = e.call("fabs", x)
    z = b.fmul(x, x)
    small = e.fma(b.fmul(x, z), e.horner(z, tanh_taylor(9)), x)
    wide = exp(b.fmul(e.clamp(a, 0.0, 20.0), e.c(2.0)))
    big = b.fsub(e.c(1.0), b.fdiv(e.c(2.0), b.fadd(wide, e.c(1.0))))
    value = e.select(e.lt(a, 0.55), small, e.call("copysign", big, x))
    # x itself where it is 0 (tanh(-0) is -0: x^3 times the series' negative first term is +0)
    # or NaN
    keep = b.or_(e.is_nan(x), b.fcmp_ordered("==", x, e.c(0.0)))
    return e.select(keep, x, value)


F64_FUNCTIONS: dict[str, Callable[[ir.IRBuilder, ir.Value], ir.Value]] = {
    "exp": exp_f64,
    "exp2": exp2_f64,
    "log": log_f64,
    "log2": log2_f64,
    "sin": sin_f64,
    "cos": cos_f64,
    "tanh": tanh_f64,
    "erf": erf_f64,
}

__all__ = ["F64_FUNCTIONS", "erf_f32", "tanh_f32"]
