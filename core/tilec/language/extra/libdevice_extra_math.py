"""More of libdevice's floating-point functions, written in `tl` and inlined where a kernel calls
them (`tl.extra.libdevice` gives them with the others): `sinpi`, `cospi`, `exp10`, `cbrt`,
`rcbrt`, `rhypot`, `norm3d`, `rnorm3d`, `norm4d`, `rnorm4d`, `remainder`, `fdim`, `ilogb`,
`logb`, and the `fast_` variants `fast_tanf`, `fast_exp10f`, `fast_log10f`, `fast_powf`
(computed precisely, as the other `fast_` names).

As in `libdevice_elementary`, a float32 argument is computed in float64 and rounded once
(within an ulp), a float64 one to a few ulps: `sinpi`/`cospi` reduce `x` by exact halves first
(`x - n/2`, so large arguments keep their digits); `exp10` is `exp(p) (1 + e)` with `p + e` the
product `x ln(10)` to twice float64's precision (Dekker's product); `cbrt` takes one Newton step
from `exp2(log2(|x|) / 3)`; the norms scale by the largest magnitude. `remainder` (IEEE's, the
quotient rounded to even), `fdim`, `ilogb` and `logb` are exact.
"""

from tilec import language as tl
from tilec.frontend.kernel import KernelFunction as _inlined
from tilec.language.extra.libdevice_elementary import (
    _check_float,
    _check_floats,
    _wide,
    fmod,
    hypot,
    log10,
    pow,
    tan,
)
from tilec.language.extra.libdevice_integer import clz
from tilec.language.extra.libdevice_special import _high_half

_PI = 3.141592653589793
_LN10 = 2.302585092994046
_LN10_HI = 2.3025850653648376
_LN10_MID = 2.762920825460924e-08
"""_LN10 = _LN10_HI + _LN10_MID, the first with 26 significant bits."""
_LN10_LO = -2.1707562233822494e-16
"""ln(10) - _LN10."""
_INT_MIN = -2147483648
_INT_MAX = 2147483647


@_inlined
def _pi_reduced(w):
    """(sin(pi r), cos(pi r), n mod 4) of float64 w = r + n/2, |r| <= 1/4 (r exact)."""
    n = tl.extra.libdevice.rint(2.0 * w)
    r = w - 0.5 * n
    quadrant = n - 4.0 * tl.floor(0.25 * n)
    return tl.sin(_PI * r), tl.cos(_PI * r), quadrant


@_inlined
def sinpi(x):
    """sin(pi x): +-0 at the integers (the sign of x), NaN at +-inf."""
    w = _wide(x, "sinpi")
    s, c, quadrant = _pi_reduced(w)
    v = tl.where(
        quadrant == 0.0, s, tl.where(quadrant == 1.0, c, tl.where(quadrant == 2.0, -s, -c))
    )
    return tl.where(v == 0.0, tl.extra.libdevice.copysign(v, w), v).to(x.dtype)


@_inlined
def cospi(x):
    """cos(pi x): +0 at the halves, NaN at +-inf."""
    s, c, quadrant = _pi_reduced(_wide(x, "cospi"))
    v = tl.where(
        quadrant == 0.0, c, tl.where(quadrant == 1.0, -s, tl.where(quadrant == 2.0, -c, s))
    )
    return tl.where(v == 0.0, 0.0, v).to(x.dtype)


@_inlined
def exp10(x):
    """10 to the power x."""
    w = _wide(x, "exp10")
    p = w * _LN10
    hi = _high_half(w)
    lo = w - hi
    e = ((hi * _LN10_HI - p) + hi * _LN10_MID + lo * _LN10_HI) + lo * _LN10_MID
    # beyond exp's range the product's rest may be large: exp(p) is 0 or inf there
    e = tl.where(tl.abs(p) < 800.0, e + w * _LN10_LO, 0.0)
    return (tl.exp(p) * (1.0 + e)).to(x.dtype)


@_inlined
def _cbrt(w):
    """The real cube root of float64 w (its sign; zeros, infinities and NaN as they are)."""
    a = tl.abs(w)
    # scaled by 2**+-159 (the root by 2**-+53) where the guess or its cube would leave the
    # normal range
    tiny = a < 1e-290
    huge = a > 1e300
    s = tl.where(tiny, a * 7.307508186654515e47, tl.where(huge, a * 1.3684555315672042e-48, a))
    y = tl.exp2(tl.log2(s) * (1.0 / 3.0))
    y = y - (y * y * y - s) / (3.0 * y * y)
    y = tl.where(tiny, y * 1.1102230246251565e-16, tl.where(huge, y * 9007199254740992.0, y))
    y = tl.where((a == 0.0) | (a == float("inf")) | (a != a), a, y)
    return tl.extra.libdevice.copysign(y, w)


@_inlined
def cbrt(x):
    """The real cube root."""
    return _cbrt(_wide(x, "cbrt")).to(x.dtype)


@_inlined
def rcbrt(x):
    """1 / cbrt(x): +-inf at +-0, +-0 at +-inf."""
    return (1.0 / _cbrt(_wide(x, "rcbrt"))).to(x.dtype)


@_inlined
def rhypot(x, y):
    """1 / sqrt(x^2 + y^2) without overflow."""
    return (1.0 / hypot(_wide(x, "rhypot"), _wide(y, "rhypot"))).to(x.dtype)


@_inlined
def _norm(a, b, c, d):
    """sqrt(a^2 + b^2 + c^2 + d^2) of float64 values, scaled by the largest magnitude; infinite
    where any is, even with a NaN."""
    a = tl.abs(a)
    b = tl.abs(b)
    c = tl.abs(c)
    d = tl.abs(d)
    m = tl.maximum(tl.maximum(a, b), tl.maximum(c, d))
    safe = tl.where((m == 0.0) | (m == float("inf")), 1.0, m)
    n = m * tl.sqrt((a / safe) * (a / safe) + (b / safe) * (b / safe) + (c / safe) * (c / safe)
                    + (d / safe) * (d / safe))  # fmt: skip
    n = tl.where(m == 0.0, 0.0, n)
    n = tl.where((a != a) | (b != b) | (c != c) | (d != d), float("nan"), n)
    infinite = (a == float("inf")) | (b == float("inf")) | (c == float("inf")) | (d == float("inf"))
    return tl.where(infinite, float("inf"), n)


@_inlined
def norm3d(a, b, c):
    """sqrt(a^2 + b^2 + c^2) without overflow."""
    w = _wide(a, "norm3d")
    return _norm(w, _wide(b, "norm3d"), _wide(c, "norm3d"), tl.zeros_like(w)).to(a.dtype)


@_inlined
def rnorm3d(a, b, c):
    """1 / norm3d(a, b, c)."""
    w = _wide(a, "rnorm3d")
    return (1.0 / _norm(w, _wide(b, "rnorm3d"), _wide(c, "rnorm3d"), tl.zeros_like(w))).to(a.dtype)


@_inlined
def norm4d(a, b, c, d):
    """sqrt(a^2 + b^2 + c^2 + d^2) without overflow."""
    w = _wide(a, "norm4d")
    return _norm(w, _wide(b, "norm4d"), _wide(c, "norm4d"), _wide(d, "norm4d")).to(a.dtype)


@_inlined
def rnorm4d(a, b, c, d):
    """1 / norm4d(a, b, c, d)."""
    w = _wide(a, "rnorm4d")
    n = _norm(w, _wide(b, "rnorm4d"), _wide(c, "rnorm4d"), _wide(d, "rnorm4d"))
    return (1.0 / n).to(a.dtype)


@_inlined
def remainder(x, y):
    """IEEE's remainder x - n y, n the quotient rounded to even: exact (fdlibm's method: the
    remainder by 2|y|, exact `fmod`, then at most two subtractions of |y|); NaN for y = 0 or
    infinite x."""
    _check_floats(x, y, "remainder")
    p = tl.abs(y)
    r = tl.abs(fmod(x, p + p))
    r = tl.where(p + p == float("inf"), tl.abs(x), r)
    first = r + r > p
    r = tl.where(first, r - p, r)
    r = tl.where(first & (r + r >= p), r - p, r)
    result = tl.where(x < 0.0, -r, r)
    result = tl.where(result == 0.0, x * 0.0, result)  # a zero has x's sign
    bad = (p == 0.0) | (tl.abs(x) == float("inf")) | (x != x) | (y != y)
    return tl.where(bad, float("nan"), tl.where(p == float("inf"), x, result))


@_inlined
def fdim(x, y):
    """x - y where x > y, else +0; NaN where either is."""
    _check_floats(x, y, "fdim")
    r = tl.where(x > y, x - y, 0.0)
    return tl.where((x != x) | (y != y), x + y, r)


@_inlined
def _exponent(x, name: tl.constexpr):
    """The unbiased binary exponent of finite nonzero x (subnormals included), as int32."""
    _check_float(x, name)
    if x.dtype == tl.float64:
        bits = x.to(tl.int64, bitcast=True) & 0x7FFFFFFFFFFFFFFF
        biased = (bits >> 52).to(tl.int32)
        e = tl.where(biased == 0, -1011 - clz(bits), biased - 1023)  # 63 - clz - 1074
    else:
        bits = x.to(tl.int32, bitcast=True) & 0x7FFFFFFF
        biased = bits >> 23
        e = tl.where(biased == 0, -118 - clz(bits), biased - 127)  # 31 - clz - 149
    return e


@_inlined
def ilogb(x):
    """The unbiased exponent of x as int32: INT_MIN for 0 and NaN, INT_MAX for +-inf."""
    e = _exponent(x, "ilogb")
    e = tl.where(tl.abs(x) == float("inf"), _INT_MAX, e)
    return tl.where((x == 0.0) | (x != x), _INT_MIN, e)


@_inlined
def logb(x):
    """The unbiased exponent of x as a float: -inf for 0, +inf for +-inf, NaN for NaN."""
    r = _exponent(x, "logb").to(x.dtype)
    r = tl.where(tl.abs(x) == float("inf"), float("inf"), r)
    r = tl.where(x == 0.0, -float("inf"), r)
    return tl.where(x != x, x, r)


@_inlined
def fast_tanf(x):
    """tan, computed precisely (libdevice's fast variant is an approximation of it)."""
    return tan(x)


@_inlined
def fast_exp10f(x):
    """exp10, computed precisely."""
    return exp10(x)


@_inlined
def fast_log10f(x):
    """log10, computed precisely."""
    return log10(x)


@_inlined
def fast_powf(x, y):
    """pow, computed precisely."""
    return pow(x, y)
