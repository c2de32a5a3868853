"""`tile.print`, `tile.assert` and `tile.barrier` -> LLVM IR through the target's printf, trap and
barrier.

`tile.print` prints one line per element, from the thread that owns it (replicas stay quiet), as
Triton's `device_print` does: `pid (0, 0, 0) idx (3, 1) x: 1.500000`; with several operands, their
values for that element follow one another on the line; a scalar is printed once, by thread 0.
Floats print with `%f` (`hex`: their bits as `0x%x`), integers as signed or unsigned decimals.

`tile.assert` prints `file:line:col: assertion failed in program (x, y, z) idx (i): message` for
each failing element and traps (the launch then fails, as a failed assert does in Triton).
"""

from __future__ import annotations

import contextlib

from llvmlite import ir

from tilec.dialects.gpu_shared import LocalAllocOp
from tilec.dialects.scf import in_loop
from tilec.dialects.tile import AssertOp, BarrierOp, PrintOp
from tilec.ir.types import FloatType, IntegerType, PointerType, element_type
from tilec.lowering.context import (
    F64,
    I32,
    LoweringContext,
    LoweringError,
    LTensor,
    _where,
    lowers,
)


def _program_ids(ctx: LoweringContext) -> list[ir.Value]:
    return [ctx.target.block_id(ctx.builder, axis) for axis in range(3)]


def _format(ctx: LoweringContext, value: ir.Value, t, hex_: bool) -> tuple[str, ir.Value]:
    """The printf conversion and argument for scalar `value` of tile type `t`."""
    b = ctx.builder
    if isinstance(t, PointerType):
        return "%p", value
    if isinstance(t, FloatType):
        if hex_:
            bits = {"f16": 16, "bf16": 16, "f32": 32, "f64": 64}[t.name]
            as_int = b.bitcast(value, ir.IntType(bits))
            if bits == 64:
                return "0x%llx", as_int
            return "0x%x", b.zext(as_int, I32) if bits < 32 else as_int
        return "%f", value if value.type == F64 else b.fpext(value, F64)
    assert isinstance(t, IntegerType)
    unsigned = t.unsigned or t.width == 1
    if t.width == 64:
        return ("0x%llx" if hex_ else "%llu" if unsigned else "%lld"), value
    wide = value
    if t.width < 32:
        wide = b.zext(value, I32) if unsigned or hex_ else b.sext(value, I32)
    return ("0x%x" if hex_ else "%u" if unsigned else "%d"), wide


def _when(ctx: LoweringContext, condition: ir.Value | None):
    """A context that emits under `condition` (always, when None)."""
    if condition is None:
        return contextlib.nullcontext()
    return ctx.builder.if_then(condition)


@lowers(PrintOp)
def _print(ctx: LoweringContext, op: PrintOp) -> None:
    b = ctx.builder
    prefix = op.prefix_str.replace("%", "%%")
    hex_ = op.is_hex
    values = [ctx.get(v) for v in op.operands]
    types = [element_type(v.type) for v in op.operands]
    layouts = {v.type.encoding for v in values if isinstance(v, LTensor)}
    if len(layouts) > 1:
        raise LoweringError(f"{_where(op)}'{op.name}' operands must share one layout")
    pids = _program_ids(ctx)
    tensor = next((v for v in values if isinstance(v, LTensor)), None)
    if tensor is None:
        formats, args = [], []
        for value, t in zip(values, types, strict=True):
            spec, arg = _format(ctx, value, t, hex_)
            formats.append(spec)
            args.append(arg)
        thread0 = b.icmp_unsigned("==", ctx.thread_id(), I32(0))
        with _when(ctx, thread0):
            text = f"pid (%u, %u, %u) {prefix}{' '.join(formats)}\n"
            ctx.target.printf(b, ctx.module, text, [*pids, *args])
        return
    mapping = tensor.mapping
    owners = ctx.owner_masks(mapping)
    coords = ctx.element_coords(mapping)
    idx = ", ".join(["%u"] * len(mapping.shape))
    for i in range(mapping.num_registers):
        formats, args = [], []
        for value, t in zip(values, types, strict=True):
            element = value.values[i] if isinstance(value, LTensor) else value
            spec, arg = _format(ctx, element, t, hex_)
            formats.append(spec)
            args.append(arg)
        with _when(ctx, None if owners is None else owners[i]):
            text = f"pid (%u, %u, %u) idx ({idx}) {prefix}{' '.join(formats)}\n"
            ctx.target.printf(b, ctx.module, text, [*pids, *coords[i], *args])


@lowers(AssertOp)
def _assert(ctx: LoweringContext, op: AssertOp) -> None:
    b = ctx.builder
    message = op.message_str.replace("%", "%%")
    where = _where(op).replace("%", "%%")
    condition = ctx.get(op.condition)
    if not isinstance(condition, LTensor):
        failed = b.not_(condition)
        with b.if_then(failed, likely=False):
            pids = _program_ids(ctx)
            text = f"{where}assertion failed in program (%u, %u, %u): {message}\n"
            ctx.target.printf(b, ctx.module, text, pids)
            ctx.target.trap(b)
        return
    mapping = condition.mapping
    all_ok = condition.values[0]
    for value in condition.values[1:]:
        all_ok = b.and_(all_ok, value)
    with b.if_then(b.not_(all_ok), likely=False):
        pids = _program_ids(ctx)
        coords = ctx.element_coords(mapping)
        idx = ", ".join(["%u"] * len(mapping.shape))
        text = f"{where}assertion failed in program (%u, %u, %u) idx ({idx}): {message}\n"
        for value, element in zip(condition.values, coords, strict=True):
            with b.if_then(b.not_(value)):
                ctx.target.printf(b, ctx.module, text, [*pids, *element])
        ctx.target.trap(b)


@lowers(BarrierOp)
def _barrier(ctx: LoweringContext, op: BarrierOp) -> None:
    """The target's barrier, unless the code just before it is that same barrier (nothing
    between them to order: a pipelined loop's prologue barrier right after the one that
    publishes a tile stored into shared memory before the loop, as in the attention forward),
    or it only guards buffers no thread has touched (`guards_untouched_buffers`)."""
    if guards_untouched_buffers(ctx, op):
        return
    instructions = ctx.builder.block.instructions
    old = {id(i) for i in instructions}
    ctx.target.barrier(ctx.builder)
    new = [at for at, i in enumerate(instructions) if id(i) not in old]
    if not new:
        return
    start, count = new[0], len(new)
    emitted = instructions[start : start + count]
    contiguous = new == list(range(start, start + count)) and start >= count
    if contiguous and _same(instructions[start - count : start], emitted):
        del instructions[start : start + count]


def guards_untouched_buffers(ctx: LoweringContext, op: BarrierOp) -> bool:
    """Whether `op` stands right before buffers are allocated (`pipeline-loops`' barrier before
    its rings and their prologue copies: it waits for the earlier readers of their bytes) where
    no thread can have read those bytes: they go above the live buffers (a stack), nothing
    above those has been used yet (`shared_bytes`, the extent of every use so far, is no more
    than what is reserved), and no loop holds the barrier (an earlier iteration would have). The
    kernel's first pipelined loop then has no barrier before its copies, as in Triton."""
    if not isinstance(op.next_op, LocalAllocOp) or ctx.shared_bytes > ctx.shared_reserved:
        return False
    return not in_loop(op)


def _same(first: list[ir.Instruction], second: list[ir.Instruction]) -> bool:
    """Whether two runs of instructions are the same operations on the same operands, none with
    a result (barriers and fences)."""
    return all(
        isinstance(a.type, ir.VoidType) and str(a) == str(b)
        for a, b in zip(first, second, strict=True)
    )


__all__ = ["guards_untouched_buffers"]
