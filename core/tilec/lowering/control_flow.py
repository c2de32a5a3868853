"""`scf.*`, `tile.return` and the grid queries -> LLVM IR.

The conditions and bounds of `scf` ops are scalars, the same in every thread, so branches never
diverge. A loop-carried tensor is carried as one phi per register (`flatten` / `unflatten`).

    scf.for:   pre -> header(phis; iv < ub?) -> body ... -> latch(iv += step) -> header | exit
    scf.while: pre -> before(phis; cond?) -> after ... -> before | exit
    scf.if:    cond ? then : else -> merge(phis)
"""

from __future__ import annotations

from typing import Any

from llvmlite import ir

from tilec.dialects.scf import ForOp, IfOp, WhileOp
from tilec.dialects.tile import NumProgramsOp, ProgramIdOp, ReturnOp
from tilec.ir.core import Block, Operation, Value
from tilec.ir.types import TensorType, Type
from tilec.lowering.context import LoweringContext, LTensor, lowers


def flatten(lowered: Any) -> list[ir.Value]:
    """The LLVM values of a lowered value (the registers of a tensor)."""
    return list(lowered.values) if isinstance(lowered, LTensor) else [lowered]


def unflatten(types: list[Type], values: list[ir.Value]) -> list[Any]:
    """Regroup `flatten`ed values by the types they came from."""
    grouped, at = [], 0
    for t in types:
        if isinstance(t, TensorType):
            count = LTensor(t, []).mapping.num_registers
            grouped.append(LTensor(t, values[at : at + count]))
            at += count
        else:
            grouped.append(values[at])
            at += 1
    return grouped


def lower_body(ctx: LoweringContext, block: Block) -> Operation:
    """Lower the ops of `block` except its terminator, which is returned."""
    terminator = block.last_op
    for op in block.ops:
        if op is terminator:
            break
        ctx.lower_op(op)
    return terminator  # type: ignore[return-value]


def _flat(ctx: LoweringContext, values: list[Value] | tuple[Value, ...]) -> list[ir.Value]:
    return [x for v in values for x in flatten(ctx.get(v))]


def _phis(b: ir.IRBuilder, incoming: list[ir.Value], block: ir.Block) -> list[ir.PhiInstr]:
    phis = []
    for value in incoming:
        phi = b.phi(value.type)
        phi.add_incoming(value, block)
        phis.append(phi)
    return phis


def _bind(ctx: LoweringContext, values: list[Value], flat: list[ir.Value]) -> None:
    for value, lowered in zip(values, unflatten([v.type for v in values], flat), strict=True):
        ctx.set(value, lowered)


@lowers(ForOp)
def _for(ctx: LoweringContext, op: ForOp) -> None:
    b = ctx.builder
    lower, upper, step, inits = op.lower_bound, op.upper_bound, op.step, op.init_args
    body_block = op.body.block
    pre = b.block
    header = b.append_basic_block("for.header")
    body = b.append_basic_block("for.body")
    exit_ = b.append_basic_block("for.exit")
    b.branch(header)
    b.position_at_end(header)
    iv_phi, *carried = _phis(b, _flat(ctx, [lower, *inits]), pre)
    b.cbranch(b.icmp_signed("<", iv_phi, ctx.get(upper)), body, exit_)
    b.position_at_end(body)
    ctx.set(body_block.args[0], iv_phi)
    _bind(ctx, list(body_block.args[1:]), list(carried))
    terminator = lower_body(ctx, body_block)
    yielded = _flat(ctx, terminator.operands)
    next_iv = b.add(iv_phi, ctx.get(step))
    latch = b.block
    b.branch(header)
    iv_phi.add_incoming(next_iv, latch)
    for phi, value in zip(carried, yielded, strict=True):
        phi.add_incoming(value, latch)
    b.position_at_end(exit_)
    _bind(ctx, list(op.results), list(carried))


@lowers(IfOp)
def _if(ctx: LoweringContext, op: IfOp) -> None:
    b = ctx.builder
    then_region, else_region = op.then_region, op.else_region
    then_bb = b.append_basic_block("if.then")
    else_bb = b.append_basic_block("if.else") if else_region.blocks else None
    merge = b.append_basic_block("if.end")
    b.cbranch(ctx.get(op.condition), then_bb, else_bb or merge)
    arms = []
    for region, bb in ((then_region, then_bb), (else_region, else_bb)):
        if bb is None:
            continue
        b.position_at_end(bb)
        terminator = lower_body(ctx, region.block)
        arms.append((_flat(ctx, terminator.operands), b.block))
        b.branch(merge)
    b.position_at_end(merge)
    if not op.results:
        return
    phis = []
    for i, value in enumerate(arms[0][0]):
        phi = b.phi(value.type)
        for values, block in arms:
            phi.add_incoming(values[i], block)
        phis.append(phi)
    _bind(ctx, list(op.results), phis)


@lowers(WhileOp)
def _while(ctx: LoweringContext, op: WhileOp) -> None:
    b = ctx.builder
    before_block, after_block = op.before.block, op.after.block
    pre = b.block
    before = b.append_basic_block("while.before")
    after = b.append_basic_block("while.after")
    exit_ = b.append_basic_block("while.exit")
    b.branch(before)
    b.position_at_end(before)
    carried = _phis(b, _flat(ctx, op.init_args), pre)
    _bind(ctx, list(before_block.args), list(carried))
    condition = lower_body(ctx, before_block)
    cond_value, *forwarded = condition.operands
    forwarded_flat = _flat(ctx, forwarded)
    b.cbranch(ctx.get(cond_value), after, exit_)
    b.position_at_end(after)
    _bind(ctx, list(after_block.args), forwarded_flat)
    terminator = lower_body(ctx, after_block)
    yielded = _flat(ctx, terminator.operands)
    latch = b.block
    b.branch(before)
    for phi, value in zip(carried, yielded, strict=True):
        phi.add_incoming(value, latch)
    b.position_at_end(exit_)
    _bind(ctx, list(op.results), forwarded_flat)


@lowers(ReturnOp)
def _return(ctx: LoweringContext, op: ReturnOp) -> None:
    ctx.builder.ret_void()


@lowers(ProgramIdOp)
def _program_id(ctx: LoweringContext, op: ProgramIdOp) -> None:
    ctx.set(op.result, ctx.target.block_id(ctx.builder, op.axis_int))


@lowers(NumProgramsOp)
def _num_programs(ctx: LoweringContext, op: NumProgramsOp) -> None:
    ctx.set(op.result, ctx.target.num_blocks(ctx.builder, op.axis_int))


__all__ = ["flatten", "lower_body", "unflatten"]
