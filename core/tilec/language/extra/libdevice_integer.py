"""libdevice's integer functions that tilec writes in `tl`, inlined where a kernel calls them
(`tl.extra.libdevice` gives them with the others): the bit functions `clz`, `popc`, `brev`,
`ffs` and `byte_perm`, the arithmetic `mulhi` (32- and 64-bit, signed and not), `mul24`, `sad`,
`hadd`, `rhadd`, and the words of a float64, `double2loint`, `double2hiint`, `hiloint2double`.
Each is exact, as libdevice's: shifts, masks and sums of bits (SWAR), wide products through 32-bit
halves where no wider integer exists.
"""

from tilec import language as tl
from tilec.frontend.kernel import KernelFunction as _inlined


@_inlined
def _unsigned(x, name: tl.constexpr):
    """The bits of int32/int64 `x` (or of its unsigned kin) as an unsigned integer."""
    tl.static_assert(
        x.dtype == tl.int32 or x.dtype == tl.uint32 or x.dtype == tl.int64 or x.dtype == tl.uint64,
        "libdevice." + name + " takes a 32- or 64-bit integer",
    )
    if x.dtype == tl.int64 or x.dtype == tl.uint64:
        u = x.to(tl.uint64, bitcast=True)
    else:
        u = x.to(tl.uint32, bitcast=True)
    return u


@_inlined
def _width(x):
    if x.dtype == tl.int64 or x.dtype == tl.uint64:
        n = 64
    else:
        n = 32
    return n


@_inlined
def _popcount(u):
    """Set bits of unsigned `u` (SWAR sums of 2, 4, 8 bits, then of the bytes), as int32."""
    if u.dtype == tl.uint64:
        v = u - ((u >> 1) & 0x5555555555555555)
        v = (v & 0x3333333333333333) + ((v >> 2) & 0x3333333333333333)
        v = (v + (v >> 4)) & 0x0F0F0F0F0F0F0F0F
        r = (v * 0x0101010101010101) >> 56
    else:
        v = u - ((u >> 1) & 0x55555555)
        v = (v & 0x33333333) + ((v >> 2) & 0x33333333)
        v = (v + (v >> 4)) & 0x0F0F0F0F
        r = (v * 0x01010101) >> 24
    return r.to(tl.int32)


@_inlined
def clz(x):
    """Leading zero bits of a 32- or 64-bit integer (its width for 0), as int32."""
    u = _unsigned(x, "clz")
    width: tl.constexpr = _width(x)
    n = (u * 0).to(tl.int32)
    for i in tl.static_range(6 if width == 64 else 5):
        shift: tl.constexpr = (width // 2) >> i
        empty = (u >> (width - shift)) == 0
        n = tl.where(empty, n + shift, n)
        u = tl.where(empty, u << shift, u)
    return tl.where(x == 0, width, n)


@_inlined
def popc(x):
    """Set bits of a 32- or 64-bit integer, as int32."""
    return _popcount(_unsigned(x, "popc"))


@_inlined
def brev(x):
    """The bits of a 32- or 64-bit integer in reverse order, in its type."""
    u = _unsigned(x, "brev")
    if u.dtype == tl.uint64:
        u = ((u >> 1) & 0x5555555555555555) | ((u & 0x5555555555555555) << 1)
        u = ((u >> 2) & 0x3333333333333333) | ((u & 0x3333333333333333) << 2)
        u = ((u >> 4) & 0x0F0F0F0F0F0F0F0F) | ((u & 0x0F0F0F0F0F0F0F0F) << 4)
        u = ((u >> 8) & 0x00FF00FF00FF00FF) | ((u & 0x00FF00FF00FF00FF) << 8)
        u = ((u >> 16) & 0x0000FFFF0000FFFF) | ((u & 0x0000FFFF0000FFFF) << 16)
        u = (u >> 32) | (u << 32)
    else:
        u = ((u >> 1) & 0x55555555) | ((u & 0x55555555) << 1)
        u = ((u >> 2) & 0x33333333) | ((u & 0x33333333) << 2)
        u = ((u >> 4) & 0x0F0F0F0F) | ((u & 0x0F0F0F0F) << 4)
        u = ((u >> 8) & 0x00FF00FF) | ((u & 0x00FF00FF) << 8)
        u = (u >> 16) | (u << 16)
    return u.to(x.dtype, bitcast=True)


@_inlined
def ffs(x):
    """The position (from 1) of the lowest set bit of a 32- or 64-bit integer, 0 for 0, as
    int32."""
    u = _unsigned(x, "ffs")
    lowest = u & (0 - u)
    return tl.where(x == 0, 0, _popcount(lowest - 1) + 1)


@_inlined
def byte_perm(x, y, s):
    """Byte i of the result is byte `(s >> 4i) & 7` of the 8 bytes `y:x` (x the low word)."""
    lo = x.to(tl.uint32, bitcast=True)
    hi = y.to(tl.uint32, bitcast=True)
    selector = s.to(tl.uint32, bitcast=True)
    r = lo * 0
    for i in tl.static_range(4):
        which = (selector >> (4 * i)) & 7
        low_byte = (lo >> (8 * (which & 3))) & 0xFF
        high_byte = (hi >> (8 * (which & 3))) & 0xFF
        r = r | (tl.where(which < 4, low_byte, high_byte) << (8 * i))
    return r.to(tl.int32, bitcast=True)


@_inlined
def _unsigned_high_64(a, b):
    """The high 64 bits of the 128-bit product of uint64 a and b, through 32-bit halves."""
    a_lo = a & 0xFFFFFFFF
    a_hi = a >> 32
    b_lo = b & 0xFFFFFFFF
    b_hi = b >> 32
    cross = ((a_lo * b_lo) >> 32) + ((a_hi * b_lo) & 0xFFFFFFFF) + a_lo * b_hi
    return a_hi * b_hi + ((a_hi * b_lo) >> 32) + (cross >> 32)


@_inlined
def mulhi(x, y):
    """The high half of the double-width product of two int32, uint32, int64 or uint64."""
    tl.static_assert(
        x.dtype == y.dtype
        and (
            x.dtype == tl.int32
            or x.dtype == tl.uint32
            or x.dtype == tl.int64
            or x.dtype == tl.uint64
        ),
        "libdevice.mulhi takes two integers of one type: int32, uint32, int64 or uint64",
    )
    if x.dtype == tl.int32:
        r = ((x.to(tl.int64) * y.to(tl.int64)) >> 32).to(tl.int32)
    elif x.dtype == tl.uint32:
        r = ((x.to(tl.uint64) * y.to(tl.uint64)) >> 32).to(tl.uint32)
    elif x.dtype == tl.uint64:
        r = _unsigned_high_64(x, y)
    else:  # signed: the unsigned product less b where a < 0 and a where b < 0 (mod 2**64)
        a = x.to(tl.uint64, bitcast=True)
        b = y.to(tl.uint64, bitcast=True)
        h = _unsigned_high_64(a, b) - tl.where(x < 0, b, 0) - tl.where(y < 0, a, 0)
        r = h.to(tl.int64, bitcast=True)
    return r


@_inlined
def mul24(x, y):
    """The low 32 bits of the product of the low 24 bits of x and y (signed 24-bit values for
    int32, as PTX's `mul24.lo.s32`)."""
    tl.static_assert(
        x.dtype == y.dtype and (x.dtype == tl.int32 or x.dtype == tl.uint32),
        "libdevice.mul24 takes two int32 or two uint32",
    )
    if x.dtype == tl.int32:
        r = (((x << 8) >> 8).to(tl.int64) * ((y << 8) >> 8).to(tl.int64)).to(tl.int32)
    else:
        r = ((x & 0xFFFFFF).to(tl.uint64) * (y & 0xFFFFFF).to(tl.uint64)).to(tl.uint32)
    return r


@_inlined
def sad(x, y, z):
    """|x - y| + z, in 32 bits (int32 or uint32 x and y, uint32 z)."""
    tl.static_assert(
        x.dtype == y.dtype and (x.dtype == tl.int32 or x.dtype == tl.uint32),
        "libdevice.sad takes two int32 or two uint32 and a uint32",
    )
    if x.dtype == tl.int32:
        a = x.to(tl.int64)
        b = y.to(tl.int64)
    else:
        a = x.to(tl.uint64)
        b = y.to(tl.uint64)
    difference = tl.where(a > b, a - b, b - a).to(tl.uint64, bitcast=True)
    return (difference + z.to(tl.uint32, bitcast=True).to(tl.uint64)).to(x.dtype)


@_inlined
def _average(x, y, up, name: tl.constexpr):
    tl.static_assert(
        x.dtype == y.dtype and (x.dtype == tl.int32 or x.dtype == tl.uint32),
        "libdevice." + name + " takes two int32 or two uint32",
    )
    if x.dtype == tl.int32:
        r = ((x.to(tl.int64) + y.to(tl.int64) + up) >> 1).to(tl.int32)
    else:
        r = ((x.to(tl.uint64) + y.to(tl.uint64) + up) >> 1).to(tl.uint32)
    return r


@_inlined
def hadd(x, y):
    """(x + y) >> 1 without overflow (the floor of the average)."""
    return _average(x, y, 0, "hadd")


@_inlined
def rhadd(x, y):
    """(x + y + 1) >> 1 without overflow (the average, rounded up)."""
    return _average(x, y, 1, "rhadd")


@_inlined
def double2loint(x):
    """The low 32 bits of float64 `x`, as int32."""
    return x.to(tl.int64, bitcast=True).to(tl.int32)


@_inlined
def double2hiint(x):
    """The high 32 bits of float64 `x`, as int32."""
    return (x.to(tl.int64, bitcast=True) >> 32).to(tl.int32)


@_inlined
def hiloint2double(hi, lo):
    """The float64 whose high and low 32 bits are int32 `hi` and `lo`."""
    low = lo.to(tl.uint32, bitcast=True).to(tl.int64)
    return ((hi.to(tl.int64) << 32) | low).to(tl.float64, bitcast=True)
