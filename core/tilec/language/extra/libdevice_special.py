"""libdevice's special functions that tilec writes in `tl`, inlined where a kernel calls them
(`tl.extra.libdevice` gives them with the others): `erfc`, `erfcx`, `erfinv`, `erfcinv`,
`normcdf`, `normcdfinv`, `lgamma`, `tgamma` (float32), `ldexp`, `scalbn` and `nextafter`. torch's
Inductor calls them for `torch.erfc`, `erfinv`, `special.erfcx`, `lgamma`, `nextafter` and the
like.

As in `libdevice_elementary`, a float32 argument is computed in float64 and rounded once (within
an ulp), a float64 one to a few ulps:

- `erfc(x)` is `1 - erf(x)` below 0.5, else `exp(-x^2) erfcx(x)` with `(1 + 2x) erfcx(x)` a
  Chebyshev series in `t = (x - 2) / (x + 2)` over all of [0.5, inf) (Shepherd and Laframboise's
  variable), and `exp(-x^2)` from the exact split `x^2 = hi^2 + (x - hi)(x + hi)`; `erfc(-x) =
  2 - erfc(x)`.
- `erfinv` and `erfcinv` start from Winitzki's closed-form approximation (relative error about
  1e-3) and take Halley steps (two for float32, four for float64) on `erf(x) = a`, or, where
  `a > 0.5`, on `erfc(x) = 1 - a`, so the tail keeps its relative accuracy.
- `lgamma` is `(x - 1) g1(x)` on [0.5, 1.5] and `(x - 2) g2(x)` on [1.5, 2.5] (Chebyshev series,
  so the roots at 1 and 2 keep relative accuracy), reached from (0, 0.5) by `lgamma(x + 1) -
  log(x)` and from [2.5, 8) by `lgamma(x) = lgamma(x - 1) + log(x - 1)`; Stirling's series from 8
  on; the reflection `log(pi / |sin(pi x)|) - lgamma(1 - x)` below 0 (near its roots there the
  result loses relative accuracy, as libdevice's does).
- `ldexp` scales exactly (in two steps where `2**n` is not a double, as musl's `scalbn`);
  `nextafter` steps the bit pattern.

The series' coefficients interpolate the exact function (mpmath, 50 digits) at the Chebyshev
nodes of their interval: 23 for `erfcx` (relative error 6e-16), 29 for `g1`, 19 for `g2` (7e-16
and 4e-16).
"""

from tilec import language as tl
from tilec.frontend.kernel import KernelFunction as _inlined
from tilec.language.extra.libdevice_elementary import _check_floats, _wide

_TWO_OVER_SQRT_PI = 1.1283791670955126
_INV_SQRT2 = 0.7071067811865476
_INV_SQRT2_HI = 0.7071067690849304
_INV_SQRT2_MID = 1.2101617152815436e-08
"""_INV_SQRT2 = _INV_SQRT2_HI + _INV_SQRT2_MID, the first with 26 significant bits."""
_INV_SQRT2_LO = -4.833646656726457e-17
"""1/sqrt(2) - _INV_SQRT2."""
_SQRT2 = 1.4142135623730951
_LOG_PI = 1.1447298858494002
_PI = 3.141592653589793
_STIRLING_CONSTANT = 0.4189385332046727
"""log(2 pi) / 2 - 1/2."""
_WINITZKI = 0.147
_STIRLING = (
    0.08333333333333333, -0.002777777777777778, 0.0007936507936507937, -0.0005952380952380953,
    0.0008417508417508417, -0.0019175269175269176, 0.00641025641025641, -0.029550653594771242,
    0.17964437236883057, -1.3924322169059011,
)  # fmt: skip
"""B_2k / (2k (2k - 1)), k = 1..10: Stirling's series of lgamma in 1/x."""

_ERFCX = (
    1.2189843018755826, -0.06694052041928128, -0.0366203654058652, 0.015414982880477912,
    -0.002538753286427615, 2.8290134783006504e-05, 5.6244174093159375e-05,
    -3.625662410105677e-06, -1.5532852974322157e-06, 1.1445498337487254e-07,
    5.587528836187341e-08, -1.9595989736283747e-09, -2.2958037049029297e-09,
    -8.632838012835472e-11, 9.195146896425493e-11, 1.3153984619171897e-11,
    -2.8559296244529793e-12, -1.0013437623373374e-12, 9.215004971275975e-15,
    5.393745453364071e-14, 7.920674200215718e-15, -1.7061008539094744e-15,
    -7.87875933928873e-16,
)  # fmt: skip
"""(1 + 2x) erfcx(x) in u = 1.25 t - 0.25, t = (x - 2) / (x + 2) (x in [0.5, inf): u in [-1, 1])."""
_LGAMMA_NEAR_1 = (
    -0.633011426275031, 0.4405675574678963, -0.057857409449912446, 0.010513973690267811,
    -0.002163989092091715, 0.0004744402338724658, -0.00010799644528099427,
    2.5201155299530276e-05, -5.986014498026819e-06, 1.4410616180293054e-06,
    -3.5060690575761177e-07, 8.603823016763753e-08, -2.126510912478688e-08,
    5.287778091463614e-09, -1.3217135752166157e-09, 3.318669855445049e-10,
    -8.365902567746215e-11, 2.1163386661606772e-11, -5.370507653793733e-12,
    1.366668810052106e-12, -3.486660039790235e-13, 8.9156224291315e-14, -2.2845495795705904e-14,
    5.8651461805320395e-15, -1.508405065694796e-15, 3.885535779359383e-16,
    -1.0021155232166018e-16, 2.5779676650975893e-17, -6.24887928626692e-18,
)  # fmt: skip
"""lgamma(x) / (x - 1) in u = 2 (x - 1) (x in [0.5, 1.5])."""
_LGAMMA_NEAR_2 = (
    0.41418612492156676, 0.16322170068760064, -0.008658972394126285, 0.0006727515726001485,
    -6.139556963628233e-05, 6.110065797003576e-06, -6.410003033826223e-07,
    6.962242692768951e-08, -7.747248733788217e-09, 8.774075140687239e-10,
    -1.0070266869830198e-10, 1.167860213065235e-11, -1.3656871334743072e-12,
    1.607935114955948e-13, -1.9039501076036667e-14, 2.2653767746572923e-15,
    -2.7066484242671833e-16, 3.2449700544979306e-17, -3.847510573139261e-18,
)  # fmt: skip
_STIRLING = (
    0.08333333333333333, -0.002777777777777778, 0.0007936507936507937, -0.0005952380952380953,
    0.0008417508417508417, -0.0019175269175269176, 0.00641025641025641, -0.029550653594771242,
    0.17964437236883057, -1.3924322169059011,
)  # fmt: skip
"""lgamma(x) / (x - 2) in u = 2 (x - 2) (x in [1.5, 2.5])."""


@_inlined
def _chebyshev(u, coeffs: tl.constexpr):
    """The Chebyshev series `sum coeffs[k] T_k(u)` (Clenshaw's recurrence)."""
    b1 = u * 0.0
    b2 = u * 0.0
    for i in tl.static_range(len(coeffs) - 1):
        b0 = (2.0 * u) * b1 - b2 + coeffs[len(coeffs) - 1 - i]
        b2 = b1
        b1 = b0
    return u * b1 - b2 + coeffs[0]


@_inlined
def _high_half(a):
    """float64 `a` with its 27 low mantissa bits cleared: its square is exact."""
    return (a.to(tl.int64, bitcast=True) & -134217728).to(tl.float64, bitcast=True)


@_inlined
def _exp_minus_square(a, da):
    """exp(-(a + da)^2) for float64 `a` and a small correction `da`, from the exact split
    a^2 = hi^2 + (a - hi)(a + hi)."""
    hi = _high_half(a)
    rest = tl.where(tl.abs(a) < float("inf"), (a - hi) * (a + hi) + 2.0 * a * da, 0.0)
    return tl.exp(-(hi * hi)) * tl.exp(-rest)


@_inlined
def _erfcx_large(a):
    """erfcx(a) for float64 a >= 0.5 (0 at infinity)."""
    t = (a - 2.0) / (a + 2.0)
    r = (0.5 * _chebyshev(1.25 * t - 0.25, _ERFCX)) / (a + 0.5)
    return tl.where(a == float("inf"), 0.0, r)


@_inlined
def _erfc_positive(a, da):
    """erfc(a + da) for float64 a >= 0 and a correction `da` far below a's ulp."""
    large = _exp_minus_square(a, da) * _erfcx_large(a)
    r = tl.where(a < 0.5, 1.0 - tl.erf(a + da), large)
    return tl.where(a == float("inf"), 0.0, r)


@_inlined
def _erfc(w, dw):
    """erfc(w + dw) of float64 w."""
    r = _erfc_positive(tl.abs(w), tl.where(w < 0.0, -dw, dw))
    return tl.where(w < 0.0, 2.0 - r, r)


@_inlined
def _inverse_erf(a, c, steps: tl.constexpr):
    """x >= 0 with erf(x) = a, for float64 a in [0, 1] and c = 1 - a exactly; inf at a = 1, NaN
    above 1."""
    log_term = tl.log(c * (1.0 + a))
    b = 4.330746750799873 + 0.5 * log_term  # 2 / (pi 0.147) + log_term / 2
    q = -log_term / _WINITZKI
    s = tl.sqrt(b * b + q)
    x = tl.sqrt(tl.where(b > 0.0, q / (s + b), s - b))
    tail = a > 0.5
    for _ in tl.static_range(steps):
        f = tl.where(tail, c - _erfc_positive(x, 0.0), tl.erf(x) - a)
        x = x - f / (_TWO_OVER_SQRT_PI * _exp_minus_square(x, 0.0) + x * f)
    x = tl.where(c == 0.0, float("inf"), x)
    return tl.where(a > 1.0, float("nan"), x)


@_inlined
def _steps(x):
    """Halley steps for `_inverse_erf`: two reach float32's precision, three float64's."""
    if x.dtype == tl.float64:
        n = 4
    else:
        n = 2
    return n


@_inlined
def _lgamma_positive(z):
    """lgamma of float64 z >= 0."""
    # [2.5, 8): lgamma(z) = lgamma(r) + log((z - 1) ... r), r the first of z - 1, z - 2, ... below 2.5
    r = z
    product = z * 0.0 + 1.0
    for _ in tl.static_range(6):
        down = (r >= 2.5) & (r < 8.0)
        r = tl.where(down, r - 1.0, r)
        product = tl.where(down, product * r, product)
    near_2 = (r - 2.0) * _chebyshev(2.0 * (r - 2.0), _LGAMMA_NEAR_2) + tl.log(product)
    d1 = tl.where(z < 0.5, z, z - 1.0)  # lgamma(1 + d1)
    near_1 = d1 * _chebyshev(2.0 * d1, _LGAMMA_NEAR_1)
    near_1 = tl.where(z < 0.5, near_1 - tl.log(z), near_1)
    w = 1.0 / z
    w2 = w * w
    series = _STIRLING[9] * w2
    for i in tl.static_range(8):
        series = (series + _STIRLING[8 - i]) * w2
    stirling = (z - 0.5) * (tl.log(z) - 1.0) + (_STIRLING_CONSTANT + (series + _STIRLING[0]) * w)
    return tl.where(z < 1.5, near_1, tl.where(z < 8.0, near_2, stirling))


@_inlined
def _lgamma(w):
    """lgamma of float64 w, with the reflection below 0."""
    negative = w < 0.0
    positive = _lgamma_positive(tl.where(negative, 1.0 - w, w))
    fraction = w - tl.extra.libdevice.rint(w)
    reflected = _LOG_PI - tl.log(tl.abs(tl.sin(_PI * fraction))) - positive
    r = tl.where(negative, reflected, positive)
    r = tl.where(r == 0.0, 0.0, r)  # +0 at 1 and 2, as C's
    return tl.where(w == -float("inf"), float("inf"), r)


@_inlined
def erfc(x):
    """The complementary error function 1 - erf(x), accurate where it is small."""
    return _erfc(_wide(x, "erfc"), 0.0).to(x.dtype)


@_inlined
def erfcx(x):
    """The scaled complementary error function exp(x^2) erfc(x)."""
    w = _wide(x, "erfcx")
    a = tl.abs(w)
    small = _erfc(w, 0.0) / _exp_minus_square(w, 0.0)
    negative = 2.0 / _exp_minus_square(a, 0.0) - _erfcx_large(a)
    r = tl.where(w < -0.5, negative, tl.where(w < 0.5, small, _erfcx_large(a)))
    return r.to(x.dtype)


@_inlined
def erfinv(x):
    """The inverse error function: erf(erfinv(x)) = x on [-1, 1], +-inf at +-1, NaN outside."""
    w = _wide(x, "erfinv")
    a = tl.abs(w)
    r = _inverse_erf(a, 1.0 - a, _steps(x))
    return tl.extra.libdevice.copysign(r, w).to(x.dtype)


@_inlined
def erfcinv(x):
    """The inverse complementary error function on [0, 2]: +inf at 0, -inf at 2, NaN outside."""
    w = _wide(x, "erfcinv")
    upper = w > 1.0
    c = tl.where(upper, 2.0 - w, w)
    r = _inverse_erf(1.0 - c, c, _steps(x))
    r = tl.where(c < 0.0, float("nan"), r)
    return tl.where(upper, -r, r).to(x.dtype)


@_inlined
def normcdf(x):
    """The standard normal distribution function erfc(-x / sqrt(2)) / 2, with x / sqrt(2) carried
    to twice float64's precision so that its far tail keeps its relative accuracy."""
    w = _wide(x, "normcdf")
    p = w * _INV_SQRT2
    # Dekker's product: p + e = w * _INV_SQRT2 exactly (each partial product is exact)
    hi = _high_half(w)
    lo = w - hi
    e = ((hi * _INV_SQRT2_HI - p) + hi * _INV_SQRT2_MID + lo * _INV_SQRT2_HI) + lo * _INV_SQRT2_MID
    rest = tl.where(tl.abs(w) < float("inf"), -(e + w * _INV_SQRT2_LO), 0.0)
    z = -p
    return (0.5 * _erfc(z, rest)).to(x.dtype)


@_inlined
def normcdfinv(x):
    """The inverse of `normcdf` on [0, 1]: -sqrt(2) erfcinv(2x), -inf at 0, +inf at 1."""
    w = _wide(x, "normcdfinv")
    c = 2.0 * w
    upper = c > 1.0
    c = tl.where(upper, 2.0 - c, c)
    r = _inverse_erf(1.0 - c, c, _steps(x))
    r = tl.where(c < 0.0, float("nan"), r)
    return (_SQRT2 * tl.where(upper, r, 0.0 - r)).to(x.dtype)  # +0 at x = 1/2


@_inlined
def lgamma(x):
    """log |Gamma(x)|: +inf at the poles (0 and the negative integers) and at +-inf."""
    return _lgamma(_wide(x, "lgamma")).to(x.dtype)


@_inlined
def tgamma(x):
    """Gamma(x) of float32 x (libdevice's `tgammaf`): exp(lgamma(x)) in float64 with Gamma's sign;
    +-inf at +-0, NaN at the negative integers and -inf."""
    tl.static_assert(
        x.dtype == tl.float32,
        "libdevice.tgamma: tilec provides tgammaf (float32) only; float64 tgamma needs more "
        "precision than exp(lgamma(x)) keeps for large results",
    )
    w = x.to(tl.float64)
    m = tl.exp(_lgamma(w))
    even = (tl.floor(-w) - 2.0 * tl.floor(0.5 * tl.floor(-w))) == 0.0  # negative on (-1, 0)
    r = tl.where((w < 0.0) & even, -m, m)
    pole = (w < 0.0) & (w == tl.floor(w))
    r = tl.where(pole, float("nan"), r)
    infinity = tl.where(tl.extra.libdevice.signbit(w) != 0, -float("inf"), float("inf"))
    r = tl.where(w == 0.0, infinity, r)
    return r.to(tl.float32)


@_inlined
def ldexp(x, n):
    """x * 2**n, exact but for the one rounding of a result outside the normal range (musl's
    `scalbn`: in two steps where 2**n is not a double)."""
    w = _wide(x, "ldexp")
    k = tl.cast(n, tl.int64)
    if x.dtype == tl.float32:  # the float64 product of a float32 and 2**k is exact
        k = tl.minimum(tl.maximum(k, -400), 400)
    else:
        up = k > 1023
        w = tl.where(up, w * 8.98846567431158e307, w)  # 2**1023
        k = tl.where(up, k - 1023, k)
        up = k > 1023
        w = tl.where(up, w * 8.98846567431158e307, w)
        k = tl.where(up, tl.minimum(k - 1023, 1023), k)
        down = k < -1022
        w = tl.where(down, w * 2.004168360008973e-292, w)  # 2**-969: stays normal
        k = tl.where(down, k + 969, k)
        down = k < -1022
        w = tl.where(down, w * 2.004168360008973e-292, w)
        k = tl.where(down, tl.maximum(k + 969, -1022), k)
    power = ((k + 1023) << 52).to(tl.float64, bitcast=True)
    return (w * power).to(x.dtype)


@_inlined
def scalbn(x, n):
    """x * 2**n (`ldexp`)."""
    return ldexp(x, n)


@_inlined
def nextafter(x, y):
    """The float after x in the direction of y (y where they are equal, NaN where either is)."""
    _check_floats(x, y, "nextafter")
    if x.dtype == tl.float64:
        bits = tl.int64
        tiny = 5e-324
    else:
        bits = tl.int32
        tiny = 1e-45
    pattern = x.to(bits, bitcast=True)
    step = tl.where((x < y) == (x > 0.0), pattern + 1, pattern - 1).to(x.dtype, bitcast=True)
    tiny = tl.full(x.shape, tiny, x.dtype)
    r = tl.where(x == 0.0, tl.extra.libdevice.copysign(tiny, y), step)
    r = tl.where(x == y, y, r)
    return tl.where((x != x) | (y != y), x + y, r)
