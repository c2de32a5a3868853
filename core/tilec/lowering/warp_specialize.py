"""The lowering of a warp-specialized kernel (`gpu.producer_warps`, `gpu.warp_specialize`:
`tilec.dialects.gpu_warp_specialize`, docs/tma.md step 5).

The block has `num_warps + P` warps. The entry block sends warps `num_warps` and up to the
producer; the others (the consumers) run the kernel as it stands, their block-wide barriers
counting only them (`TargetInfo.barrier_threads`), after taking more registers where the target
gives them (`TargetInfo.specialized_registers`). At `gpu.warp_specialize` the consumers arrive on
barrier `START` (all threads) and go on; the producer, having given registers back, waits there,
so that it sees every barrier initialized before the op, and then its first thread runs the
region (the others exit), its copies and waits issued unconditionally (`ctx.single_thread`),
until `gpu.warp_return` (exit). The rings and barriers the region reads are at compile-time
offsets of shared memory (the `base`/`offset` of their lowered values): the producer addresses
them from the base, outside the consumers' blocks.
"""

from __future__ import annotations

from typing import Any

import attrs
from llvmlite import ir

from tilec.dialects.gpu_warp_specialize import (
    PRODUCER_WARPS_ATTR,
    WarpReturnOp,
    WarpSpecializeOp,
    defined_inside,
)
from tilec.ir.core import Operation
from tilec.ir.types import MemDescType
from tilec.lowering.context import I8, I32, LoweringContext, LoweringError, lowers

START = 1
"""The named barrier the producer waits on for the consumers to reach `gpu.warp_specialize`."""


@attrs.define
class Specialized:
    """A warp-specialized kernel being lowered: its consumer and producer threads, and its
    `gpu.warp_specialize` ops, whose regions `finish` lowers."""

    consumers: int
    producers: int
    registers: tuple[int, int] | None
    regions: list[WarpSpecializeOp] = attrs.Factory(list)

    @property
    def threads(self) -> int:
        return self.consumers + self.producers


def producer_warps(func: Operation) -> int:
    """The kernel's producer warps (`gpu.producer_warps`), 0 where it has none."""
    attr = func.attributes.get(PRODUCER_WARPS_ATTR)
    return 0 if attr is None else int(attr.value)  # type: ignore[attr-defined]


def begin(ctx: LoweringContext, warps: int) -> Specialized:
    """Before the kernel's body: the consumers' barriers count them."""
    lanes = ctx.threads_per_warp
    spec = Specialized(ctx.num_warps * lanes, warps * lanes, None)
    if ctx.num_warps % 4 or warps % 4:
        raise LoweringError("a warp-specialized kernel has whole warp groups of 4 warps")
    ctx.target.barrier_threads = spec.consumers
    ctx.specialized = spec  # type: ignore[attr-defined]
    return spec


def finish(ctx: LoweringContext, spec: Specialized, prologue: ir.Block, body: ir.Block) -> None:
    """After the body: the registers of both sides (the kernel's shared memory known: the
    consumers' `setmaxnreg` goes first in the body), the producer's blocks, and the entry's
    branch to the body or to them."""
    ctx.target.barrier_threads = None
    spec.registers = ctx.target.specialized_registers(
        spec.consumers, spec.producers, ctx.shared_bytes
    )
    if spec.registers is not None:  # the consumers take theirs first thing
        start = ir.IRBuilder(body)
        start.position_at_start(body)
        ctx.target.set_registers(start, spec.registers[1], increase=True)
    producer = ctx.fn.append_basic_block("producer")
    b = ir.IRBuilder(producer)
    if spec.registers is not None:
        ctx.target.set_registers(b, spec.registers[0], increase=False)
    ctx.target.named_barrier(b, START, spec.threads, arrive=False)
    if len(spec.regions) != 1:
        raise LoweringError(f"a warp-specialized kernel has one gpu.warp_specialize, got "
                            f"{len(spec.regions)}")  # fmt: skip
    issue = ctx.fn.append_basic_block("producer.issue")
    leave = ctx.fn.append_basic_block("producer.exit")
    first = b.icmp_unsigned("==", ctx.thread_id(), I32(spec.consumers))
    b.cbranch(first, issue, leave)
    ir.IRBuilder(leave).ret_void()
    ctx.builder = ir.IRBuilder(issue)
    _lower_region(ctx, spec.regions[0])
    entry = ir.IRBuilder(prologue)
    consumer = entry.icmp_unsigned("<", ctx.thread_id(), I32(spec.consumers))
    entry.cbranch(consumer, body, producer)


def _lower_region(ctx: LoweringContext, op: WarpSpecializeOp) -> None:
    """The producer's region at `ctx.builder`, its rings and barriers addressed from the shared
    memory's base."""
    outside: dict[Any, Any] = {}
    for inner in op.walk():
        for value in inner.operands:
            if (
                isinstance(value.type, MemDescType)
                and value not in outside
                and not defined_inside(value, op)
            ):
                outside[value] = ctx.get(value)
    b = ctx.builder
    for value, lowered in outside.items():
        base = b.gep(ctx.shared_base(), [I32(lowered.offset)], source_etype=I8)
        ctx.set(value, attrs.evolve(lowered, base=base))
    ctx.single_thread = True  # type: ignore[attr-defined]
    try:
        for inner in op.body.ops:
            ctx.lower_op(inner)
    finally:
        ctx.single_thread = False  # type: ignore[attr-defined]
        for value, lowered in outside.items():
            ctx.set(value, lowered)


@lowers(WarpSpecializeOp)
def _specialize(ctx: LoweringContext, op: WarpSpecializeOp) -> None:
    spec: Specialized | None = getattr(ctx, "specialized", None)
    if spec is None:
        raise LoweringError("gpu.warp_specialize in a kernel without gpu.producer_warps")
    ctx.target.named_barrier(ctx.builder, START, spec.threads, arrive=True)
    spec.regions.append(op)


@lowers(WarpReturnOp)
def _return(ctx: LoweringContext, op: WarpReturnOp) -> None:
    ctx.builder.ret_void()


__all__ = ["START", "Specialized", "begin", "finish", "producer_warps"]
