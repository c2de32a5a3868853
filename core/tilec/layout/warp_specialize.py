"""`warp-specialize`: a producer warpgroup for a pipelined loop marked `warp_specialize`
(`tl.range(..., warp_specialize=True)`), whose ring the target's bulk copies fill (docs/tma.md,
step 5; the ops: `tilec.dialects.gpu_warp_specialize`).

`pipeline-loops` leaves such a loop with one barrier a slot (`%full`), S - 1 stages issued
before it and, in each iteration, the wait for its slot and the issue of iteration i + S - 1
into the slot of iteration i - 1 (after the dots that read it retired and a `tile.barrier`).
This pass gives the issue to `gpu.warp_specialize`'s producer: a second barrier set `%empty`
(initialized after `%full`), the prologue's issue erased, the loop's replaced by
`gpu.arrive_barrier %empty, <the slot of i - 1>, i > lb` (the consumers' release of that slot),
and the producer's region placed after the barriers' init: the loop bounds' and the offsets'
scalar computations cloned from the kernel's top-level block, then a loop over the same range
carrying (slot, phase) that waits on `%empty[slot]` for parity `phase ^ 1` (the previous
round's release; the first round's passes at once), expects the stage's bytes on `%full[slot]`
and issues its copies at offsets cloned from the loop's with the producer's induction variable.
After the loop `%empty` is invalidated with `%full`. The function gets `gpu.producer_warps`.

It applies where the target's `bulk_copies` has `producer_warps` (NVIDIA: 4, a warpgroup, on
archs with TMA where `TILEC_NVIDIA_WARP_SPECIALIZE` is on: off until the GPU tests pass,
docs/tma.md), the kernel's warps are whole warpgroups, the loop (or its zero-trip guard) is in the kernel's top-level block, every
load of the loop is in the bulk ring (no cp.async, no register staging), the offsets depend on
the loop only through the iteration they are issued for, and the bounds and the offsets'
invariant parts are pure scalar ops of the top-level block (which the producer, starting at the
kernel's entry, recomputes). One loop a kernel. Elsewhere the loop stays the plain pipelined
loop, as in Triton, and the reason is logged (`TILEC_LOG=info`).
"""

from __future__ import annotations

import logging
from typing import Any

from tilec.dialects.arith import AddIOp, CmpIOp, ConstantOp, ExtUIOp, RemUIOp, XOrIOp
from tilec.dialects.func import FuncOp
from tilec.dialects.gpu_bulk import (
    AsyncBulkCopyGlobalToLocalOp,
    BarrierExpectOp,
    InitBarriersOp,
    InvalBarriersOp,
    WaitBarrierOp,
)
from tilec.dialects.gpu_shared import (
    AsyncCommitGroupOp,
    AsyncCopyGlobalToLocalOp,
    AsyncWaitOp,
    LocalStoreOp,
)
from tilec.dialects.gpu_warp_specialize import (
    PRODUCER_WARPS_ATTR,
    ArriveBarrierOp,
    WarpReturnOp,
    WarpSpecializeOp,
)
from tilec.dialects.scf import ForOp, IfOp, YieldOp
from tilec.ir.attributes import IntegerAttr, StringAttr
from tilec.ir.core import Block, BlockArgument, Operation, Value
from tilec.ir.traits import Pure
from tilec.ir.types import IntegerType, i1, i32
from tilec.passes.base import ModulePass, PassContext

log = logging.getLogger(__name__)

WARP_SPECIALIZE = "warp_specialize"
"""The loop's flag (`tilec.frontend.control_flow.WARP_SPECIALIZE_ATTR`)."""

_STAGING = (AsyncCopyGlobalToLocalOp, AsyncCommitGroupOp, AsyncWaitOp, LocalStoreOp)


class WarpSpecialize(ModulePass):
    name = "warp-specialize"
    stage = "gir"
    description = "give a pipelined TMA loop marked warp_specialize a producer warpgroup"
    after = ("pipeline-loops",)

    def run(self, module: Operation, context: PassContext) -> bool:
        rules = getattr(context.target, "rules", None)
        producer = getattr(getattr(rules, "bulk_copies", None), "producer_warps", 0)
        changed = False
        for func in [op for op in module.walk() if isinstance(op, FuncOp)]:
            loops = [
                op
                for op in func.walk()
                if isinstance(op, ForOp) and WARP_SPECIALIZE in op.attributes
            ]
            done = False
            for loop in loops:
                reason = "one loop a kernel is specialized" if done else None
                if reason is None:
                    reason = _refusal(func, loop, producer)
                if reason is not None:
                    log.info("tl.range(warp_specialize=True) at %s: not specialized: %s",
                             loop.location, reason)  # fmt: skip
                    continue
                _specialize(func, loop, producer)
                done = changed = True
        return changed


def _refusal(func: FuncOp, loop: ForOp, producer: int) -> str | None:
    """Why `loop` is not specialized (module doc), or None."""
    if producer <= 0:
        return "the target has no producer warps for it"
    warps = func.attributes.get("gpu.num_warps")
    if warps is None or warps.value % 4:  # type: ignore[attr-defined]
        return "num_warps is not a multiple of 4"
    if _top_level(func, loop) is None:
        return "the loop is not in the kernel's top-level block"
    found = _ring(loop)
    if isinstance(found, str):
        return found
    _, _, copies, at = found
    inner = _inner_slice([o for c in copies for o in c.offsets], loop, at)
    if inner is None:
        return "the copies' offsets depend on the loop's carried values"
    _, outer = inner
    if _outer_slice([*outer, loop.lower_bound, loop.upper_bound, loop.step], func) is None:
        return "the bounds or offsets are not scalar computations of the kernel's parameters"
    return None


def _top_level(func: FuncOp, loop: ForOp) -> Operation | None:
    """The op of the kernel's top-level block holding `loop` (itself or its guard), or None."""
    entry = func.regions[0].block
    if loop.parent is entry:
        return loop
    guard = loop.parent_op
    if isinstance(guard, IfOp) and guard.parent is entry:
        return guard
    return None


def _ring(loop: ForOp) -> tuple[Value, BarrierExpectOp, list[Any], Value] | str:
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


def _inner_slice(
    roots: list[Value], loop: ForOp, at: Value
) -> tuple[list[Operation], set[Value]] | None:
    """The body ops the copies' offsets need (body order), stopping at `at` (the iteration they
    issue for), and the values from outside the loop they read; None where they read another
    value of the loop (an iter-arg, a non-pure op)."""
    body = loop.regions[0].block
    found: set[Operation] = set()
    outer: set[Value] = set()
    pending = list(roots)
    while pending:
        value = pending.pop()
        if value is at:
            continue
        if isinstance(value, BlockArgument) and value.block is body:
            return None
        op = getattr(value, "op", None)
        if op is None or op.parent is not body:
            if _encloses(loop, value):
                return None
            outer.add(value)
            continue
        if op in found:
            continue
        if not op.has_trait(Pure) or op.regions:
            return None
        found.add(op)
        pending.extend(op.operands)
    order = body.index_map()
    return sorted(found, key=order.__getitem__), outer


def _encloses(loop: ForOp, value: Value) -> bool:
    block = value.parent_block
    owner = block.parent_op if block is not None else None
    while owner is not None:
        if owner is loop:
            return True
        owner = owner.parent_op
    return False


def _outer_slice(roots: list[Value], func: FuncOp) -> list[Operation] | None:
    """The top-level ops (in order) computing `roots` from the kernel's parameters: pure scalar
    ops without regions; None where one is not."""
    entry = func.regions[0].block
    found: set[Operation] = set()
    pending = list(roots)
    while pending:
        value = pending.pop()
        if isinstance(value, BlockArgument) and value.block is entry:
            continue
        op = getattr(value, "op", None)
        if op is None or op.parent is not entry:
            return None
        if op in found:
            continue
        scalar = all(isinstance(r.type, IntegerType) for r in op.results)
        if not op.has_trait(Pure) or op.regions or not scalar:
            return None
        found.add(op)
        pending.extend(op.operands)
    order = entry.index_map()
    return sorted(found, key=order.__getitem__)


class _At:
    """Appends ops to `block` (before `anchor` where given)."""

    def __init__(self, block: Block, anchor: Operation | None = None):
        self.block, self.anchor = block, anchor

    def add(self, op: Operation) -> Value | None:
        if self.anchor is None:
            self.block.append(op)
        else:
            self.block.insert_before(op, self.anchor)
        return op.results[0] if op.results else None

    def const(self, value: int, type_: Any) -> Value:
        return self.add(ConstantOp(IntegerAttr(value, type_), type_))  # type: ignore[return-value]

    def compare(self, predicate: str, lhs: Value, rhs: Value) -> Value:
        op = CmpIOp(operands=[lhs, rhs], result_types=[i1],
                    attributes={"predicate": StringAttr(predicate)})  # fmt: skip
        return self.add(op)  # type: ignore[return-value]

    def binary(self, cls: type[Operation], lhs: Value, rhs: Value) -> Value:
        return self.add(cls(lhs, rhs))  # type: ignore[call-arg, return-value]


def _specialize(func: FuncOp, loop: ForOp, producer: int) -> None:
    """Give `loop` its producer (module doc); `_refusal` said it applies."""
    entry = func.regions[0].block
    full, expect, copies, at = _ring(loop)  # type: ignore[misc]
    body = loop.regions[0].block
    inner_ops, outer = _inner_slice([o for c in copies for o in c.offsets], loop, at)  # type: ignore[misc]
    bounds = [loop.lower_bound, loop.upper_bound, loop.step]
    outer_ops = _outer_slice([*outer, *bounds], func) or []
    stages = full.type.slots  # type: ignore[attr-defined]
    init = full.op  # type: ignore[attr-defined]
    empty_init = InitBarriersOp(stages)
    entry.insert_after(empty_init, init)
    empty = empty_init.result
    specialize = WarpSpecializeOp(producer)
    entry.insert_after(specialize, empty_init)
    _producer(specialize.body, outer_ops, bounds, inner_ops, at, expect, copies, full, empty)
    # the consumers: no issue before the loop; in it, the release of the slot the issue filled
    for op in list(entry.ops):
        if isinstance(op, BarrierExpectOp | AsyncBulkCopyGlobalToLocalOp) and op.barriers is full:
            op.erase()
    here = _At(body, expect)
    later = here.compare("sgt", body.args[0], loop.lower_bound)
    here.add(ArriveBarrierOp(operands=[empty, expect.slot, later]))
    for op in [*copies, expect]:
        op.erase()
    for op in entry.ops:
        if isinstance(op, InvalBarriersOp) and op.barriers is full:
            entry.insert_before(InvalBarriersOp(operands=[empty]), op)
            break
    _erase_dead(body)
    _erase_dead(entry)
    func.attributes[PRODUCER_WARPS_ATTR] = IntegerAttr(producer, i32)


def _producer(
    block: Block,
    outer_ops: list[Operation],
    bounds: list[Value],
    inner_ops: list[Operation],
    at: Value,
    expect: BarrierExpectOp,
    copies: list[Any],
    full: Value,
    empty: Value,
) -> None:
    """The producer's region (module doc) into `block`."""
    top = _At(block)
    mapping: dict[Value, Value] = {}
    for op in outer_ops:
        top.add(op.clone(mapping))
    lb, ub, step = (mapping.get(v, v) for v in bounds)
    zero = top.const(0, i32)
    loop = ForOp(lb, ub, step, [zero, zero])
    top.add(loop)
    top.add(WarpReturnOp())
    inside = loop.regions[0].block
    iv, slot, phase = inside.args
    iv.name_hint, slot.name_hint, phase.name_hint = "k", "slot", "phase"
    at_ = _At(inside)
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


def _erase_dead(block: Block) -> None:
    again = True
    while again:
        again = False
        for op in reversed(list(block.ops)):
            dead = op.results and not any(r.has_uses() for r in op.results)
            if dead and op.has_trait(Pure) and not op.regions:
                op.erase()
                again = True


__all__ = ["WarpSpecialize"]
