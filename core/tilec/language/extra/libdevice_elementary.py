"""libdevice's elementary functions that tilec writes in `tl`, inlined where a kernel calls them
(`tl.extra.libdevice` gives them with the others): `log1p`, `expm1`, `log10`, `tan`, `sinh`,
`cosh`, `asinh`, `acosh`, `atanh`, `atan`, `atan2`, `hypot`, `pow`, `fmod`, `llrint` and
`fast_tanhf`. torch's Inductor calls them for `softplus`, `elu`, `x ** 2.5`, `atan2` and the like.

Each takes float32 or float64, as libdevice's `...f` and plain functions do. A float32 argument
is computed in float64 and rounded once: the float32 `exp`, `log`, `sin` and `cos` of the GPU
backends are the hardware's approximations (as Triton's `tl.exp`, `tl.log`), while tilec's
float64 ones are accurate to about an ulp on every backend, which the formulas below keep to a few
float64 ulps, far below a float32 ulp. A float64 argument gets those few ulps (Kahan's `log1p` and
`expm1`, `atan` refined by Newton steps from Cephes' `atanf`); `pow` takes float32 only, since
`exp(y * log(x))` in float64 loses float64 digits for large results.
"""

from tilec import language as tl
from tilec.frontend.kernel import KernelFunction as _inlined

_LN2 = 0.6931471805599453
_PI = 3.141592653589793
_HALF_PI = 1.5707963267948966
_BIG = 268435456.0
"""2**28: above it, sqrt(1 + x * x) is x in float64 (`asinh`, `acosh`)."""


@_inlined
def _check_float(x, name: tl.constexpr):
    """A located error naming libdevice's `name` unless `x` is float32 or float64."""
    tl.static_assert(
        x.dtype == tl.float32 or x.dtype == tl.float64,
        "libdevice."
        + name
        + " takes float32 or float64 (libdevice's "
        + name
        + "f and "
        + name
        + ")",
    )


@_inlined
def _check_floats(x, y, name: tl.constexpr):
    """A located error naming libdevice's `name` unless `x` and `y` are both float32 or both
    float64."""
    tl.static_assert(
        (x.dtype == tl.float32 or x.dtype == tl.float64) and x.dtype == y.dtype,
        "libdevice." + name + " takes two float32 or two float64 values",
    )


@_inlined
def _wide(x, name: tl.constexpr):
    """`x` in float64, float32 or float64 `x` only (`_check_float`)."""
    _check_float(x, name)
    return x.to(tl.float64)


@_inlined
def _log1p(x):
    """Kahan's log1p: log(u) * x / (u - 1) with u = 1 + x (u - 1 is exact), x where u is 1."""
    u = x + 1.0
    d = u - 1.0
    r = tl.where(d == 0.0, x, tl.log(u) * (x / d))
    return tl.where(u == float("inf"), u, r)


@_inlined
def _expm1(x):
    """Kahan's expm1: (u - 1) * x / log(u) with u = exp(x); x where u is 1, -1 where u - 1 is."""
    u = tl.exp(x)
    um1 = u - 1.0
    r = tl.where(um1 == -1.0, -1.0, um1 * (x / tl.log(u)))
    r = tl.where(u == 1.0, x, r)
    return tl.where(u == float("inf"), u, r)


@_inlined
def _exp_half_squared(a):
    """exp(a) / 2 where exp(a) alone overflows (cosh and sinh of large a)."""
    t = tl.exp(0.5 * a)
    return (0.5 * t) * t


@_inlined
def _atan(x):
    """atan of float64 `x`: Cephes' `atanf` in float32, then two Newton steps on
    sin(y) - |x| cos(y) = 0 (each doubles the digits)."""
    a = tl.abs(x)
    t = a.to(tl.float32)
    big = t > 2.414213562373095
    mid = t > 0.4142135623730950
    z = tl.where(big, -1.0 / t, tl.where(mid, (t - 1.0) / (t + 1.0), t))
    w = z * z
    p = 8.05374449538e-2 * w - 1.38776856032e-1
    p = p * w + 1.99777106478e-1
    p = p * w - 3.33329491539e-1
    base = tl.where(big, _HALF_PI, tl.where(mid, 0.7853981633974483, 0.0))
    y = (base + (p * w * z + z)).to(tl.float64)
    y = y - (tl.sin(y) - a * tl.cos(y)) / (tl.cos(y) + a * tl.sin(y))
    y = y - (tl.sin(y) - a * tl.cos(y)) / (tl.cos(y) + a * tl.sin(y))
    return tl.extra.libdevice.copysign(tl.where(a == float("inf"), _HALF_PI, y), x)


@_inlined
def log1p(x):
    """log(1 + x), accurate for small x."""
    return _log1p(_wide(x, "log1p")).to(x.dtype)


@_inlined
def expm1(x):
    """exp(x) - 1, accurate for small x."""
    return _expm1(_wide(x, "expm1")).to(x.dtype)


@_inlined
def log10(x):
    """Base-10 logarithm."""
    return (tl.log(_wide(x, "log10")) * 0.4342944819032518).to(x.dtype)


@_inlined
def tan(x):
    """Tangent: sin(x) / cos(x)."""
    w = _wide(x, "tan")
    return (tl.sin(w) / tl.cos(w)).to(x.dtype)


@_inlined
def sinh(x):
    """Hyperbolic sine: (e + e / (e + 1)) / 2 with e = expm1(|x|), the sign of x."""
    a = tl.abs(_wide(x, "sinh"))
    e = _expm1(a)
    s = tl.where(a < 709.0, 0.5 * (e + e / (e + 1.0)), _exp_half_squared(a))
    return tl.extra.libdevice.copysign(s, x.to(tl.float64)).to(x.dtype)


@_inlined
def cosh(x):
    """Hyperbolic cosine: (e + 1 / e) / 2 with e = exp(|x|)."""
    a = tl.abs(_wide(x, "cosh"))
    e = tl.exp(a)
    return tl.where(a < 709.0, 0.5 * (e + 1.0 / e), _exp_half_squared(a)).to(x.dtype)


@_inlined
def asinh(x):
    """Inverse hyperbolic sine: log1p(a + a^2 / (1 + sqrt(1 + a^2))), a = |x|, the sign of x."""
    w = _wide(x, "asinh")
    a = tl.abs(w)
    small = _log1p(a + a * a / (1.0 + tl.sqrt(1.0 + a * a)))
    r = tl.where(a > _BIG, tl.log(a) + _LN2, small)
    return tl.extra.libdevice.copysign(r, w).to(x.dtype)


@_inlined
def acosh(x):
    """Inverse hyperbolic cosine: log1p(t + sqrt(2t + t^2)), t = x - 1; NaN below 1."""
    w = _wide(x, "acosh")
    t = w - 1.0
    r = tl.where(w > _BIG, tl.log(w) + _LN2, _log1p(t + tl.sqrt(2.0 * t + t * t)))
    return tl.where(w < 1.0, float("nan"), r).to(x.dtype)


@_inlined
def atanh(x):
    """Inverse hyperbolic tangent: log1p(2a / (1 - a)) / 2, a = |x|, the sign of x."""
    w = _wide(x, "atanh")
    a = tl.abs(w)
    return tl.extra.libdevice.copysign(0.5 * _log1p(2.0 * a / (1.0 - a)), w).to(x.dtype)


@_inlined
def atan(x):
    """Arc tangent."""
    return _atan(_wide(x, "atan")).to(x.dtype)


@_inlined
def atan2(y, x):
    """The angle of the point (x, y), in [-pi, pi], with C's signed zeros and infinities."""
    wy = _wide(y, "atan2")
    wx = _wide(x, "atan2")
    ay = tl.abs(wy)
    ax = tl.abs(wx)
    swap = ay > ax
    t = _atan(tl.where(swap, ax, ay) / tl.where(swap, ay, ax))
    r = tl.where(swap, _HALF_PI - t, t)
    r = tl.where((ax == float("inf")) & (ay == float("inf")), 0.7853981633974483, r)
    r = tl.where((ax == 0.0) & (ay == 0.0), 0.0, r)
    r = tl.where(tl.extra.libdevice.signbit(wx) != 0, _PI - r, r)
    return tl.extra.libdevice.copysign(r, wy).to(y.dtype)


@_inlined
def hypot(x, y):
    """sqrt(x^2 + y^2) without overflow: m * sqrt(1 + (n / m)^2), m and n the larger and the
    smaller magnitude; infinite where either is, even with a NaN."""
    ax = tl.abs(_wide(x, "hypot"))
    ay = tl.abs(_wide(y, "hypot"))
    larger = tl.where(ax > ay, ax, ay)
    smaller = tl.where(ax > ay, ay, ax)
    r = smaller / larger
    h = tl.where(larger == 0.0, 0.0, larger * tl.sqrt(1.0 + r * r))
    return tl.where((ax == float("inf")) | (ay == float("inf")), float("inf"), h).to(x.dtype)


@_inlined
def pow(x, y):
    """x to the power y for float32 (libdevice's `powf`), with C's special cases: 1 where y is
    0 or x is 1 (even NaN), the sign of x for odd integer y, NaN for negative finite x and
    non-integer y."""
    tl.static_assert(
        x.dtype == tl.float32,
        "libdevice.pow: tilec provides powf (float32) only; float64 pow needs more precision "
        "than its float64 exp and log keep for large results",
    )
    w = x.to(tl.float64)
    v = tl.cast(y, tl.float64)
    a = tl.abs(w)
    m = tl.exp(v * tl.log(a))
    m = tl.where(a == 1.0, 1.0, m)
    integer = v == tl.floor(v)
    odd = integer & (0.5 * v != tl.floor(0.5 * v))
    r = tl.where(odd, tl.extra.libdevice.copysign(m, w), m)
    r = tl.where((w < 0.0) & (a != float("inf")) & ~integer, float("nan"), r)
    r = tl.where((v == 0.0) | (w == 1.0), 1.0, r)
    return r.to(tl.float32)


@_inlined
def _significand(bits):
    """A float64's integer significand (its hidden bit added where it is normal), as float64,
    and its biased exponent (1 for a subnormal): the float is significand * 2**(exponent - 1075)."""
    biased = bits >> 52
    fraction = bits & 0xFFFFFFFFFFFFF
    significand = tl.where(biased > 0, fraction | 0x10000000000000, fraction)
    return significand.to(tl.float64), tl.maximum(biased, 1)


@_inlined
def _power_of_two(e):
    """2**e for int64 `e` in [-1022, 1023], exactly (its bits)."""
    return ((e + 1023) << 52).to(tl.float64, bitcast=True)


@_inlined
def _reduce(m, n, s):
    """(m * 2**s) mod n for integer-valued float64 m, n below 2**53 with m * 2**s / n below
    2**53, exactly: the rounded quotient's floor q is the true one or one more (then n is added
    back), and m * 2**s - q * n, an integer below n in magnitude, is what the fma rounds to."""
    t = m * _power_of_two(s)
    r = tl.fma(-tl.floor(tl.div_rn(t, n)), n, t)
    return tl.where(r < 0.0, r + n, r)


@_inlined
def fmod(x, y):
    """C's `fmod`: x - n y with n = trunc(x / y), the sign of x, exact (libdevice's `fmodf` and
    `fmod`). With |x| = a 2**i and |y| = b 2**j, a and b integers below 2**53 (a float32's in
    float64), a mod b is taken first, then the remainder is shifted up 52 bits of i - j at a
    time and reduced again: 7 steps cover float32's exponents, 41 float64's. Not the float `%`
    (LLVM's `frem`, as Triton's `%`), which the NVPTX backend expands as x - trunc(x / y) * y,
    inexact for large quotients."""
    _check_floats(x, y, "fmod")
    if x.dtype == tl.float64:
        steps = 40  # after the first: ceil((2046 - 1) / 52), float64's biased exponents
    else:
        steps = 6  # ceil((127 + 149) / 52): from float32's smallest subnormal to its largest
    a = tl.abs(x).to(tl.float64)
    b = tl.abs(y).to(tl.float64)
    usual = (a >= b) & (a < float("inf")) & (b > 0.0)
    m, i = _significand(tl.where(usual, a, 1.0).to(tl.int64, bitcast=True))
    n, j = _significand(tl.where(usual, b, 1.0).to(tl.int64, bitcast=True))
    m = _reduce(m, n, tl.zeros_like(i))
    d = i - j
    for _ in range(steps):
        s = tl.minimum(d, 52)
        m = _reduce(m, n, s)
        d -= s
    r = ((m * 2.0**-52) * _power_of_two(j - 1023)).to(x.dtype)  # exact: r is a float below b
    r = tl.where(x < 0.0, -r, r)
    r = tl.where(tl.abs(x) < tl.abs(y), x, r)  # x's zeros, y's infinities too
    return tl.where((x != x) | (y != y) | (tl.abs(x) == float("inf")) | (y == 0.0), float("nan"), r)


@_inlined
def llrint(x):
    """Round to the nearest integer, ties to even, as int64."""
    return tl.extra.libdevice.rint(x).to(tl.int64)


@_inlined
def fast_tanhf(x):
    """tanh, computed precisely (libdevice's fast variant is an approximation of it)."""
    return tl.tanh(x)
