"""Kernels of the float8 tests (tests/compat/test_compat_float8.py, and on a GPU
test_compat_float8_gpu.py): 8-bit floats loaded, converted, computed with and stored."""

import tilec
import tilec.language as tl


@tilec.jit
def decode_kernel(codes_ptr, f32_ptr, f16_ptr, f64_ptr, FMT: tl.constexpr, BLOCK: tl.constexpr):
    """Codes (uint8) reinterpreted as FMT, converted to f32, f16 and f64."""
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(codes_ptr + offs).to(FMT, bitcast=True)
    tl.store(f32_ptr + offs, x.to(tl.float32))
    tl.store(f16_ptr + offs, x.to(tl.float16))
    tl.store(f64_ptr + offs, x.to(tl.float64))


@tilec.jit
def encode_kernel(x_ptr, codes_ptr, n, FMT: tl.constexpr, BLOCK: tl.constexpr):
    """Floats of x_ptr's type converted to FMT (Triton's default rounding), stored as codes."""
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    tl.store(codes_ptr + offs, x.to(FMT).to(tl.uint8, bitcast=True), mask=mask)


@tilec.jit
def recode_kernel(codes_ptr, out_ptr, SRC: tl.constexpr, DST: tl.constexpr, BLOCK: tl.constexpr):
    """Codes of SRC converted to DST (through the exact value)."""
    offs = tl.arange(0, BLOCK)
    x = tl.load(codes_ptr + offs).to(SRC, bitcast=True)
    tl.store(out_ptr + offs, x.to(DST).to(tl.uint8, bitcast=True))


@tilec.jit
def scale_kernel(x_ptr, scale_ptr, y_ptr, n, BLOCK: tl.constexpr):
    """fp8 in memory: y = fp8(x * scale) with x and y pointers to 8-bit floats."""
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    y = x.to(tl.float32) * tl.load(scale_ptr)
    tl.store(y_ptr + offs, y.to(y_ptr.dtype.element_ty), mask=mask)


@tilec.jit
def mixed_kernel(a_ptr, b_ptr, h_ptr, out_ptr, BLOCK: tl.constexpr):
    """Triton's promotions with an 8-bit operand: e4nv + f16 is f16, e4nv * e5 is f16, and
    zeros and full of an 8-bit dtype."""
    offs = tl.arange(0, BLOCK)
    a = tl.load(a_ptr + offs).to(tl.float8e4nv, bitcast=True)
    b = tl.load(b_ptr + offs).to(tl.float8e5, bitcast=True)
    h = tl.load(h_ptr + offs)
    z = tl.zeros((BLOCK,), dtype=tl.float8e4nv)
    q = tl.full((BLOCK,), 1.25, tl.float8e5)
    out = (a + h) + (a * b) + z.to(tl.float16) + q.to(tl.float16)
    tl.store(out_ptr + offs, out)


@tilec.jit
def dot_kernel(a_ptr, b_ptr, c_ptr, M: tl.constexpr, N: tl.constexpr, K: tl.constexpr,
               A_FMT: tl.constexpr, B_FMT: tl.constexpr):  # fmt: skip
    """tl.dot of two 8-bit float blocks (any formats), accumulated in f32."""
    rm, rn, rk = tl.arange(0, M), tl.arange(0, N), tl.arange(0, K)
    a = tl.load(a_ptr + rm[:, None] * K + rk[None, :]).to(A_FMT, bitcast=True)
    b = tl.load(b_ptr + rk[:, None] * N + rn[None, :]).to(B_FMT, bitcast=True)
    tl.store(c_ptr + rm[:, None] * N + rn[None, :], tl.dot(a, b))


@tilec.jit
def scalar_kernel(s, out_ptr):
    """A scalar 8-bit float parameter, converted; its x.to(tl.int1) is whether it is nonzero."""
    v = s.to(tl.float32)
    tl.store(out_ptr, v)
    tl.store(out_ptr + 1, v * 2)
    tl.store(out_ptr + 2, (s.to(tl.int1) == 0).to(tl.float32))


@tilec.jit
def moves_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    """8-bit values moved, not computed with (as Triton allows): a masked load with `other`,
    tl.where with a Python number, and a transpose through reshapes."""
    offs = tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask, other=0.5)
    x = tl.where(x.to(tl.float32) > 2.0, x, 1.5)
    t = tl.reshape(tl.trans(tl.reshape(x, (BLOCK // 8, 8))), (BLOCK,))
    tl.store(y_ptr + offs, t)
