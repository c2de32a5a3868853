"""`tile.fp_to_fp` -> LLVM IR: 8-bit floats to and from f16/bf16/f32/f64, bit for bit as the
interpreter converts them (`tilec.ir.float8` defines the formats and the rounding).

An 8-bit float is its code in an i8. Where the target has an instruction for the conversion
(`TargetInfo.float8_convert`: NVIDIA's `cvt` for e4m3/e5m2 on sm_89 and later) it is used;
everywhere else the conversion is integer arithmetic:

- decoding builds the f32 as `significand * 2**exponent` (both exact) and ORs in the sign; NaN
  codes give the interpreter's NaN, e5m2's inf codes +-inf;
- encoding takes the source's bits (in i32, or i64 for f64: one rounding from any source), shifts
  the significand to the 8-bit format's precision (more for its subnormals), rounds to nearest
  even (e4b15: half away from zero) and saturates (`tilec.ir.float8.encode_bits`, step by step).
"""

from __future__ import annotations

from llvmlite import ir

from tilec.dialects.float8 import FpToFpOp
from tilec.ir.float8 import FORMATS, SOURCES, Float8Format
from tilec.ir.types import Float8Type, FloatType, element_type
from tilec.lowering.context import F32, I8, I32, I64, LoweringContext, llvm_type, lowers
from tilec.lowering.elementwise import map_registers

NAN_BITS = 0x7FC00000
"""The f32 a NaN code decodes to (the interpreter's, `tilec_interp.float8.NAN_BITS`)."""


@lowers(FpToFpOp)
def _fp_to_fp(ctx: LoweringContext, op: FpToFpOp) -> None:
    src = element_type(op.operands[0].type)
    dst = element_type(op.results[0].type)
    b = ctx.builder

    def emit(x: ir.Value) -> ir.Value:
        converted = ctx.target.float8_convert(b, x, str(src), str(dst))
        if converted is not None:
            return converted
        if isinstance(src, Float8Type):
            value = decode(b, x, FORMATS[src])
            if isinstance(dst, Float8Type):
                return encode(b, value, "f32", FORMATS[dst])
            return from_f32(b, value, dst)
        assert isinstance(src, FloatType) and isinstance(dst, Float8Type)
        return encode(b, x, src.name, FORMATS[dst])

    map_registers(ctx, op, emit)


def from_f32(b: ir.IRBuilder, value: ir.Value, dst: FloatType) -> ir.Value:
    """An f32 that holds an 8-bit float's value as `dst` (exact: every such value is an f16)."""
    ty = llvm_type(dst)
    if dst.name == "f32":
        return value
    if dst.name == "f64":
        return b.fpext(value, ty)
    return b.fptrunc(value, ty)


def decode(b: ir.IRBuilder, code: ir.Value, fmt: Float8Format) -> ir.Value:
    """The f32 value of i8 `code` in format `fmt`."""
    c = b.zext(code, I32)
    mantissa_bits = fmt.mantissa_bits
    sign = b.shl(b.and_(c, I32(0x80)), I32(24))
    magnitude = b.and_(c, I32(0x7F))
    exponent = b.lshr(magnitude, I32(mantissa_bits))
    mantissa = b.and_(magnitude, I32((1 << mantissa_bits) - 1))
    normal = b.icmp_unsigned("!=", exponent, I32(0))
    significand = b.or_(mantissa, b.shl(b.zext(normal, I32), I32(mantissa_bits)))
    exponent = b.select(normal, exponent, I32(1))
    # 2**(exponent - bias - mantissa_bits) as f32 bits: always a normal f32
    scale_bits = b.shl(b.add(exponent, I32(127 - fmt.bias - mantissa_bits)), I32(23))
    value = b.fmul(b.uitofp(significand, F32), b.bitcast(scale_bits, F32))
    bits = b.or_(b.bitcast(value, I32), sign)
    if fmt.inf_code is not None:
        inf = b.icmp_unsigned("==", magnitude, I32(fmt.inf_code))
        bits = b.select(inf, b.or_(sign, I32(0x7F800000)), bits)
        nan = b.icmp_unsigned(">", magnitude, I32(fmt.inf_code))
        bits = b.select(nan, I32(NAN_BITS), bits)
    elif fmt.fnuz:
        bits = b.select(b.icmp_unsigned("==", c, I32(0x80)), I32(NAN_BITS), bits)
    elif fmt.nan_code is not None:
        bits = b.select(b.icmp_unsigned("==", magnitude, I32(0x7F)), I32(NAN_BITS), bits)
    return b.bitcast(bits, F32)


def encode(b: ir.IRBuilder, x: ir.Value, source_name: str, fmt: Float8Format) -> ir.Value:
    """The i8 code in `fmt` of float `x` of format `source_name` (`f16`, `bf16`, `f32`, `f64`)."""
    source = SOURCES[source_name]
    ty = I64 if source.width == 64 else I32
    bits = b.bitcast(x, ir.IntType(source.width))
    if source.width < ty.width:
        bits = b.zext(bits, ty)
    sign = b.and_(b.lshr(bits, ty(source.width - 1)), ty(1))
    magnitude = b.and_(bits, ty((1 << (source.width - 1)) - 1))
    exponent = b.lshr(magnitude, ty(source.mantissa_bits))
    mantissa = b.and_(magnitude, ty((1 << source.mantissa_bits) - 1))
    normal = b.icmp_unsigned("!=", exponent, ty(0))
    significand = b.or_(mantissa, b.shl(b.zext(normal, ty), ty(source.mantissa_bits)))
    unbiased = b.sub(b.select(normal, exponent, ty(1)), ty(source.bias))
    below = b.sub(ty(fmt.min_exponent), unbiased)  # a subnormal source: as `encode_bits`
    below = b.select(normal, _max0(b, below), below)
    shift = b.add(below, ty(source.mantissa_bits - fmt.mantissa_bits))
    limit = ty(source.mantissa_bits + 2)
    shift = b.select(b.icmp_signed(">", shift, limit), limit, shift)
    quotient = b.lshr(significand, shift)
    remainder = b.and_(significand, b.sub(b.shl(ty(1), shift), ty(1)))
    half = b.shl(ty(1), b.sub(shift, ty(1)))
    if fmt.ties_away:
        up = b.icmp_unsigned(">=", remainder, half)
    else:
        odd = b.icmp_unsigned("!=", b.and_(quotient, ty(1)), ty(0))
        tie = b.and_(b.icmp_unsigned("==", remainder, half), odd)
        up = b.or_(b.icmp_unsigned(">", remainder, half), tie)
    rounded = b.add(quotient, b.zext(up, ty))
    above = b.select(normal, _max0(b, b.sub(unbiased, ty(fmt.min_exponent))), ty(0))
    code = b.add(b.shl(above, ty(fmt.mantissa_bits)), rounded)
    saturation = ty(fmt.saturation_code)
    code = b.select(b.icmp_unsigned(">", code, saturation), saturation, code)
    code = b.select(b.icmp_unsigned("==", magnitude, ty(source.inf_bits)), saturation, code)
    signed = b.or_(b.shl(sign, ty(7)), code)
    if fmt.fnuz:
        signed = b.select(b.icmp_unsigned("==", code, ty(0)), ty(0), signed)
    nan = b.icmp_unsigned(">", magnitude, ty(source.inf_bits))
    if fmt.nan_code is None:
        nan_code = b.or_(b.shl(sign, ty(7)), saturation)
    else:
        nan_code = ty(fmt.nan_code)
    return b.trunc(b.select(nan, nan_code, signed), I8)


def _max0(b: ir.IRBuilder, value: ir.Value) -> ir.Value:
    """max(value, 0) of a signed integer."""
    return b.select(b.icmp_signed("<", value, value.type(0)), value.type(0), value)
