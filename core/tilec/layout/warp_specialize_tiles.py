"""`warp-specialize` for a K loop inside a loop over tiles (a persistent kernel: Triton's
persistent-matmul tutorial marks the tile loop; docs/tma.md step 5). `tilec.layout
.warp_specialize` is the pass and its top-level form; this module is its tile-loop form.

The tile loop T lies in the kernel's top-level block, and the pipelined K loop (or its zero-trip
guard) in T's body, after its rings' `gpu.local_alloc`s and `gpu.init_barriers` and before their
`gpu.inval_barriers` and `gpu.local_dealloc`s. Then:

- the rings and both barrier sets live across T: allocated and initialized before it (the
  producer's `gpu.warp_specialize` after them), invalidated and freed after it; the kernel's
  shared memory is then the rings beside the epilogue's, checked against the target's (else the
  loop is left alone);
- the slot and phase go on from tile to tile: T carries them into the K loop and out of it;
- the consumers release a slot as in the top-level form (iteration i releases i - 1's) and, after
  the K loop's last dot retired in every warp (its wait, a `tile.barrier`), the last iteration's
  slot, which the producer waits for in a later tile;
- the producer's region runs T's range (its bounds' scalar slice cloned), in each tile the scalar
  slice of T's body that the K loop's bounds and offsets need (from T's induction variable), then
  the K loop's producer loop (`warp_specialize_ring.k_loop`), carrying (slot, phase) through both.
"""

from __future__ import annotations

from typing import Any

from tilec.dialects.arith import AddIOp, RemUIOp
from tilec.dialects.func import FuncOp
from tilec.dialects.gpu import ConvertLayoutOp
from tilec.dialects.gpu_bulk import (
    AsyncBulkCopyGlobalToLocalOp,
    BarrierExpectOp,
    InitBarriersOp,
    InvalBarriersOp,
    WaitBarrierOp,
)
from tilec.dialects.gpu_shared import LocalAllocOp, LocalDeallocOp
from tilec.dialects.gpu_warp_specialize import (
    PRODUCER_WARPS_ATTR,
    ArriveBarrierOp,
    WarpReturnOp,
    WarpSpecializeOp,
)
from tilec.dialects.scf import ForOp, IfOp, YieldOp
from tilec.dialects.tile import BarrierOp
from tilec.ir.attributes import IntegerAttr
from tilec.ir.core import Block, Operation, Value
from tilec.ir.types import TensorType, i1, i32
from tilec.layout import warp_specialize_ring as ws
from tilec.layout.pipeline_loops import Emitter
from tilec.layout.residency import shared_bytes, tile_bytes


def tile_loop(func: FuncOp, k: ForOp) -> tuple[ForOp, Operation] | None:
    """T and the op of T's body holding `k` (itself or its guard), where T is a top-level loop."""
    entry = func.regions[0].block
    holder: Operation = k
    if isinstance(k.parent_op, IfOp):
        holder = k.parent_op
    tile = holder.parent_op
    if isinstance(tile, ForOp) and tile.parent is entry:
        return tile, holder
    return None


def _parts(k: ForOp, tile: ForOp) -> dict[str, Any] | str:
    """The ops of T's body that the ring has (module doc), or why they are not all there."""
    body = tile.regions[0].block
    full, expect, copies, at = ws.ring(k)  # type: ignore[misc]
    buffers = list(dict.fromkeys(c.buffer for c in copies))
    allocs = [getattr(b, "op", None) for b in buffers]
    init = full.op  # type: ignore[attr-defined]
    if any(not isinstance(a, LocalAllocOp) or a.parent is not body for a in allocs):
        return "the ring is not allocated in the tile loop's body"
    if init.parent is not body:
        return "the ring's barriers are not initialized in the tile loop's body"
    inval = [op for op in body.ops if isinstance(op, InvalBarriersOp) and op.barriers is full]
    frees = [op for op in body.ops if isinstance(op, LocalDeallocOp) and op.buffer in buffers]
    if len(inval) != 1 or len(frees) != len(buffers):
        return "the ring is not given back in the tile loop's body"
    for buffer in buffers:
        users = {u for u in buffer.users}
        if any(not k.is_ancestor_of(u) and u.parent is not body for u in users):
            return "the ring is used outside the tile loop's body"
    return {"full": full, "expect": expect, "copies": copies, "at": at, "allocs": allocs,
            "init": init, "inval": inval[0], "frees": frees}  # fmt: skip


def refusal(func: FuncOp, k: ForOp, limit: int | None) -> str | None:
    """Why the tile-loop form does not apply to `k` (module doc), or None; `limit`: the
    target's shared memory a block."""
    found = tile_loop(func, k)
    if found is None:
        return "the loop is neither in the kernel's top-level block nor in a top-level tile loop"
    tile, _ = found
    parts = _parts(k, tile)
    if isinstance(parts, str):
        return parts
    slices = _slices(func, k, tile, parts)
    if isinstance(slices, str):
        return slices
    if limit is not None and _shared(func, k, tile) > limit:
        return "the rings would stay beside the epilogue's shared memory, over the target's"
    return None


def _shared(func: FuncOp, k: ForOp, tile: ForOp) -> int:
    """The kernel's shared memory with the rings live across T: `residency.shared_bytes` of
    the specialized kernel (a lower bound: it leaves scratch out) and the largest layout
    conversion of T's body outside the K loop through scratch (the epilogue's accumulator)."""
    trial = func.clone({})
    specialize(trial, _same_loop(func, trial, k), 4)
    converts = [op for op in tile.walk() if isinstance(op, ConvertLayoutOp)
                and not k.is_ancestor_of(op) and isinstance(op.results[0].type, TensorType)]  # fmt: skip
    scratch = max((tile_bytes(c.results[0].type.shape, c.results[0].type.element_type)
                   for c in converts), default=0)  # fmt: skip
    return shared_bytes(trial, {}) + scratch


def _same_loop(func: FuncOp, clone: FuncOp, k: ForOp) -> ForOp:
    originals = [op for op in func.walk() if isinstance(op, ForOp)]
    copies = [op for op in clone.walk() if isinstance(op, ForOp)]
    return copies[originals.index(k)]


def _slices(func: FuncOp, k: ForOp, tile: ForOp, parts: dict[str, Any]) -> tuple | str:
    """The scalar slices the producer clones: the K loop's body's (offsets), T's body's (K's
    bounds, the offsets' tile-invariant parts) and the top level's (T's bounds and the rest)."""
    inner = ws.inner_slice([o for c in parts["copies"] for o in c.offsets], k, parts["at"])
    if inner is None:
        return "the copies' offsets depend on the loop's carried values"
    inner_ops, outer = inner
    body = tile.regions[0].block
    k_bounds = [k.lower_bound, k.upper_bound, k.step]
    middle = ws.scalar_slice([*outer, *k_bounds], body, {body.args[0]})
    if middle is None:
        return "the K loop's bounds or offsets are not scalar computations of the tile's index"
    middle_ops, top = middle
    entry = func.regions[0].block
    top_level = ws.scalar_slice([*top, tile.lower_bound, tile.upper_bound, tile.step], entry,
                                set(entry.args))  # fmt: skip
    if top_level is None or top_level[1]:
        return "the tile loop's bounds are not scalar computations of the kernel's parameters"
    return top_level[0], middle_ops, inner_ops


def specialize(func: FuncOp, k: ForOp, producer: int) -> None:
    """The tile-loop form (module doc); `refusal` said it applies."""
    entry = func.regions[0].block
    tile, holder = tile_loop(func, k)  # type: ignore[misc]
    parts: dict[str, Any] = _parts(k, tile)  # type: ignore[assignment]
    top_ops, middle_ops, inner_ops = _slices(func, k, tile, parts)  # type: ignore[misc]
    full = parts["full"]
    stages = full.type.slots
    for op in [*parts["allocs"], parts["init"]]:  # the rings and barriers before T
        op.detach()
        entry.insert_before(op, tile)
    empty_init = InitBarriersOp(stages)
    entry.insert_before(empty_init, tile)
    empty = empty_init.result
    spec = WarpSpecializeOp(producer)
    entry.insert_before(spec, tile)
    _producer(spec.body, tile, k, top_ops, middle_ops, inner_ops, parts, empty)
    after = tile.next_op
    for op in [parts["inval"], *parts["frees"]]:  # and given back after it
        op.detach()
        if after is None:
            entry.append(op)
        else:
            entry.insert_before(op, after)
    entry.insert_before(InvalBarriersOp(operands=[empty]), parts["inval"])
    body = tile.regions[0].block
    for op in list(body.ops):  # the consumers issue nothing
        if isinstance(op, BarrierExpectOp | AsyncBulkCopyGlobalToLocalOp) and op.barriers is full:
            op.erase()
    k_body = k.regions[0].block
    expect = parts["expect"]
    here = Emitter(k_body, expect)
    later = here.compare("sgt", k_body.args[0], k.lower_bound)
    here.add(ArriveBarrierOp(operands=[empty, expect.slot, later]))
    for op in [*parts["copies"], expect]:
        op.erase()
    slot_index, phase_index = _state_indices(k)
    state_out = _release_last(k, holder, empty, slot_index, phase_index, stages)
    new_tile = _carry(tile, k, holder, slot_index, phase_index, state_out)
    ws.erase_dead(k_body)
    ws.erase_dead(new_tile.regions[0].block)
    ws.erase_dead(entry)
    func.attributes[PRODUCER_WARPS_ATTR] = IntegerAttr(producer, i32)


def _state_indices(k: ForOp) -> tuple[int, int]:
    """The iter-arg indices of the K loop's slot and phase (its wait's operands)."""
    body = k.regions[0].block
    wait = next(op for op in body.ops if isinstance(op, WaitBarrierOp))
    return wait.slot.index - 1, wait.phase.index - 1  # type: ignore[attr-defined]


def _release_last(k: ForOp, holder: Operation, empty: Value, slot_index: int, phase_index: int,
                  stages: int) -> tuple[Value, Value]:  # fmt: skip
    """After the K loop's last dot retired (every warp past its wait): thread 0 releases the
    last iteration's slot. Returns the (slot, phase) T's body has after the K loop."""
    if holder is k:  # no guard: release where the loop ran
        block = k.parent
        at = Emitter(block, k.next_op)  # type: ignore[arg-type]
        at.add(BarrierOp())
        ran = at.compare("slt", k.lower_bound, k.upper_bound)
        last = _previous(at, k.results[slot_index], stages)
        at.add(ArriveBarrierOp(operands=[empty, last, ran]))
        return k.results[slot_index], k.results[phase_index]
    then_block = holder.regions[0].block
    yield_op = then_block.last_op
    at = Emitter(then_block, yield_op)
    at.add(BarrierOp())
    last = _previous(at, k.results[slot_index], stages)
    at.add(ArriveBarrierOp(operands=[empty, last, at.const(1, i1)]))
    operands = list(yield_op.operands)  # type: ignore[union-attr]
    slot_at = operands.index(k.results[slot_index])
    phase_at = operands.index(k.results[phase_index])
    return holder.results[slot_at], holder.results[phase_at]


def _previous(at: Emitter, slot: Value, stages: int) -> Value:
    """The slot before `slot` in a ring of `stages`."""
    shifted = at.binary(AddIOp, slot, at.const(stages - 1, i32))
    return at.binary(RemUIOp, shifted, at.const(stages, i32))


def _carry(tile: ForOp, k: ForOp, holder: Operation, slot_index: int, phase_index: int,
           state_out: tuple[Value, Value]) -> ForOp:  # fmt: skip
    """T rebuilt carrying (slot, phase) into the K loop and out of its body."""
    entry = tile.parent
    at = Emitter(entry, tile)  # type: ignore[arg-type]
    zero = at.const(0, i32)
    new = ForOp(tile.lower_bound, tile.upper_bound, tile.step, [*tile.init_args, zero, zero])
    new.location = tile.location
    new.attributes.update(tile.attributes)
    old_block, new_block = tile.regions[0].block, new.regions[0].block
    *kept, slot, phase = new_block.args
    for old, arg in zip(old_block.args, kept, strict=True):
        arg.name_hint = old.name_hint
        old.replace_all_uses_with(arg)
    slot.name_hint, phase.name_hint = "ring_slot", "ring_phase"
    for op in list(old_block.ops):
        op.detach()
        new_block.append(op)
    k.set_operand(3 + slot_index, slot)  # lb, ub, step, then the inits
    k.set_operand(3 + phase_index, phase)
    if holder is not k:  # the guard's zero-trip path yields the K loop's inits: T's state
        then_yield = holder.regions[0].block.last_op
        else_yield = holder.regions[1].block.last_op
        operands = list(else_yield.operands)  # type: ignore[union-attr]
        results = list(then_yield.operands)  # type: ignore[union-attr]
        operands[results.index(k.results[slot_index])] = slot
        operands[results.index(k.results[phase_index])] = phase
        else_yield.set_operands(operands)  # type: ignore[union-attr]
    terminator = new_block.last_op
    terminator.set_operands([*terminator.operands, *state_out])  # type: ignore[union-attr]
    entry.insert_before(new, tile)  # type: ignore[union-attr]
    for old, result in zip(tile.results, new.results, strict=False):
        old.replace_all_uses_with(result)
    tile.erase()
    return new


def _producer(block: Block, tile: ForOp, k: ForOp, top_ops: list[Operation],
              middle_ops: list[Operation], inner_ops: list[Operation], parts: dict[str, Any],
              empty: Value) -> None:  # fmt: skip
    """The producer's region: T's range, each tile's K-loop producer (module doc)."""
    top = Emitter(block)
    mapping: dict[Value, Value] = {}
    for op in top_ops:
        top.add(op.clone(mapping))
    zero = top.const(0, i32)
    bounds = [mapping.get(v, v) for v in (tile.lower_bound, tile.upper_bound, tile.step)]
    loop = ForOp(*bounds, [zero, zero])
    top.add(loop)
    inside = loop.regions[0].block
    index, slot, phase = inside.args
    index.name_hint = "tile"
    mapping[tile.regions[0].block.args[0]] = index
    at = Emitter(inside)
    for op in middle_ops:
        at.add(op.clone(mapping))
    k_bounds = [mapping.get(v, v) for v in (k.lower_bound, k.upper_bound, k.step)]
    inner = ws.k_loop(at, k_bounds, mapping, inner_ops, parts["at"], parts["expect"],
                      parts["copies"], (parts["full"], empty), (slot, phase))  # fmt: skip
    at.add(YieldOp(operands=list(inner.results)))
    top.add(WarpReturnOp())


__all__ = ["refusal", "specialize", "tile_loop"]
