"""`tl.dot_scaled` (Triton 3.6's microscaled dot) against a NumPy model written here: every
format decoded from its bits by formula, scaled in the compute type (bf16, or f16 where a format
is "fp16") as Triton's decomposition does without scaled MMA, then multiplied in float64 and
compared within f32 summation error. On a GPU backend the launch is also checked against the
interpreter."""

import numpy as np
import pytest
from lang_helpers import bf16_bits, bf16_values, run

import tilec
import tilec.language as tl
from tilec.frontend import CompilationError


@tilec.jit
def scaled_kernel(a_ptr, sa_ptr, b_ptr, sb_ptr, c_ptr, M: tl.constexpr, N: tl.constexpr,
                  K: tl.constexpr, A_ROWS: tl.constexpr, A_COLS: tl.constexpr,
                  B_ROWS: tl.constexpr, B_COLS: tl.constexpr, FMT_A: tl.constexpr,
                  FMT_B: tl.constexpr, SCALE_A: tl.constexpr, SCALE_B: tl.constexpr,
                  A_K_PACK: tl.constexpr, B_K_PACK: tl.constexpr, FAST: tl.constexpr):  # fmt: skip
    a = tl.load(a_ptr + tl.arange(0, A_ROWS)[:, None] * A_COLS + tl.arange(0, A_COLS)[None, :])
    b = tl.load(b_ptr + tl.arange(0, B_ROWS)[:, None] * B_COLS + tl.arange(0, B_COLS)[None, :])
    G: tl.constexpr = K // 32
    sa = tl.load(sa_ptr + tl.arange(0, M)[:, None] * G + tl.arange(0, G)[None, :])
    sb = tl.load(sb_ptr + tl.arange(0, N)[:, None] * G + tl.arange(0, G)[None, :])
    acc = tl.full((M, N), 0.5, tl.float32)
    if SCALE_A:
        if SCALE_B:
            c = tl.dot_scaled(a, sa, FMT_A, b, sb, FMT_B, acc, FAST, A_K_PACK, B_K_PACK)
        else:
            c = tl.dot_scaled(a, sa, FMT_A, b, None, FMT_B, acc, FAST, A_K_PACK, B_K_PACK)
    else:
        if SCALE_B:
            c = tl.dot_scaled(a, None, FMT_A, b, sb, FMT_B, acc, FAST, A_K_PACK, B_K_PACK)
        else:
            c = tl.dot_scaled(a, None, FMT_A, b, None, FMT_B, acc, FAST, A_K_PACK, B_K_PACK)
    tl.store(c_ptr + tl.arange(0, M)[:, None] * N + tl.arange(0, N)[None, :], c)


def decode(bits: np.ndarray, fmt: str) -> np.ndarray:
    """The float64 values of `fmt` bit patterns (e2m1: one nibble each)."""
    bits = np.asarray(bits).astype(np.int64)
    if fmt == "bf16":
        return bf16_values(bits.astype(np.uint16)).astype(np.float64)
    if fmt == "fp16":
        return bits.astype(np.uint16).view(np.float16).astype(np.float64)
    e_bits, m_bits, bias = {"e2m1": (2, 1, 1), "e4m3": (4, 3, 7), "e5m2": (5, 2, 15)}[fmt]
    sign = np.where(bits >> (e_bits + m_bits) & 1, -1.0, 1.0)
    exponent, mantissa = (bits >> m_bits) & ((1 << e_bits) - 1), bits & ((1 << m_bits) - 1)
    normal = (1 + mantissa / 2**m_bits) * 2.0 ** (exponent - bias)
    subnormal = mantissa / 2**m_bits * 2.0 ** (1 - bias)
    return sign * np.where(exponent == 0, subnormal, normal)


def to_compute(x: np.ndarray, compute: str) -> np.ndarray:
    """float64 values rounded to the compute type (nearest even) and back."""
    if compute == "bf16":
        return bf16_values(bf16_bits(x)).astype(np.float64)
    return x.astype(np.float16).astype(np.float64)


def operand(bits: np.ndarray, fmt: str, scale, k_axis: int, k_pack: bool, compute: str):
    """An operand as Triton's decomposition computes it (`k_axis`: 1 for lhs, 0 for rhs)."""
    if fmt == "e2m1":
        axis = k_axis if k_pack else 1 - k_axis
        pairs = np.stack([decode(bits & 0xF, fmt), decode(bits >> 4, fmt)], axis=axis + 1)
        shape = list(bits.shape)
        shape[axis] *= 2
        values = pairs.reshape(shape)
    else:
        values = to_compute(decode(bits, fmt), compute)
    if scale is None:
        return values
    if k_axis == 0:
        scale = scale.T
    exponent = scale.astype(np.float64) - 127
    factor = np.where(scale == 0, 0.0, 2.0**exponent)
    factor = to_compute(factor.astype(np.float32).astype(np.float64), compute)
    factor = np.repeat(factor, 32, axis=k_axis)
    return to_compute(values * factor, compute)


def random_bits(rng, fmt: str, shape, compute: str) -> np.ndarray:
    """Random finite values of `fmt` (bf16/fp16 as their uint16 bits), e5m2 below 2 in an f16
    computation (f16 overflows at 65504)."""
    if fmt in ("bf16", "fp16"):
        values = np.clip(rng.standard_normal(shape) * 4, -60, 60)
        return bf16_bits(values) if fmt == "bf16" else values.astype(np.float16).view(np.uint16)
    bits = rng.integers(0, 256, shape, dtype=np.uint8)
    if fmt == "e4m3":  # no NaN (s.1111.111)
        bits[(bits & 0x7F) == 0x7F] ^= 0x01
    if fmt == "e5m2":  # no infinities or NaNs (exponent 11111)
        bits[(bits & 0x7C) == 0x7C] &= 0xFB
        if compute == "fp16":
            bits &= 0xBF
    return bits


def launch(a, sa, b, sb, m, n, k, fmt_a, fmt_b, a_k_pack=True, b_k_pack=True, fast=False,
           scales="uint8"):  # fmt: skip
    c = np.full((m, n), np.nan, np.float32)
    scale_a, scale_b = sa is not None, sb is not None
    unused = np.full((max(m, n), k // 32), 127, np.uint8)  # read, not used
    sa, sb = unused if sa is None else sa, unused if sb is None else sb
    kind = {"bf16": "uint16", "fp16": "uint16"}
    args = [(f"*{kind.get(fmt_a, 'uint8')}", a), (f"*{scales}", sa.view(scales)),
            (f"*{kind.get(fmt_b, 'uint8')}", b), (f"*{scales}", sb.view(scales)), ("*float32", c)]  # fmt: skip
    run(scaled_kernel, args, exact_order=False, M=m, N=n, K=k, A_ROWS=a.shape[0],
        A_COLS=a.shape[1], B_ROWS=b.shape[0], B_COLS=b.shape[1], FMT_A=fmt_a, FMT_B=fmt_b,
        SCALE_A=scale_a, SCALE_B=scale_b, A_K_PACK=a_k_pack, B_K_PACK=b_k_pack,
        FAST=fast)  # fmt: skip
    return c


CASES = [  # fmt_a, fmt_b, scale_a, scale_b, a_k_pack, b_k_pack
    ("e2m1", "bf16", True, False, True, True),
    ("bf16", "e2m1", False, True, True, True),
    ("e4m3", "e5m2", True, True, True, True),
    ("e2m1", "e2m1", True, True, False, False),
    ("e5m2", "fp16", True, False, True, True),
    ("fp16", "e2m1", False, True, True, False),
    ("bf16", "fp16", False, False, True, True),
    ("e4m3", "e2m1", False, False, True, True),
]


@pytest.mark.parametrize(("fmt_a", "fmt_b", "scale_a", "scale_b", "a_k_pack", "b_k_pack"), CASES)
def test_dot_scaled(rng, fmt_a, fmt_b, scale_a, scale_b, a_k_pack, b_k_pack):
    m, n, k = 32, 16, 64
    compute = "fp16" if "fp16" in (fmt_a, fmt_b) else "bf16"
    a_shape = (m, k // 2) if fmt_a == "e2m1" and a_k_pack else (m, k)
    a_shape = (m // 2, k) if fmt_a == "e2m1" and not a_k_pack else a_shape
    b_shape = (k // 2, n) if fmt_b == "e2m1" and b_k_pack else (k, n)
    b_shape = (k, n // 2) if fmt_b == "e2m1" and not b_k_pack else b_shape
    a, b = random_bits(rng, fmt_a, a_shape, compute), random_bits(rng, fmt_b, b_shape, compute)
    low, high = (120, 132) if compute == "fp16" else (100, 150)
    sa = rng.integers(low, high, (m, k // 32), dtype=np.uint8)
    sb = rng.integers(low, high, (n, k // 32), dtype=np.uint8)
    c = launch(a, sa if scale_a else None, b, sb if scale_b else None, m, n, k, fmt_a, fmt_b,
               a_k_pack, b_k_pack)  # fmt: skip
    a64 = operand(a, fmt_a, sa if scale_a else None, 1, a_k_pack, compute)
    b64 = operand(b, fmt_b, sb if scale_b else None, 0, b_k_pack, compute)
    expected = a64 @ b64 + 0.5
    bound = (k + 2) * 2.0**-23 * (np.abs(a64) @ np.abs(b64) + 0.5)
    assert np.isfinite(expected).all()
    assert (np.abs(c - expected) <= bound).all()


@pytest.mark.parametrize("scales", ["uint8", "int8"])
@pytest.mark.parametrize("fast", [False, True])
def test_dot_scaled_special_scales(fast, scales):
    """e8m0 0xFF is NaN: every value of its group is NaN (not with fast_math, where it is
    2**128, infinite in bf16); 0 is 0.0 in bf16, as Triton's `scaleTo16` makes it (s << 7).
    Scales loaded as int8 are the same bits (Triton zero-extends them)."""
    m, n, k = 16, 16, 64
    a = np.full((m, k), 0x38, np.uint8)  # e4m3 1.0
    b = np.full((k, n), 0x38, np.uint8)
    sa = np.full((m, k // 32), 127, np.uint8)
    sa[1, 0], sa[2, 1] = 0xFF, 0
    c = launch(a, sa, b, None, m, n, k, "e4m3", "e4m3", fast=fast, scales=scales)
    assert np.isnan(c[1]).all() if not fast else np.isposinf(c[1]).all()
    np.testing.assert_array_equal(c[2], np.float32(32 + 0.5))
    np.testing.assert_array_equal(np.delete(c, [1, 2], axis=0), np.float32(64 + 0.5))


@tilec.jit
def bad_kernel(a_ptr, c_ptr, WHICH: tl.constexpr):
    r = tl.arange(0, 32)
    a8 = tl.load(a_ptr + r[:, None] * 32 + r[None, :])
    s = tl.load(a_ptr + r[:, None] + tl.arange(0, 2)[None, :])
    if WHICH == "format":
        c = tl.dot_scaled(a8, None, "e3m3", a8, None, "e4m3")
    elif WHICH == "nyi":
        c = tl.dot_scaled(a8, None, "e2m3", a8, None, "e4m3")
    elif WHICH == "k_pack":
        c = tl.dot_scaled(a8, None, "e4m3", a8, None, "e4m3", lhs_k_pack=False)
    elif WHICH == "k":
        c = tl.dot_scaled(a8, None, "e2m1", a8, None, "e4m3")
    elif WHICH == "scale_shape":
        c = tl.dot_scaled(a8, s, "e4m3", a8, None, "e4m3")
    elif WHICH == "dtype":
        c = tl.dot_scaled(a8.to(tl.int8, bitcast=True), None, "e4m3", a8, None, "e4m3")
    else:
        c = tl.dot_scaled(a8, None, "e4m3", a8, None, "e4m3", out_dtype=tl.float16)
    tl.store(c_ptr + r[:, None] * 32 + r[None, :], c)


@pytest.mark.parametrize(
    ("which", "message"),
    [
        ("format", "invalid float format: 'e3m3'"),
        ("nyi", "NYI: lhs_format e2m3"),
        ("k_pack", "only mxfp4 inputs can be packed along a dimension different than K"),
        ("k", "reduction dimension should pack the same number of elements"),
        ("scale_shape", r"lhs_scale must be a tensor of shape \[32, 1\]. Got \[32, 2\]"),
        ("dtype", "unexpected dtype for e4m3. Got i8"),
        ("out", "only float32 is supported for out_dtype"),
    ],
)
def test_dot_scaled_errors_are_located(which, message):
    signature = {"a_ptr": "*u8", "c_ptr": "*fp32"}
    with pytest.raises(CompilationError, match=message) as error:
        tilec.compile(bad_kernel, signature, {"WHICH": which}, backend="interp")
    assert "test_language_dot_scaled.py" in str(error.value)


@tilec.jit
def fp8_scale_kernel(a_ptr, s_ptr, b_ptr, c_ptr, FAST: tl.constexpr):
    r, k = tl.arange(0, 16), tl.arange(0, 32)
    a = tl.load(a_ptr + r[:, None] * 32 + k[None, :])  # e2m1 pairs: [16, 64] values
    s = tl.load(s_ptr + r[:, None] * 4 + tl.arange(0, 4)[None, :]).to(tl.float8e4nv, bitcast=True)
    b = tl.load(b_ptr + tl.arange(0, 64)[:, None] * 16 + r[None, :])
    c = tl.dot_scaled(a, s, "e2m1", b, None, "bf16", fast_math=FAST)
    tl.store(c_ptr + r[:, None] * 16 + r[None, :], c)


@pytest.mark.parametrize("fast", [False, True])
def test_dot_scaled_float8_scales(rng, fast):
    """float8e4nv scales, one per 16 elements along K (Triton's `verify_scaled_shape`), are
    converted to the compute type and multiplied; a NaN scale makes its group NaN either way
    (the product is NaN), which fast_math cannot skip."""
    a = rng.integers(0, 256, (16, 32), dtype=np.uint8)
    s = rng.integers(0x20, 0x50, (16, 4), dtype=np.uint8)  # e4m3 from 2**-4 to 2**3
    s[5, 2] = 0x7F  # NaN
    b = random_bits(rng, "bf16", (64, 16), "bf16")
    c = np.zeros((16, 16), np.float32)
    run(fp8_scale_kernel, [("*uint8", a), ("*uint8", s), ("*uint16", b), ("*float32", c)],
        exact_order=False, FAST=fast)  # fmt: skip
    pairs = np.stack([decode(a & 0xF, "e2m1"), decode(a >> 4, "e2m1")], axis=2).reshape(16, 64)
    factor = np.repeat(to_compute(decode(s, "e4m3"), "bf16"), 16, axis=1)
    factor[5, 32:48] = np.nan
    a64 = to_compute(pairs * factor, "bf16")
    b64 = decode(b, "bf16")
    expected = a64 @ b64
    assert np.isnan(c[5]).all() and np.isnan(expected[5]).all()
    rows = [i for i in range(16) if i != 5]
    bound = 66 * 2.0**-23 * (np.abs(a64[rows]) @ np.abs(b64))
    assert (np.abs(c[rows] - expected[rows]) <= bound).all()
