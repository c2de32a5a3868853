"""`arith.*` -> LLVM IR, register by register, with the interpreter's semantics.

Where LLVM leaves a result undefined (poison or UB), the lowering adds the guard that gives the
interpreter's (`tilec_interp.ops`) answer; guards on constant operands fold away:

- integer division and remainder by zero give 0; `divsi` of the minimum by -1 wraps;
- shifts by the width or more give 0 (`shli`, `shrui`) or the sign fill (`shrsi`);
- `fptosi` / `fptoui` saturate and send NaN to 0 (`llvm.fpto[su]i.sat`, PTX `cvt.rzi.sat`).
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from math import gcd
from typing import Any

from llvmlite import ir

from tilec.dialects import arith
from tilec.ir.attributes import DenseAttr, FloatAttr, IntegerAttr
from tilec.ir.core import Operation, Value
from tilec.ir.types import FloatType, TensorType, element_type
from tilec.layout.mapping import ThreadMapping, thread_mapping
from tilec.lowering.context import (
    I1,
    LoweringContext,
    LoweringError,
    LTensor,
    _where,
    call_intrinsic,
    llvm_type,
    lowers,
)

Emit = Callable[..., ir.Value]


def map_registers(ctx: LoweringContext, op: Operation, emit: Emit) -> None:
    """Bind `op`'s result to `emit(*operands)` applied register by register (scalar operands,
    such as a scalar `select` condition, are used for every register). Registers that the axis
    info proves equal (`same_registers`) share the first one's value, as Triton's
    `maybeDeduplicate`: a mask `cols < N` with N divisible by 16 is one compare a vector."""
    operands = [ctx.get(v) for v in op.operands]
    result_type = op.results[0].type
    if not isinstance(result_type, TensorType):
        ctx.set(op.results[0], emit(*operands))
        return
    count = next(len(x.values) for x in operands if isinstance(x, LTensor))
    first = same_registers(ctx, op.results[0], count)
    values: list[ir.Value] = []
    for i in range(count):
        if first[i] != i:
            values.append(values[first[i]])
            continue
        values.append(emit(*[x.values[i] if isinstance(x, LTensor) else x for x in operands]))
    ctx.set(op.results[0], LTensor(result_type, values))


def same_registers(ctx: LoweringContext, value: Value, count: int) -> tuple[int, ...]:
    """Per register of tensor `value`, the first register known to hold an equal element: the
    same run of `constancy` elements (axis info) along every dimension, where runs start at
    multiples of the constancy and every thread's first element along the dimension is a
    multiple of it too (its lane and warp steps are)."""
    info = ctx.axis_info_of(value)
    if info is None or all(c == 1 for c in info.constancy):
        return tuple(range(count))
    mapping = thread_mapping(value.type.encoding, value.type.shape)
    if mapping.num_registers != count:
        return tuple(range(count))
    return _first_of_runs(mapping, info.constancy)


@functools.cache
def _first_of_runs(mapping: ThreadMapping, constancy: tuple[int, ...]) -> tuple[int, ...]:
    runs = []
    for d, (dim, const) in enumerate(zip(mapping.dims, constancy, strict=True)):
        step = gcd(const, mapping.shape[d])
        if dim.lane_count > 1:
            step = gcd(step, dim.lane_scale)
        if dim.warp_count > 1:
            step = gcd(step, dim.warp_scale)
        runs.append(max(step, 1))
    first: dict[tuple[int, ...], int] = {}
    return tuple(
        first.setdefault(tuple(o // r for o, r in zip(reg, runs, strict=True)), i)
        for i, reg in enumerate(mapping.registers)
    )


def constant_value(ctx: LoweringContext, attr: IntegerAttr | FloatAttr) -> ir.Constant:
    ty = llvm_type(attr.type, ctx.target)
    if isinstance(attr, IntegerAttr):
        return ir.Constant(ty, attr.value & ((1 << attr.type.width) - 1))
    return ir.Constant(ty, attr.value)


@lowers(arith.ConstantOp)
def _constant(ctx: LoweringContext, op: arith.ConstantOp) -> None:
    attr = op.value
    if isinstance(attr, DenseAttr):
        value = constant_value(ctx, attr.value)
        count = LTensor(attr.type, []).mapping.num_registers
        ctx.set(op.result, LTensor(op.result.type, [value] * count))
        return
    ctx.set(op.result, constant_value(ctx, attr))


# Integer arithmetic ----------------------------------------------------------------------------

_SIMPLE: dict[type[Operation], str] = {
    arith.AddIOp: "add",
    arith.SubIOp: "sub",
    arith.MulIOp: "mul",
    arith.AndIOp: "and_",
    arith.OrIOp: "or_",
    arith.XOrIOp: "xor",
    arith.AddFOp: "fadd",
    arith.SubFOp: "fsub",
    arith.MulFOp: "fmul",
}


_CONTRACTIBLE = (arith.AddFOp, arith.SubFOp, arith.MulFOp)
"""The float ops marked `contract` under `enable_fp_fusion` (a multiply and the add or subtract
of its result may become one FMA)."""


def _constant_addend(value: ir.Value) -> tuple[ir.Value, ir.Constant] | None:
    """(z, c) where `value` is an integer `add z, c` of a constant c this lowering emitted."""
    if not isinstance(value, ir.Instruction) or value.opname != "add" or value.flags:
        return None
    z, c = value.operands
    return (z, c) if isinstance(c, ir.Constant) and not isinstance(z, ir.Constant) else None


def add_constant_last(b: ir.IRBuilder, x: ir.Value, y: ir.Value) -> ir.Value:
    """`x + y`, with a constant addend of either operand added last: `x + (z + c)` becomes
    `(x + z) + c` (integer addition wraps, so the two are equal). A register's index is
    the thread's first element plus a constant (`make_range`: `element_coords` + start), so
    `offs = start_m + arange` keeps its constant outermost, where LLVM moves it through a later
    shift or multiply by a constant (`(x + 8) << 7` -> `(x << 7) | 1024`) and NVPTX's
    SeparateConstOffsetFromGEP out of the 64-bit index into the load's immediate offset, as it
    does for Triton's indices (`emitIndices` adds each register's constant to the thread's
    base). Nested inside, it stays under the shift and the sign extension: one 64-bit address
    computation a register.

    A phi (a loop's induction variable or carried value) keeps `x + (z + c)`: in the loop,
    `z + c` is invariant and LLVM splits `c` off the address either way (`first + arange` in
    the sweep's cross-entropy loop loads at `[%rd]` and `[%rd+4096]` in both forms), so the
    rewrite saves nothing there; it only made LLVM hoist `base + z * size` rather than keep
    Triton's `(base + first * size) + z * size`, and on that form ptxas gave a loop-carried
    value a register of the second 16-byte load's destination, which then waited for the first
    load's data (4 of the sweep's 5 cross-entropy kernels, 0.93x Triton's time)."""
    for p, q in ((x, y), (y, x)):
        inner = None if isinstance(p, ir.Constant | ir.PhiInstr) else _constant_addend(q)
        if inner is not None:
            return b.add(b.add(p, inner[0]), inner[1])
    return b.add(x, y)


@lowers(*_SIMPLE)
def _simple(ctx: LoweringContext, op: arith.BinaryOp) -> None:
    method = getattr(ctx.builder, _SIMPLE[type(op)])
    if isinstance(op, arith.AddIOp):
        method = functools.partial(add_constant_last, ctx.builder)
    if ctx.target.fp_fusion and type(op) in _CONTRACTIBLE and op.nocontract is None:

        def method(x: ir.Value, y: ir.Value, emit: Any = method) -> ir.Value:
            return emit(x, y, flags=("contract",))

    map_registers(ctx, op, method)


@lowers(arith.DivFOp)
def _divf(ctx: LoweringContext, op: arith.DivFOp) -> None:
    """`fdiv` (correctly rounded), or the target's faster division (`TargetInfo.fast_division`)
    where the op is not `ieee`: Triton's `/`."""
    b = ctx.builder
    dtype = element_type(op.result.type).name

    def emit(x: ir.Value, y: ir.Value) -> ir.Value:
        fast = None if op.ieee is not None else ctx.target.fast_division(b, x, y, dtype)
        return b.fdiv(x, y) if fast is None else fast

    map_registers(ctx, op, emit)


@lowers(arith.RemFOp)
def _remf(ctx: LoweringContext, op: arith.RemFOp) -> None:
    """`frem` with C's fmod semantics: the result has the dividend's sign, also when it is zero.

    Targets expand `frem` as `x - trunc(x / y) * y`, which gives +0.0 for a negative dividend
    that is an exact multiple, and can be one `y` off when `x / y` rounds to an integer. f16,
    bf16 and f32 are computed in f64 (their quotient cannot round to an integer there, and the
    remainder is exact in the narrow type); the sign is then copied from the dividend.
    """
    b = ctx.builder
    t = element_type(op.result.type)
    ty = llvm_type(t, ctx.target)
    f64 = ir.DoubleType()
    narrow = isinstance(t, FloatType) and t.name != "f64"

    def emit(x: ir.Value, y: ir.Value) -> ir.Value:
        if narrow:
            x, y = b.fpext(x, f64), b.fpext(y, f64)
        remainder = call_intrinsic(b, "llvm.copysign.f64", f64, [b.frem(x, y), x])
        return b.fptrunc(remainder, ty) if narrow else remainder

    map_registers(ctx, op, emit)


@lowers(arith.NegFOp)
def _negf(ctx: LoweringContext, op: arith.NegFOp) -> None:
    map_registers(ctx, op, ctx.builder.fneg)


def _zero(value: ir.Value) -> ir.Constant:
    return ir.Constant(value.type, 0)


_DIVISIONS: dict[type[Operation], tuple[bool, bool]] = {
    arith.DivSIOp: (True, False),
    arith.RemSIOp: (True, True),
    arith.DivUIOp: (False, False),
    arith.RemUIOp: (False, True),
}
"""Per integer division op: (signed, remainder)."""


def _never_minus_one(ctx: LoweringContext, value: Value) -> bool:
    """Whether the axis-info analysis proves no element of `value` is -1: a known constant other
    than -1, or every element divisible by 2 or more (each the start of its group: contiguity 1
    along every dimension), as a parameter the specialization found a multiple of 16."""
    info = ctx.axis_info_of(value)
    if info is None:
        return False
    if info.constant is not None:
        return info.constant != -1
    return all(c == 1 for c in info.contiguity) and min(info.divisibility, default=1) >= 2


@lowers(*_DIVISIONS)
def _divrem(ctx: LoweringContext, op: arith.BinaryOp) -> None:
    b = ctx.builder
    signed, remainder = _DIVISIONS[type(op)]
    # -1 is replaced too where it may be the divisor: x / -1 is -x (wrapping), x % -1 is 0, with
    # no INT_MIN overflow
    minus_one = signed and not _never_minus_one(ctx, op.operands[1])

    def emit(x: ir.Value, y: ir.Value) -> ir.Value:
        ty = x.type
        unsafe = b.icmp_unsigned("==", y, _zero(y))
        if minus_one:
            unsafe = b.or_(unsafe, b.icmp_signed("==", y, ir.Constant(ty, -1)))
        divisor = b.select(unsafe, ir.Constant(ty, 1), y)
        if signed:
            result = b.srem(x, divisor) if remainder else b.sdiv(x, divisor)
        else:
            result = b.urem(x, divisor) if remainder else b.udiv(x, divisor)
        if remainder:  # x % 1 is 0: what x % 0 and x % -1 give, so no select
            return result
        if not minus_one:  # unsafe: y is 0, and x / 0 is 0
            return b.select(unsafe, _zero(x), result)
        by_minus_one = b.sub(_zero(x), x)
        special = b.select(b.icmp_unsigned("==", y, _zero(y)), _zero(x), by_minus_one)
        return b.select(unsafe, special, result)

    map_registers(ctx, op, emit)


@lowers(arith.ShLIOp, arith.ShRUIOp, arith.ShRSIOp)
def _shift(ctx: LoweringContext, op: arith.BinaryOp) -> None:
    b = ctx.builder

    def emit(x: ir.Value, amount: ir.Value) -> ir.Value:
        width = ir.Constant(x.type, x.type.width)
        too_far = b.icmp_unsigned(">=", amount, width)
        if isinstance(op, arith.ShRSIOp):
            clamped = b.select(too_far, ir.Constant(x.type, x.type.width - 1), amount)
            return b.ashr(x, clamped)
        shifted = b.shl(x, amount) if isinstance(op, arith.ShLIOp) else b.lshr(x, amount)
        return b.select(too_far, _zero(x), shifted)

    map_registers(ctx, op, emit)


_MINMAX: dict[type[Operation], tuple[bool, str]] = {
    arith.MaxSIOp: (True, ">"),
    arith.MinSIOp: (True, "<"),
    arith.MaxUIOp: (False, ">"),
    arith.MinUIOp: (False, "<"),
}


@lowers(*_MINMAX)
def _minmax_int(ctx: LoweringContext, op: arith.BinaryOp) -> None:
    b = ctx.builder
    signed, predicate = _MINMAX[type(op)]
    compare = b.icmp_signed if signed else b.icmp_unsigned
    map_registers(ctx, op, lambda x, y: b.select(compare(predicate, x, y), x, y))


_FLOAT_MINMAX: dict[type[Operation], str] = {
    arith.MaxNumFOp: "llvm.maxnum",
    arith.MinNumFOp: "llvm.minnum",
    arith.MaximumFOp: "llvm.maximum",
    arith.MinimumFOp: "llvm.minimum",
}


@lowers(*_FLOAT_MINMAX)
def _minmax_float(ctx: LoweringContext, op: arith.BinaryOp) -> None:
    b = ctx.builder
    intrinsic = _FLOAT_MINMAX[type(op)]

    def emit(x: ir.Value, y: ir.Value) -> ir.Value:
        return call_intrinsic(b, f"{intrinsic}.{x.type.intrinsic_name}", x.type, [x, y])

    map_registers(ctx, op, emit)


# Comparisons and select ------------------------------------------------------------------------

_INT_PREDICATES = {
    "eq": (False, "=="),
    "ne": (False, "!="),
    "slt": (True, "<"),
    "sle": (True, "<="),
    "sgt": (True, ">"),
    "sge": (True, ">="),
    "ult": (False, "<"),
    "ule": (False, "<="),
    "ugt": (False, ">"),
    "uge": (False, ">="),
}
_FLOAT_OPS = {"eq": "==", "ne": "!=", "lt": "<", "le": "<=", "gt": ">", "ge": ">="}


@lowers(arith.CmpIOp)
def _cmpi(ctx: LoweringContext, op: arith.CmpIOp) -> None:
    b = ctx.builder
    signed, predicate = _INT_PREDICATES[op.predicate_str]
    compare = b.icmp_signed if signed else b.icmp_unsigned
    map_registers(ctx, op, lambda x, y: compare(predicate, x, y))


@lowers(arith.CmpFOp)
def _cmpf(ctx: LoweringContext, op: arith.CmpFOp) -> None:
    b = ctx.builder
    predicate = op.predicate_str

    def emit(x: ir.Value, y: ir.Value) -> ir.Value:
        if predicate in ("true", "false"):
            return ir.Constant(I1, int(predicate == "true"))
        if predicate in ("ord", "uno"):
            return b.fcmp_ordered(predicate, x, y)
        compare = b.fcmp_ordered if predicate[0] == "o" else b.fcmp_unordered
        return compare(_FLOAT_OPS[predicate[1:]], x, y)

    map_registers(ctx, op, emit)


@lowers(arith.SelectOp)
def _select(ctx: LoweringContext, op: arith.SelectOp) -> None:
    map_registers(ctx, op, ctx.builder.select)


# Casts -----------------------------------------------------------------------------------------

_CASTS: dict[type[Operation], str] = {
    arith.ExtSIOp: "sext",
    arith.ExtUIOp: "zext",
    arith.TruncIOp: "trunc",
    arith.ExtFOp: "fpext",
    arith.TruncFOp: "fptrunc",
    arith.SIToFPOp: "sitofp",
    arith.UIToFPOp: "uitofp",
    arith.BitcastOp: "bitcast",
}


@lowers(*_CASTS)
def _cast(ctx: LoweringContext, op: arith.CastOp) -> None:
    method = getattr(ctx.builder, _CASTS[type(op)])
    _check_bf16(ctx, op)
    ty = ctx.type(op.result.type)
    map_registers(ctx, op, lambda x: method(x, ty))


_FLOAT_TO_INT: dict[type[Operation], str] = {arith.FPToSIOp: "fptosi", arith.FPToUIOp: "fptoui"}


@lowers(*_FLOAT_TO_INT)
def _float_to_int(ctx: LoweringContext, op: arith.CastOp) -> None:
    b = ctx.builder
    _check_bf16(ctx, op)
    ty = ctx.type(op.result.type)
    kind = _FLOAT_TO_INT[type(op)]

    def emit(x: ir.Value) -> ir.Value:
        name = f"llvm.{kind}.sat.i{ty.width}.{x.type.intrinsic_name}"
        return call_intrinsic(b, name, ty, [x])

    map_registers(ctx, op, emit)


def _check_bf16(ctx: LoweringContext, op: Operation) -> None:
    """bf16 conversions need the target's bf16 support (`TargetInfo.unsupported_conversion`:
    NVIDIA's before sm_80 have none)."""
    types = [element_type(v.type) for v in (*op.operands, *op.results)]
    uses_bf16 = any(isinstance(t, FloatType) and t.name == "bf16" for t in types)
    fix = ctx.target.unsupported_conversion("bf16") if uses_bf16 else None
    if fix is not None:
        raise LoweringError(
            f"{_where(op)}'{op.name}' converts bf16, which {ctx.target.arch} has no instructions for; "
            f"{fix}"
        )


__all__ = ["call_intrinsic", "constant_value", "map_registers"]
