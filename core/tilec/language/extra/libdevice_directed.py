"""libdevice's arithmetic with a directed rounding, written in `tl` and inlined where a kernel
calls them (`tl.extra.libdevice` gives them with the others): `add`, `sub`, `mul`, `div`,
`rcp`, `sqrt` with `_rz` (toward zero), `_rd` (down), `_ru` (up), for float32 and float64,
`fma_rz`, `fma_rd`, `fma_ru` for float32, and `rsqrt_rn` (float32 `1 / sqrt(x)` rounded to
nearest: the float64 estimate's float32 rounding, moved to a neighbour where the exact root lies
beyond the midpoint `m` between them, as the exact sign of `m^2 x - 1` (an `fma`) says).

Each computes the result rounded to nearest, then the sign of what that rounding left out,
exactly, and steps the result once (`nextafter`) where it went the wrong way:

- float32: in float64, where `x + y` leaves its rest to Knuth's two-sum, `x * y` is exact, and
  a quotient's or square root's rest `x - q y` or `x - s s` is exact once `q` or `s` is a
  float32 (the only case where the rest decides: otherwise the float64 result already lies
  strictly between two float32s);
- float64: the two-sum for `add` and `sub`; for `mul`, `div`, `sqrt`, the rest through an `fma`
  (exact), scaled by a power of two where the result is so small that the rest would underflow.

IEEE's rules hold for exact zeros (`x - x` is -0 rounding down, +0 otherwise) and results past
the largest float (the largest float where the rounding goes toward zero from them). A float64
`fma_r*` needs the rest of a fused product and sum (Boldo and Muller's ErrFma), which tilec does
not compute: it is a located error.
"""

from tilec import language as tl
from tilec.frontend.kernel import KernelFunction as _inlined
from tilec.language.extra.libdevice_elementary import _check_floats
from tilec.language.extra.libdevice_rounding import _directed, _from_double

_F64_MAX = 1.7976931348623157e308
_TINY = 1.4996968138956309e-241
"""2**-800: below it a float64 rest may underflow."""
_HUGE = 6.668014432879854e240
"""2**800: above it the rest's fma is given operands scaled down (a product's rest stays exact
on every backend, the interpreter's emulated fma included)."""
_UP = 1.6069380442589903e60
"""2**200."""
_DOWN = 6.223015277861142e-61
"""2**-200."""


@_inlined
def _to_float32(s, rest, mode: tl.constexpr):
    """float64 `s` plus a rest of the sign of `rest` (far below s's ulp), rounded to float32 by
    `mode`: `s`'s directed rounding, stepped where s is a float32 itself and the rest is not 0."""
    f = _from_double(s, mode)
    exact = f.to(tl.float64) == s
    return tl.where(exact & (rest != 0.0), _stepped(f, rest, mode), f)


@_inlined
def _stepped(r, rest, mode: tl.constexpr):
    """float64 `r` (rounded to nearest) stepped by `mode` where the exact value is `r` plus a
    rest of the sign of `rest`."""
    return _directed(r, rest < 0.0, rest > 0.0, (r < 0.0) | ((r == 0.0) & (rest < 0.0)), mode)


@_inlined
def _past_largest(r, x, y, largest, mode: tl.constexpr):
    """Where finite x and y gave an infinite `r`: the largest float where `mode` rounds toward
    zero from it (rz; rd from above, ru from below)."""
    overflow = (tl.abs(r) == float("inf")) & (tl.abs(x) < float("inf")) & (tl.abs(y) < float("inf"))
    big = tl.full(r.shape, largest, r.dtype)  # a bare constant would be typed float32: inf
    if mode == "rz":
        capped = tl.where(r > 0.0, big, -big)
    elif mode == "rd":
        capped = tl.where(r > 0.0, big, r)
    else:
        capped = tl.where(r < 0.0, -big, r)
    return tl.where(overflow, capped, r)


@_inlined
def _two_sum_rest(s, a, b):
    """The rest a + b - s of the rounded sum s (Knuth's two-sum: exact)."""
    bb = s - a
    return (a - (s - bb)) + (b - bb)


@_inlined
def _exact_zero_sign(r, x, y, mode: tl.constexpr):
    """IEEE's sign of an exact zero sum: -0 rounding down unless both addends are +0."""
    if mode == "rd":
        both_plus = (x == 0.0) & (y == 0.0) & (tl.extra.libdevice.signbit(x) == 0)
        both_plus = both_plus & (tl.extra.libdevice.signbit(y) == 0)
        r = tl.where((r == 0.0) & ~both_plus, -0.0, r)
    return r


@_inlined
def _add(x, y, mode: tl.constexpr):
    if x.dtype == tl.float32:
        a = x.to(tl.float64)
        b = y.to(tl.float64)
        s = tl.extra.libdevice.add_rn(a, b)
        r = _to_float32(s, _two_sum_rest(s, a, b), mode)
    else:
        s = tl.extra.libdevice.add_rn(x, y)
        rest = tl.where(tl.abs(s) < float("inf"), _two_sum_rest(s, x, y), 0.0)
        r = _past_largest(_stepped(s, rest, mode), x, y, _F64_MAX, mode)
    return _exact_zero_sign(r, x, y, mode)


@_inlined
def _mul(x, y, mode: tl.constexpr):
    if x.dtype == tl.float32:
        r = _from_double(x.to(tl.float64) * y.to(tl.float64), mode)
    else:
        p = tl.extra.libdevice.mul_rn(x, y)
        # the rest x y - p through an fma: where p is tiny the rest may underflow (the smaller
        # factor and p scaled by 2**200), where a factor is huge the fma's operands are kept
        # below 2**800 (the larger factor and p scaled by 2**-200)
        tiny = tl.abs(p) < _TINY
        x_small = tl.abs(x) <= tl.abs(y)
        huge = ~tiny & (tl.maximum(tl.abs(x), tl.abs(y)) > _HUGE)
        xs = tl.where(tiny & x_small, x * _UP, tl.where(huge & ~x_small, x * _DOWN, x))
        ys = tl.where(tiny & ~x_small, y * _UP, tl.where(huge & x_small, y * _DOWN, y))
        ps = tl.where(tiny, p * _UP, tl.where(huge, p * _DOWN, p))
        rest = tl.where(tl.abs(p) < float("inf"), tl.fma(xs, ys, -ps), 0.0)
        r = _past_largest(_stepped(p, rest, mode), x, y, _F64_MAX, mode)
    return r


@_inlined
def _div(x, y, mode: tl.constexpr):
    if x.dtype == tl.float32:
        a = x.to(tl.float64)
        b = y.to(tl.float64)
        q = a / b
        rest = a - q * b  # exact once q is a float32
        rest = tl.where(b < 0.0, -rest, rest)
        rest = tl.where((tl.abs(q) < float("inf")) & (b != 0.0), rest, 0.0)
        r = _to_float32(q, rest, mode)
    else:
        q = tl.extra.libdevice.div_rn(x, y)
        # the rest x - q y through an fma, scaled as mul's: q and x up where q is tiny, y and x
        # down where y is huge, q and x down where q is
        tiny = tl.abs(q) < _TINY
        big_y = ~tiny & (tl.abs(y) > _HUGE)
        big_q = ~tiny & ~big_y & (tl.maximum(tl.abs(q), tl.abs(x)) > _HUGE)
        xs = tl.where(tiny, x * _UP, tl.where(big_y | big_q, x * _DOWN, x))
        qs = tl.where(tiny, q * _UP, tl.where(big_q, q * _DOWN, q))
        ys = tl.where(big_y, y * _DOWN, y)
        rest = tl.fma(-qs, ys, xs)
        rest = tl.where(y < 0.0, -rest, rest)  # the quotient's rest has the sign of rest / y
        rest = tl.where((tl.abs(q) < float("inf")) & (tl.abs(y) < float("inf")), rest, 0.0)
        r = _past_largest(_stepped(q, rest, mode), x, tl.where(y == 0.0, float("inf"), y),
                          _F64_MAX, mode)  # fmt: skip
    return r


@_inlined
def _sqrt(x, mode: tl.constexpr):
    tl.static_assert(
        x.dtype == tl.float32 or x.dtype == tl.float64,
        "libdevice.sqrt_r* takes float32 or float64",
    )
    if x.dtype == tl.float32:
        a = x.to(tl.float64)
        s = tl.sqrt_rn(a)
        rest = tl.where((a > 0.0) & (a < float("inf")), a - s * s, 0.0)
        r = _to_float32(s, rest, mode)
    else:
        s = tl.sqrt_rn(x)
        # x scaled by 2**200 where tiny, 2**-200 where huge (the root by 2**+-100)
        tiny = x < _TINY
        huge = x > _HUGE
        ss = tl.where(tiny, s * 1.2676506002282294e30, tl.where(huge, s * 7.888609052210118e-31, s))
        xs = tl.where(tiny, x * _UP, tl.where(huge, x * _DOWN, x))
        rest = tl.where((x > 0.0) & (x < float("inf")), tl.fma(-ss, ss, xs), 0.0)
        r = _stepped(s, rest, mode)
    return r


@_inlined
def _fma(x, y, z, mode: tl.constexpr):
    tl.static_assert(
        x.dtype == tl.float32 and y.dtype == tl.float32 and z.dtype == tl.float32,
        "libdevice.fma_rz, fma_rd, fma_ru: tilec provides the float32 forms only (a float64 one "
        "needs the exact rest of a fused multiply-add)",
    )
    p = x.to(tl.float64) * y.to(tl.float64)  # exact
    c = z.to(tl.float64)
    s = tl.extra.libdevice.add_rn(p, c)
    rest = tl.where(tl.abs(s) < float("inf"), _two_sum_rest(s, p, c), 0.0)
    return _exact_zero_sign(_to_float32(s, rest, mode), p, c, mode)


@_inlined
def add_rz(x, y):
    """x + y rounded toward zero."""
    _check_floats(x, y, "add_rz")
    return _add(x, y, "rz")


@_inlined
def add_rd(x, y):
    """x + y rounded down."""
    _check_floats(x, y, "add_rd")
    return _add(x, y, "rd")


@_inlined
def add_ru(x, y):
    """x + y rounded up."""
    _check_floats(x, y, "add_ru")
    return _add(x, y, "ru")


@_inlined
def sub_rz(x, y):
    """x - y rounded toward zero."""
    _check_floats(x, y, "sub_rz")
    return _add(x, -y, "rz")


@_inlined
def sub_rd(x, y):
    """x - y rounded down."""
    _check_floats(x, y, "sub_rd")
    return _add(x, -y, "rd")


@_inlined
def sub_ru(x, y):
    """x - y rounded up."""
    _check_floats(x, y, "sub_ru")
    return _add(x, -y, "ru")


@_inlined
def mul_rz(x, y):
    """x * y rounded toward zero."""
    _check_floats(x, y, "mul_rz")
    return _mul(x, y, "rz")


@_inlined
def mul_rd(x, y):
    """x * y rounded down."""
    _check_floats(x, y, "mul_rd")
    return _mul(x, y, "rd")


@_inlined
def mul_ru(x, y):
    """x * y rounded up."""
    _check_floats(x, y, "mul_ru")
    return _mul(x, y, "ru")


@_inlined
def div_rz(x, y):
    """x / y rounded toward zero."""
    _check_floats(x, y, "div_rz")
    return _div(x, y, "rz")


@_inlined
def div_rd(x, y):
    """x / y rounded down."""
    _check_floats(x, y, "div_rd")
    return _div(x, y, "rd")


@_inlined
def div_ru(x, y):
    """x / y rounded up."""
    _check_floats(x, y, "div_ru")
    return _div(x, y, "ru")


@_inlined
def rcp_rz(x):
    """1 / x rounded toward zero."""
    _check_floats(x, x, "rcp_rz")
    return _div(tl.full(x.shape, 1.0, x.dtype), x, "rz")


@_inlined
def rcp_rd(x):
    """1 / x rounded down."""
    _check_floats(x, x, "rcp_rd")
    return _div(tl.full(x.shape, 1.0, x.dtype), x, "rd")


@_inlined
def rcp_ru(x):
    """1 / x rounded up."""
    _check_floats(x, x, "rcp_ru")
    return _div(tl.full(x.shape, 1.0, x.dtype), x, "ru")


@_inlined
def sqrt_rz(x):
    """sqrt(x) rounded toward zero."""
    return _sqrt(x, "rz")


@_inlined
def sqrt_rd(x):
    """sqrt(x) rounded down."""
    return _sqrt(x, "rd")


@_inlined
def sqrt_ru(x):
    """sqrt(x) rounded up."""
    return _sqrt(x, "ru")


@_inlined
def fma_rz(x, y, z):
    """x * y + z rounded once, toward zero (float32)."""
    return _fma(x, y, z, "rz")


@_inlined
def fma_rd(x, y, z):
    """x * y + z rounded once, down (float32)."""
    return _fma(x, y, z, "rd")


@_inlined
def fma_ru(x, y, z):
    """x * y + z rounded once, up (float32)."""
    return _fma(x, y, z, "ru")


@_inlined
def rsqrt_rn(x):
    """1 / sqrt(x) of float32 x rounded to nearest: +inf at +0, -inf at -0, +0 at +inf, NaN
    below 0."""
    tl.static_assert(
        x.dtype == tl.float32, "libdevice.rsqrt_rn takes float32 (libdevice's frsqrt_rn)"
    )
    a = x.to(tl.float64)
    f = (1.0 / tl.sqrt_rn(a)).to(tl.float32)
    infinity = tl.full(f.shape, float("inf"), tl.float32)
    up = tl.extra.libdevice.nextafter(f, infinity)
    down = tl.extra.libdevice.nextafter(f, -infinity)
    # m < 1 / sqrt(a) exactly where m^2 a < 1 (m has 25 bits: m^2 is exact, the fma rounds once)
    m_up = 0.5 * (f.to(tl.float64) + up.to(tl.float64))
    m_down = 0.5 * (f.to(tl.float64) + down.to(tl.float64))
    r = tl.where(tl.fma(m_up * m_up, a, -1.0) < 0.0, up, f)
    r = tl.where(tl.fma(m_down * m_down, a, -1.0) > 0.0, down, r)
    regular = (a > 0.0) & (a < float("inf"))
    return tl.where(regular, r, f)
