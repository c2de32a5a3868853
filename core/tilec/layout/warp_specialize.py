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
archs with TMA unless `TILEC_NVIDIA_WARP_SPECIALIZE` is `0`: on by default since the GPU tests
passed, docs/tma.md), the kernel's warps are whole warpgroups, the loop (or its zero-trip guard) is in the kernel's top-level block, every
load of the loop is in the bulk ring (no cp.async, no register staging), the offsets depend on
the loop only through the iteration they are issued for, and the bounds and the offsets'
invariant parts are pure scalar ops of the top-level block (which the producer, starting at the
kernel's entry, recomputes). One loop a kernel. Elsewhere the loop stays the plain pipelined
loop, as in Triton, and the reason is logged (`TILEC_LOG=info`).
"""

from __future__ import annotations

import logging
from typing import Any

from tilec.dialects.func import FuncOp
from tilec.dialects.gpu_bulk import (
    AsyncBulkCopyGlobalToLocalOp,
    BarrierExpectOp,
    InitBarriersOp,
    InvalBarriersOp,
)
from tilec.dialects.gpu_warp_specialize import (
    PRODUCER_WARPS_ATTR,
    ArriveBarrierOp,
    WarpReturnOp,
    WarpSpecializeOp,
)
from tilec.dialects.scf import ForOp, IfOp
from tilec.ir.attributes import IntegerAttr
from tilec.ir.core import Block, Operation, Value
from tilec.ir.types import i32
from tilec.layout import warp_specialize_tiles as tiles
from tilec.layout.pipeline_loops import Emitter
from tilec.layout.warp_specialize_ring import (
    erase_dead,
    inner_slice,
    k_loop,
    ring,
    scalar_slice,
)
from tilec.passes.base import ModulePass, PassContext

log = logging.getLogger(__name__)


WARP_SPECIALIZE = "warp_specialize"
"""The loop's flag (`tilec.frontend.control_flow.WARP_SPECIALIZE_ATTR`)."""


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
            limit = getattr(rules, "shared_memory_bytes", None)
            for loop in loops:
                k = _pipelined(loop)
                reason = "one loop a kernel is specialized" if done else None
                if reason is None and k is None:
                    reason = (
                        "the loop was not pipelined through a bulk ring, nor holds one that was"
                    )
                if reason is None:
                    reason = _refusal(func, k, producer, limit)  # type: ignore[arg-type]
                if reason is not None:
                    log.info("tl.range(warp_specialize=True) at %s: not specialized: %s",
                             loop.location, reason)  # fmt: skip
                    continue
                if _top_level(func, k) is not None:  # type: ignore[arg-type]
                    _specialize(func, k, producer)  # type: ignore[arg-type]
                else:
                    tiles.specialize(func, k, producer)  # type: ignore[arg-type]
                done = changed = True
        return changed


def _pipelined(loop: ForOp) -> ForOp | None:
    """The loop the hint on `loop` asks for: `loop`, where `pipeline-loops` filled its ring with
    bulk copies, else the one such loop `loop` holds (a persistent kernel's tile loop)."""
    if not isinstance(ring(loop), str):
        return loop
    inner = [op for op in loop.walk() if op is not loop and isinstance(op, ForOp)]
    found = [op for op in inner if not isinstance(ring(op), str)]
    return found[0] if len(found) == 1 else None


def _refusal(func: FuncOp, loop: ForOp, producer: int, limit: int | None) -> str | None:
    """Why `loop` is not specialized (module doc), or None."""
    if producer <= 0:
        return "the target has no producer warps for it"
    warps = func.attributes.get("gpu.num_warps")
    if warps is None or warps.value % 4:  # type: ignore[attr-defined]
        return "num_warps is not a multiple of 4"
    if _top_level(func, loop) is None:
        return tiles.refusal(func, loop, limit)
    found = ring(loop)
    if isinstance(found, str):
        return found
    _, _, copies, at = found
    inner = inner_slice([o for c in copies for o in c.offsets], loop, at)
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


def _outer_slice(roots: list[Value], func: FuncOp) -> list[Operation] | None:
    """The top-level ops (in order) computing `roots` from the kernel's parameters: pure scalar
    ops without regions; None where one is not."""
    entry = func.regions[0].block
    found = scalar_slice(roots, entry, set(entry.args))
    return None if found is None or found[1] else found[0]


def _specialize(func: FuncOp, loop: ForOp, producer: int) -> None:
    """Give `loop` its producer (module doc); `_refusal` said it applies."""
    entry = func.regions[0].block
    full, expect, copies, at = ring(loop)  # type: ignore[misc]
    body = loop.regions[0].block
    inner_ops, outer = inner_slice([o for c in copies for o in c.offsets], loop, at)  # type: ignore[misc]
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
    here = Emitter(body, expect)
    later = here.compare("sgt", body.args[0], loop.lower_bound)
    here.add(ArriveBarrierOp(operands=[empty, expect.slot, later]))
    for op in [*copies, expect]:
        op.erase()
    for op in entry.ops:
        if isinstance(op, InvalBarriersOp) and op.barriers is full:
            entry.insert_before(InvalBarriersOp(operands=[empty]), op)
            break
    erase_dead(body)
    erase_dead(entry)
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
    top = Emitter(block)
    mapping: dict[Value, Value] = {}
    for op in outer_ops:
        top.add(op.clone(mapping))
    zero = top.const(0, i32)
    k_loop(top, [mapping.get(v, v) for v in bounds], mapping, inner_ops, at, expect, copies,
           (full, empty), (zero, zero))  # fmt: skip
    top.add(WarpReturnOp())


__all__ = ["WarpSpecialize"]
