"""libdevice's conversions with a rounding other than the plain conversion's, written in `tl`
and inlined where a kernel calls them (`tl.extra.libdevice` gives them with the others):

- float to integer, `_rn` (to nearest even), `_rd` (down), `_ru` (up): `float2int`,
  `float2uint`, `float2ll`, `float2ull`, `double2int`, `double2uint`, `double2ll`, `double2ull`
  (the `_rz` ones are the plain conversions, in `libdevice`), and `llround` (half away from
  zero): the value rounded to an integral float first, then converted (exact);
- to a float, `_rz` (toward zero), `_rd`, `_ru`: `double2float`, `int2float`, `uint2float`,
  `ll2float`, `ull2float`, `ll2double`, `ull2double`: the conversion to nearest, then one step
  (`nextafter`) where it went the wrong way, found by comparing it with the exact value (as an
  integer, or as a float64, which holds every float32 and 32-bit integer exactly).

An integer result out of the target's range is what the plain conversion gives there.
"""

from tilec import language as tl
from tilec.frontend.kernel import KernelFunction as _inlined
from tilec.language.extra.libdevice_special import nextafter


@_inlined
def _directed(rounded, above, below, negative, mode: tl.constexpr):
    """`rounded` (the conversion to nearest of a value) moved one float toward the mode's
    direction where it went the other way: `above`/`below` say where it lies from the exact
    value, `negative` whether that value is below 0."""
    infinity = tl.full(rounded.shape, float("inf"), rounded.dtype)
    if mode == "rd":
        r = tl.where(above, nextafter(rounded, -infinity), rounded)
    elif mode == "ru":
        r = tl.where(below, nextafter(rounded, infinity), rounded)
    else:  # rz: toward zero
        away = (above & ~negative) | (below & negative)
        r = tl.where(away, nextafter(rounded, tl.full(rounded.shape, 0.0, rounded.dtype)), rounded)
    return r


@_inlined
def _from_double(x, mode: tl.constexpr):
    f = x.to(tl.float32)
    back = f.to(tl.float64)
    return _directed(f, back > x, back < x, x < 0.0, mode)


@_inlined
def _from_integer(x, dtype: tl.constexpr, mode: tl.constexpr):
    """int32, uint32, int64 or uint64 `x` to float32 or float64, rounded by `mode`."""
    f = x.to(dtype)
    if x.dtype == tl.int64:  # f is integral; 2**63 (the one value int64 cannot hold) is above
        top = f >= 9.223372036854775808e18
        back = tl.where(top, 0, f).to(tl.int64)
        above = top | (back > x)
        below = ~top & (back < x)
    elif x.dtype == tl.uint64:
        top = f >= 1.8446744073709551616e19
        back = tl.where(top, 0, f).to(tl.uint64)
        above = top | (back > x)
        below = ~top & (back < x)
    else:
        back = f.to(tl.float64)
        exact = x.to(tl.float64)
        above = back > exact
        below = back < exact
    return _directed(f, above, below, x < 0, mode)


@_inlined
def _to_integer(x, dtype: tl.constexpr, mode: tl.constexpr):
    if mode == "rn":
        r = tl.extra.libdevice.rint(x)
    elif mode == "rd":
        r = tl.floor(x)
    else:
        r = tl.ceil(x)
    return r.to(dtype)


@_inlined
def llround(x):
    """Round to the nearest integer, halves away from zero, as int64."""
    return tl.extra.libdevice.round(x).to(tl.int64)


@_inlined
def float2int_rn(x):
    """float32 `x` to int32, rounded to nearest even."""
    return _to_integer(x, tl.int32, "rn")


@_inlined
def float2int_rd(x):
    """float32 `x` to int32, rounded down."""
    return _to_integer(x, tl.int32, "rd")


@_inlined
def float2int_ru(x):
    """float32 `x` to int32, rounded up."""
    return _to_integer(x, tl.int32, "ru")


@_inlined
def float2uint_rn(x):
    """float32 `x` to uint32, rounded to nearest even."""
    return _to_integer(x, tl.uint32, "rn")


@_inlined
def float2uint_rd(x):
    """float32 `x` to uint32, rounded down."""
    return _to_integer(x, tl.uint32, "rd")


@_inlined
def float2uint_ru(x):
    """float32 `x` to uint32, rounded up."""
    return _to_integer(x, tl.uint32, "ru")


@_inlined
def float2ll_rn(x):
    """float32 `x` to int64, rounded to nearest even."""
    return _to_integer(x, tl.int64, "rn")


@_inlined
def float2ll_rd(x):
    """float32 `x` to int64, rounded down."""
    return _to_integer(x, tl.int64, "rd")


@_inlined
def float2ll_ru(x):
    """float32 `x` to int64, rounded up."""
    return _to_integer(x, tl.int64, "ru")


@_inlined
def float2ull_rn(x):
    """float32 `x` to uint64, rounded to nearest even."""
    return _to_integer(x, tl.uint64, "rn")


@_inlined
def float2ull_rd(x):
    """float32 `x` to uint64, rounded down."""
    return _to_integer(x, tl.uint64, "rd")


@_inlined
def float2ull_ru(x):
    """float32 `x` to uint64, rounded up."""
    return _to_integer(x, tl.uint64, "ru")


@_inlined
def double2int_rn(x):
    """float64 `x` to int32, rounded to nearest even."""
    return _to_integer(x, tl.int32, "rn")


@_inlined
def double2int_rd(x):
    """float64 `x` to int32, rounded down."""
    return _to_integer(x, tl.int32, "rd")


@_inlined
def double2int_ru(x):
    """float64 `x` to int32, rounded up."""
    return _to_integer(x, tl.int32, "ru")


@_inlined
def double2uint_rn(x):
    """float64 `x` to uint32, rounded to nearest even."""
    return _to_integer(x, tl.uint32, "rn")


@_inlined
def double2uint_rd(x):
    """float64 `x` to uint32, rounded down."""
    return _to_integer(x, tl.uint32, "rd")


@_inlined
def double2uint_ru(x):
    """float64 `x` to uint32, rounded up."""
    return _to_integer(x, tl.uint32, "ru")


@_inlined
def double2ll_rn(x):
    """float64 `x` to int64, rounded to nearest even."""
    return _to_integer(x, tl.int64, "rn")


@_inlined
def double2ll_rd(x):
    """float64 `x` to int64, rounded down."""
    return _to_integer(x, tl.int64, "rd")


@_inlined
def double2ll_ru(x):
    """float64 `x` to int64, rounded up."""
    return _to_integer(x, tl.int64, "ru")


@_inlined
def double2ull_rn(x):
    """float64 `x` to uint64, rounded to nearest even."""
    return _to_integer(x, tl.uint64, "rn")


@_inlined
def double2ull_rd(x):
    """float64 `x` to uint64, rounded down."""
    return _to_integer(x, tl.uint64, "rd")


@_inlined
def double2ull_ru(x):
    """float64 `x` to uint64, rounded up."""
    return _to_integer(x, tl.uint64, "ru")


@_inlined
def double2float_rz(x):
    """float64 `x` to float32, rounded toward zero."""
    return _from_double(x, "rz")


@_inlined
def double2float_rd(x):
    """float64 `x` to float32, rounded down."""
    return _from_double(x, "rd")


@_inlined
def double2float_ru(x):
    """float64 `x` to float32, rounded up."""
    return _from_double(x, "ru")


@_inlined
def int2float_rz(x):
    """int32 `x` to float32, rounded toward zero."""
    return _from_integer(x, tl.float32, "rz")


@_inlined
def int2float_rd(x):
    """int32 `x` to float32, rounded down."""
    return _from_integer(x, tl.float32, "rd")


@_inlined
def int2float_ru(x):
    """int32 `x` to float32, rounded up."""
    return _from_integer(x, tl.float32, "ru")


@_inlined
def uint2float_rz(x):
    """uint32 `x` to float32, rounded toward zero."""
    return _from_integer(x, tl.float32, "rz")


@_inlined
def uint2float_rd(x):
    """uint32 `x` to float32, rounded down."""
    return _from_integer(x, tl.float32, "rd")


@_inlined
def uint2float_ru(x):
    """uint32 `x` to float32, rounded up."""
    return _from_integer(x, tl.float32, "ru")


@_inlined
def ll2float_rz(x):
    """int64 `x` to float32, rounded toward zero."""
    return _from_integer(x, tl.float32, "rz")


@_inlined
def ll2float_rd(x):
    """int64 `x` to float32, rounded down."""
    return _from_integer(x, tl.float32, "rd")


@_inlined
def ll2float_ru(x):
    """int64 `x` to float32, rounded up."""
    return _from_integer(x, tl.float32, "ru")


@_inlined
def ull2float_rz(x):
    """uint64 `x` to float32, rounded toward zero."""
    return _from_integer(x, tl.float32, "rz")


@_inlined
def ull2float_rd(x):
    """uint64 `x` to float32, rounded down."""
    return _from_integer(x, tl.float32, "rd")


@_inlined
def ull2float_ru(x):
    """uint64 `x` to float32, rounded up."""
    return _from_integer(x, tl.float32, "ru")


@_inlined
def ll2double_rz(x):
    """int64 `x` to float64, rounded toward zero."""
    return _from_integer(x, tl.float64, "rz")


@_inlined
def ll2double_rd(x):
    """int64 `x` to float64, rounded down."""
    return _from_integer(x, tl.float64, "rd")


@_inlined
def ll2double_ru(x):
    """int64 `x` to float64, rounded up."""
    return _from_integer(x, tl.float64, "ru")


@_inlined
def ull2double_rz(x):
    """uint64 `x` to float64, rounded toward zero."""
    return _from_integer(x, tl.float64, "rz")


@_inlined
def ull2double_rd(x):
    """uint64 `x` to float64, rounded down."""
    return _from_integer(x, tl.float64, "rd")


@_inlined
def ull2double_ru(x):
    """uint64 `x` to float64, rounded up."""
    return _from_integer(x, tl.float64, "ru")
