"""The parts `warp-specialize` builds its forms from (`tilec.layout.warp_specialize`: the pass
and the top-level form; `tilec.layout.warp_specialize_tiles`: the tile-loop form): the pipelined
loop's ring as `pipeline-loops` left it, the scalar slices the producer clones, and the
producer's loop over the consumers' iterations."""

from __future__ import annotations

from typing import Any

from tilec.dialects.arith import AddIOp, CmpIOp, ExtUIOp, RemUIOp, XOrIOp
from tilec.dialects.gpu_bulk import (
    AsyncBulkCopyGlobalToLocalOp,
    BarrierExpectOp,
    InitBarriersOp,
    WaitBarrierOp,
)
from tilec.dialects.gpu_shared import (
    AsyncCommitGroupOp,
    AsyncCopyGlobalToLocalOp,
    AsyncWaitOp,
    LocalStoreOp,
)
from tilec.dialects.scf import ForOp, YieldOp
from tilec.ir.core import Block, BlockArgument, Operation, Value
from tilec.ir.traits import Pure
from tilec.ir.types import IntegerType, i1, i32
from tilec.layout.pipeline_loops import Emitter

_STAGING = (AsyncCopyGlobalToLocalOp, AsyncCommitGroupOp, AsyncWaitOp, LocalStoreOp)


def ring(loop: ForOp) -> tuple[Value, BarrierExpectOp, list[Any], Value] | str:
    """The loop's barriers, its in-loop expect and copies, and the iteration they issue for."""
    body = loop.regions[0].block
    waits = [op for op in body.ops if isinstance(op, WaitBarrierOp)]
    if len(waits) != 1 or not isinstance(waits[0].barriers.op, InitBarriersOp):  # type: ignore[attr-defined]
        return "the loop was not pipelined through a bulk ring"
    full = waits[0].barriers
    for op in loop.walk():
        if isinstance(op, _STAGING):
            return "some of the loop's loads are not in the bulk ring"
    expects = [op for op in body.ops if isinstance(op, BarrierExpectOp)]
    copies = [op for op in body.ops if isinstance(op, AsyncBulkCopyGlobalToLocalOp)]
    if len(expects) != 1 or expects[0].barriers is not full or not copies:
        return "the loop's issue is not one stage of bulk copies"
    in_range = getattr(expects[0].pred, "op", None)
    if not isinstance(in_range, CmpIOp) or in_range.operands[1] is not loop.upper_bound:
        return "the loop's issue is not predicated on its iteration"
    if any(c.barriers is not full or c.pred is not expects[0].pred for c in copies):
        return "the loop's copies are not one stage"
    return full, expects[0], copies, in_range.operands[0]


def inner_slice(
    roots: list[Value], loop: ForOp, at: Value
) -> tuple[list[Operation], set[Value]] | None:
    """The body ops the copies' offsets need (body order), stopping at `at` (the iteration they
    issue for), and the values from outside the loop they read; None where they read another
    value of the loop (an iter-arg, a non-pure op)."""
    return scalar_slice(roots, loop.regions[0].block, {at})


def scalar_slice(
    roots: list[Value], block: Block, allowed: set[Value]
) -> tuple[list[Operation], set[Value]] | None:
    """The ops of `block` (in order) computing `roots`, pure scalar ops without regions, and the
    values from outside `block` they read; None where one is not such an op or reads an argument
    of `block` not in `allowed`."""
    found: set[Operation] = set()
    outer: set[Value] = set()
    pending = list(roots)
    while pending:
        value = pending.pop()
        if value in allowed:
            continue
        if isinstance(value, BlockArgument) and value.block is block:
            return None
        op = getattr(value, "op", None)
        if op is None or op.parent is not block:
            outer.add(value)
            continue
        if op in found:
            continue
        scalar = all(isinstance(r.type, IntegerType) for r in op.results)
        if not op.has_trait(Pure) or op.regions or not scalar:
            return None
        found.add(op)
        pending.extend(op.operands)
    order = block.index_map()
    return sorted(found, key=order.__getitem__), outer


def k_loop(
    top: Emitter,
    bounds: list[Value],
    mapping: dict[Value, Value],
    inner_ops: list[Operation],
    at: Value,
    expect: BarrierExpectOp,
    copies: list[Any],
    barriers: tuple[Value, Value],
    state: tuple[Value, Value],
) -> ForOp:
    """The producer's loop over the consumers' iterations (`bounds` mapped), from ring `state`
    (slot, phase), which it yields: per iteration the wait on `empty[slot]` for parity
    `phase ^ 1`, the expect on `full[slot]` and the copies at the offsets `inner_ops` compute
    from the iteration (`at` in the consumers' loop)."""
    full, empty = barriers
    loop = ForOp(*bounds, list(state))
    top.add(loop)
    inside = loop.regions[0].block
    iv, slot, phase = inside.args
    iv.name_hint, slot.name_hint, phase.name_hint = "k", "slot", "phase"
    at_ = Emitter(inside)
    one = at_.const(1, i32)
    at_.add(WaitBarrierOp(operands=[empty, slot, at_.binary(XOrIOp, phase, one)]))
    issue = at_.const(1, i1)
    at_.add(BarrierExpectOp(operands=[full, slot, issue],
                            attributes={"nbytes": expect.nbytes}))  # fmt: skip
    mapping[at] = iv
    for op in inner_ops:
        at_.add(op.clone(mapping))
    for copy in copies:
        offsets = [mapping.get(o, o) for o in copy.offsets]
        new = AsyncBulkCopyGlobalToLocalOp(
            operands=[copy.buffer, slot, full, issue, *offsets], attributes=dict(copy.attributes)
        )
        new.location = copy.location
        at_.add(new)
    stages = full.type.slots  # type: ignore[attr-defined]
    next_slot = at_.binary(RemUIOp, at_.binary(AddIOp, slot, one), at_.const(stages, i32))
    wraps = at_.add(ExtUIOp(at_.compare("eq", next_slot, at_.const(0, i32)), i32))  # type: ignore[arg-type]
    at_.add(YieldOp(operands=[next_slot, at_.binary(XOrIOp, phase, wraps)]))  # type: ignore[arg-type]
    return loop


def erase_dead(block: Block) -> None:
    again = True
    while again:
        again = False
        for op in reversed(list(block.ops)):
            dead = op.results and not any(r.has_uses() for r in op.results)
            if dead and op.has_trait(Pure) and not op.regions:
                op.erase()
                again = True


__all__ = ["erase_dead", "inner_slice", "k_loop", "ring", "scalar_slice"]
