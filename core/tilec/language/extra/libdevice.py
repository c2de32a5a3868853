"""Triton's `tl.extra.libdevice` functions that tilec computes exactly as libdevice specifies.

The first names are `tl` functions: `fast_*` variants compute the precise function (at least as
accurate as libdevice's approximation), the `_rn` variants round to nearest even, as the plain
IEEE operations do. The rest are written here in `tl` and inlined where a kernel calls them, as
Triton's `standard.py` functions are: bit tests, bit casts, conversions with libdevice's rounding
(`_rz` truncates, `_rn` rounds to nearest even) and the roundings `trunc`, `rint`, `round`.
Names missing here are listed in docs/triton-names.md with the reason.
"""

from tilec import language as tl
from tilec.frontend.kernel import KernelFunction as _inlined

abs = tl.abs
fabs = tl.abs
floor = tl.floor
ceil = tl.ceil
sqrt = tl.sqrt
sqrt_rn = tl.sqrt_rn
rsqrt = tl.rsqrt
exp = tl.exp
exp2 = tl.exp2
log = tl.log
log2 = tl.log2
sin = tl.sin
cos = tl.cos
tanh = tl.tanh
erf = tl.erf
fma = tl.fma
fma_rn = tl.fma
div_rn = tl.div_rn
umulhi = tl.umulhi
fast_expf = tl.exp
fast_logf = tl.log
fast_log2f = tl.log2
fast_sinf = tl.sin
fast_cosf = tl.cos
fast_dividef = tl.fdiv


@_inlined
def trunc(x):
    """Round toward zero to an integer value."""
    return tl.where(x < 0, tl.ceil(x), tl.floor(x))


@_inlined
def rint(x):
    """Round to the nearest integer, ties to even: adding and subtracting 2**(mantissa bits)
    rounds exactly so in IEEE arithmetic; larger magnitudes are integers already."""
    if x.dtype == tl.float64:
        big = 4503599627370496.0
    else:
        big = 8388608.0
    magnitude = tl.abs(x)
    rounded = copysign((magnitude + big) - big, x)
    return tl.where(magnitude < big, rounded, x)


@_inlined
def nearbyint(x):
    """Round to the nearest integer, ties to even (as `rint`)."""
    return rint(x)


@_inlined
def round(x):
    """Round to the nearest integer, ties away from zero."""
    whole = trunc(x)
    away = tl.abs(x - whole) >= 0.5
    return tl.where(away, whole + copysign(tl.full(x.shape, 1.0, x.dtype), x), whole)


@_inlined
def copysign(x, y):
    """`x`'s magnitude with `y`'s sign bit."""
    if x.dtype == tl.float64:
        bits, sign = tl.uint64, 0x8000000000000000
    else:
        bits, sign = tl.uint32, 0x80000000
    magnitude = x.to(bits, bitcast=True) & (sign - 1)
    negative = y.to(x.dtype).to(bits, bitcast=True) & sign
    return (magnitude | negative).to(x.dtype, bitcast=True)


@_inlined
def signbit(x):
    """1 (int32) where `x`'s sign bit is set (-0.0 and NaNs with the bit included), else 0."""
    if x.dtype == tl.float64:
        return (x.to(tl.int64, bitcast=True) < 0).to(tl.int32)
    return (x.to(tl.int32, bitcast=True) < 0).to(tl.int32)


@_inlined
def isnan(x):
    """1 (int32) where `x` is NaN, else 0."""
    return (x != x).to(tl.int32)


@_inlined
def isinf(x):
    """1 (int32) where `x` is +inf or -inf, else 0."""
    return (tl.abs(x) == float("inf")).to(tl.int32)


@_inlined
def finitef(x):
    """1 (int32) where the float32 `x` is finite (neither inf nor NaN), else 0."""
    return (tl.abs(x) < float("inf")).to(tl.int32)


@_inlined
def isfinited(x):
    """1 (int32) where the float64 `x` is finite (neither inf nor NaN), else 0."""
    return (tl.abs(x) < float("inf")).to(tl.int32)


@_inlined
def saturatef(x):
    """Clamp to [0, 1]; NaN gives 0."""
    return tl.minimum(tl.maximum(x, 0.0), 1.0)


@_inlined
def rcp_rn(x):
    """`1 / x` rounded to nearest even (`/` of float32 may be Triton's faster division)."""
    return tl.div_rn(tl.full(x.shape, 1.0, x.dtype), x)


def _uncontracted(name: str, what: str):
    """A builtin for `x op y` rounded to nearest even on its own: never fused into an FMA, as
    CUDA's `__fadd_rn` and friends (`enable_fp_fusion` fuses plain `+`, `-` and `*`)."""
    builtin = tl._builtin(name)
    builtin.__doc__ = f"`{what}` rounded to nearest even, never fused into an FMA."
    return builtin


add_rn = _uncontracted("add_rn", "x + y")
sub_rn = _uncontracted("sub_rn", "x - y")
mul_rn = _uncontracted("mul_rn", "x * y")


@_inlined
def float_as_int(x):
    """The bits of float32 `x` as an int32."""
    return x.to(tl.int32, bitcast=True)


@_inlined
def int_as_float(x):
    """The bits of int32 `x` as a float32."""
    return x.to(tl.float32, bitcast=True)


@_inlined
def float_as_uint(x):
    """The bits of float32 `x` as a uint32."""
    return x.to(tl.uint32, bitcast=True)


@_inlined
def uint_as_float(x):
    """The bits of uint32 `x` as a float32."""
    return x.to(tl.float32, bitcast=True)


@_inlined
def double_as_longlong(x):
    """The bits of float64 `x` as an int64."""
    return x.to(tl.int64, bitcast=True)


@_inlined
def longlong_as_double(x):
    """The bits of int64 `x` as a float64."""
    return x.to(tl.float64, bitcast=True)


@_inlined
def float2int_rz(x):
    """float32 `x` to int32, rounded toward zero."""
    return x.to(tl.int32)


@_inlined
def float2uint_rz(x):
    """float32 `x` to uint32, rounded toward zero."""
    return x.to(tl.uint32)


@_inlined
def float2ll_rz(x):
    """float32 `x` to int64, rounded toward zero."""
    return x.to(tl.int64)


@_inlined
def float2ull_rz(x):
    """float32 `x` to uint64, rounded toward zero."""
    return x.to(tl.uint64)


@_inlined
def double2int_rz(x):
    """float64 `x` to int32, rounded toward zero."""
    return x.to(tl.int32)


@_inlined
def double2uint_rz(x):
    """float64 `x` to uint32, rounded toward zero."""
    return x.to(tl.uint32)


@_inlined
def double2ll_rz(x):
    """float64 `x` to int64, rounded toward zero."""
    return x.to(tl.int64)


@_inlined
def double2ull_rz(x):
    """float64 `x` to uint64, rounded toward zero."""
    return x.to(tl.uint64)


@_inlined
def double2float_rn(x):
    """float64 `x` to float32, rounded to nearest even."""
    return x.to(tl.float32)


@_inlined
def int2float_rn(x):
    """int32 `x` to float32, rounded to nearest even."""
    return x.to(tl.float32)


@_inlined
def uint2float_rn(x):
    """uint32 `x` to float32, rounded to nearest even."""
    return x.to(tl.float32)


@_inlined
def ll2float_rn(x):
    """int64 `x` to float32, rounded to nearest even."""
    return x.to(tl.float32)


@_inlined
def ull2float_rn(x):
    """uint64 `x` to float32, rounded to nearest even."""
    return x.to(tl.float32)


@_inlined
def int2double_rn(x):
    """int32 `x` to float64, rounded to nearest even."""
    return x.to(tl.float64)


@_inlined
def uint2double_rn(x):
    """uint32 `x` to float64, rounded to nearest even."""
    return x.to(tl.float64)


@_inlined
def ll2double_rn(x):
    """int64 `x` to float64, rounded to nearest even."""
    return x.to(tl.float64)


@_inlined
def ull2double_rn(x):
    """uint64 `x` to float64, rounded to nearest even."""
    return x.to(tl.float64)


@_inlined
def _asin_small(t):
    """asin of float32 `t` in [0, 0.5]: Cephes' `asinf` polynomial (relative error < 2.5e-7)."""
    z = t * t
    p = 4.2163199048e-2 * z + 2.4181311049e-2
    p = p * z + 4.5470025998e-2
    p = p * z + 7.4953002686e-2
    p = p * z + 1.6666752422e-1
    return p * z * t + t


@_inlined
def _asin_reduced(t):
    """asin of `t` in [0, 0.5] in `t`'s dtype: the float32 polynomial, refined for float64 by
    two Newton steps on sin(y) = t (cos(y) > 0.86 there, so each step doubles the digits)."""
    if t.dtype == tl.float64:
        y = _asin_small(t.to(tl.float32)).to(tl.float64)
        y = y - (tl.sin(y) - t) / tl.cos(y)
        y = y - (tl.sin(y) - t) / tl.cos(y)
    else:
        y = _asin_small(t)
    return y


@_inlined
def asin(x):
    """Arc sine of float32 or float64 `x` (libdevice's `asinf` / `asin`), NaN outside [-1, 1]:
    |x| > 0.5 is reduced by asin(a) = pi/2 - 2 asin(sqrt((1 - a) / 2))."""
    tl.static_assert(
        x.dtype == tl.float32 or x.dtype == tl.float64,
        "libdevice.asin takes float32 or float64 (libdevice's asinf and asin)",
    )
    a = tl.abs(x)
    big = a > 0.5
    y = _asin_reduced(tl.where(big, tl.sqrt_rn(0.5 * (1.0 - a)), a))  # not tl.sqrt's approximation
    if x.dtype == tl.float32:  # pi/2 as float32 plus the rest, so the difference rounds once
        reduced = (1.5707963705062866 - 2.0 * y) - 4.371139000186243e-08
    else:
        reduced = 1.5707963267948966 - 2.0 * y
    return copysign(tl.where(big, reduced, y), x)


@_inlined
def acos(x):
    """Arc cosine of float32 or float64 `x` (libdevice's `acosf` / `acos`), NaN outside
    [-1, 1]: pi/2 - asin(x) for |x| <= 0.5, else 2 asin(sqrt((1 - |x|) / 2)), from pi for
    negative x (no cancellation near x = 1)."""
    tl.static_assert(
        x.dtype == tl.float32 or x.dtype == tl.float64,
        "libdevice.acos takes float32 or float64 (libdevice's acosf and acos)",
    )
    a = tl.abs(x)
    big = a > 0.5
    y = _asin_reduced(tl.where(big, tl.sqrt_rn(0.5 * (1.0 - a)), a))  # not tl.sqrt's approximation
    small = 1.5707963267948966 - copysign(y, x)
    large = tl.where(x < 0, 3.141592653589793 - 2.0 * y, 2.0 * y)
    return tl.where(big, large, small)


# The elementary functions call the ones above (as `tl.extra.libdevice.copysign`, ...).
from tilec.language.extra.libdevice_bessel import (  # noqa: E402, F401
    cyl_bessel_i0,
    cyl_bessel_i1,
    j0,
    j1,
    y0,
    y1,
)
from tilec.language.extra.libdevice_directed import (  # noqa: E402, F401
    add_rd,
    add_ru,
    add_rz,
    div_rd,
    div_ru,
    div_rz,
    fma_rd,
    fma_ru,
    fma_rz,
    mul_rd,
    mul_ru,
    mul_rz,
    rcp_rd,
    rcp_ru,
    rcp_rz,
    rsqrt_rn,
    sqrt_rd,
    sqrt_ru,
    sqrt_rz,
    sub_rd,
    sub_ru,
    sub_rz,
)
from tilec.language.extra.libdevice_elementary import (  # noqa: E402, F401
    acosh,
    asinh,
    atan,
    atan2,
    atanh,
    cosh,
    expm1,
    fast_tanhf,
    fmod,
    hypot,
    llrint,
    log1p,
    log10,
    pow,
    sinh,
    tan,
)
from tilec.language.extra.libdevice_extra_math import (  # noqa: E402, F401
    cbrt,
    cospi,
    exp10,
    fast_exp10f,
    fast_log10f,
    fast_powf,
    fast_tanf,
    fdim,
    ilogb,
    logb,
    norm3d,
    norm4d,
    rcbrt,
    remainder,
    rhypot,
    rnorm3d,
    rnorm4d,
    sinpi,
)
from tilec.language.extra.libdevice_integer import (  # noqa: E402, F401
    brev,
    byte_perm,
    clz,
    double2hiint,
    double2loint,
    ffs,
    hadd,
    hiloint2double,
    mul24,
    mulhi,
    popc,
    rhadd,
    sad,
)
from tilec.language.extra.libdevice_rounding import (  # noqa: E402, F401
    double2float_rd,
    double2float_ru,
    double2float_rz,
    double2int_rd,
    double2int_rn,
    double2int_ru,
    double2ll_rd,
    double2ll_rn,
    double2ll_ru,
    double2uint_rd,
    double2uint_rn,
    double2uint_ru,
    double2ull_rd,
    double2ull_rn,
    double2ull_ru,
    float2int_rd,
    float2int_rn,
    float2int_ru,
    float2ll_rd,
    float2ll_rn,
    float2ll_ru,
    float2uint_rd,
    float2uint_rn,
    float2uint_ru,
    float2ull_rd,
    float2ull_rn,
    float2ull_ru,
    int2float_rd,
    int2float_ru,
    int2float_rz,
    ll2double_rd,
    ll2double_ru,
    ll2double_rz,
    ll2float_rd,
    ll2float_ru,
    ll2float_rz,
    llround,
    uint2float_rd,
    uint2float_ru,
    uint2float_rz,
    ull2double_rd,
    ull2double_ru,
    ull2double_rz,
    ull2float_rd,
    ull2float_ru,
    ull2float_rz,
)
from tilec.language.extra.libdevice_special import (  # noqa: E402, F401
    erfc,
    erfcinv,
    erfcx,
    erfinv,
    ldexp,
    lgamma,
    nextafter,
    normcdf,
    normcdfinv,
    scalbn,
    tgamma,
)

NAMES = sorted(
    name
    for name, value in globals().items()
    if (hasattr(value, "__tilec_builtin__") or isinstance(value, _inlined))
    and not name.startswith("_")
)
"""The libdevice names this module provides."""
