"""TMA into a pipelined loop's ring (docs/tma.md, step 2): NVIDIA's `LayoutRules.bulk_copies`
(`RingCopies`: which pipelined `tile.descriptor_load`s TMA brings into their ring, and in which
encoding) and the lowering of `tilec.dialects.gpu_bulk`'s ops with `tilec_nvidia.tma`'s
emitters.

A load TMA takes (`tma_lowering.claims`) of a 2-D block whose rows are whole swizzle widths
(32, 64 or 128 bytes) lands in its slot exactly as `#gpu.nvmma_shared<{swizzle = S,
transposed = false}>` lays a tile out (`NvmmaTile`: column blocks of S bytes one after another,
each row-major with its 16-byte chunks XOR-swizzled by row, the slot 1024-byte aligned), which
is TMA's box order (`tma_lowering._box_origins`) and swizzle: wgmma's descriptors read the slot
in place, and `ldmatrix` reads a `#gpu.dot_op` operand from it through `NvmmaTile`'s offsets.

- `gpu.init_barriers`: S 8-byte mbarriers on the shared-memory stack (above the rings), each
  initialized by thread 0 for one arrival, each followed by `fence.proxy.async` and `bar.sync`
  (Triton's sequence; the fence also orders every thread's earlier shared accesses before the
  copies that follow);
- `gpu.barrier_expect`: `mbarrier.arrive.expect_tx` by thread 0 where the predicate holds;
- `gpu.async_bulk_copy_global_to_local`: one `cp.async.bulk.tensor` a box by thread 0 where the
  predicate holds, on the descriptor's tensor-map parameter (`tma_lowering`'s, shared with its
  other claimed accesses);
- `gpu.wait_barrier`: every thread spins on `mbarrier.try_wait.parity`;
- `gpu.arrive_barrier` (a warp-specialized loop's release of a slot): `mbarrier.arrive` by
  thread 0 where the predicate holds;
- `gpu.inval_barriers`: `bar.sync` (every thread past its last wait), `mbarrier.inval` by
  thread 0, and the stack's bytes given back.
"""

from __future__ import annotations

from typing import Any

import attrs
from llvmlite import ir

from tilec.dialects.gpu_bulk import (
    BARRIER,
    AsyncBulkCopyGlobalToLocalOp,
    BarrierExpectOp,
    InitBarriersOp,
    InvalBarriersOp,
    WaitBarrierOp,
)
from tilec.dialects.gpu_warp_specialize import ArriveBarrierOp
from tilec.ir.types import element_type
from tilec.layout.axis_info import analyze_axis_info
from tilec.lowering.context import I8, I32, LoweringContext, lowers
from tilec_nvidia import tensor_map, tma, tma_lowering
from tilec_nvidia.tensor_core_layouts import NvmmaSharedEncodingAttr

BARRIER_BYTES = BARRIER.width // 8


@attrs.frozen
class RingCopies:
    """`LayoutRules.bulk_copies` of an arch with TMA: the encoding in which TMA brings a
    pipelined descriptor load's block into its ring slot, or None (it keeps cp.async);
    `producer_warps`: the warps `warp-specialize` gives a loop's producer (a warpgroup, which
    `setmaxnreg` takes as a whole: docs/tma.md step 5), 0 for none (`TILEC_NVIDIA_WARP_SPECIALIZE`
    set to `0`)."""

    arch: str
    producer_warps: int = 0

    def __call__(self, op: Any) -> NvmmaSharedEncodingAttr | None:
        return ring_encoding(self.arch, op)


def ring_encoding(arch: str, op: Any) -> NvmmaSharedEncodingAttr | None:
    """The `#gpu.nvmma_shared` layout TMA writes `op`'s block in (module doc), or None where TMA
    does not take it (not claimed, an innermost offset not known to be a multiple of 16 bytes:
    `innermost_known_aligned`, or `ring_swizzle` has none)."""
    if not tma_lowering.claims(arch, op) or not innermost_known_aligned(op):
        return None
    block = tuple(op.result.type.shape)
    swizzle = ring_swizzle(block, max(element_type(op.result.type).width // 8, 1))
    return None if swizzle is None else NvmmaSharedEncodingAttr(swizzle, False)


def innermost_known_aligned(op: Any) -> bool:
    """Whether `op`'s innermost offset is known (axis info of its function) to be a multiple of
    16 bytes, as TMA's innermost coordinate must be (an illegal instruction otherwise:
    triton#7385). The one-stage load tests it at run time (`tma_lowering.innermost_aligned`);
    a ring's copies, issued ahead, keep cp.async where it is not known."""
    func = tma_lowering.enclosing_function(op)
    if func is None:
        return False
    size = max(element_type(op.result.type).width // 8, 1)
    return analyze_axis_info(func).get(op.offsets[-1]).divisibility[0] * size % 16 == 0


def ring_swizzle(block: tuple[int, ...], size: int) -> int | None:
    """The swizzle (bytes) of the TMA boxes of a `block` of `size`-byte elements where they land
    in a slot exactly as `NvmmaTile` lays the block out, else None: a 2-D block whose rows are
    whole swizzle widths, each box starting at a multiple of 1024 bytes where there are several
    (TMA swizzles on the address, `NvmmaTile` on the row within its column block)."""
    swizzle = tensor_map.swizzle_bytes(block[-1] * size)
    if len(block) != 2 or not swizzle or block[1] * size % swizzle:
        return None
    box = tensor_map.box_shape(block, size, swizzle)
    box_bytes = box[0] * box[1] * size
    if box[1] * size != swizzle or (box_bytes % 1024 and box_bytes < block[0] * block[1] * size):
        return None
    return swizzle


@attrs.frozen
class Barriers:
    """A lowered `gpu.init_barriers`: `count` mbarriers from `base`, `offset` bytes into the
    shared-memory stack."""

    base: ir.Value
    offset: int
    count: int

    def at(self, b: ir.IRBuilder, slot: ir.Value) -> ir.Value:
        return b.gep(self.base, [b.mul(slot, I32(BARRIER_BYTES))], source_etype=I8)


def _arch(ctx: LoweringContext) -> str:
    return ctx.target.arch  # type: ignore[attr-defined]


def _slot(ctx: LoweringContext, value: Any) -> ir.Value:
    slot = ctx.get(value)
    return ctx.builder.trunc(slot, I32) if slot.type.width > 32 else slot


def _predicate(ctx: LoweringContext, value: Any) -> ir.Value:
    """`value` (i1) and this thread being the issuing thread 0 (any thread in a producer's
    region, which one thread runs: `tilec.lowering.warp_specialize`)."""
    if getattr(ctx, "single_thread", False):
        return ctx.get(value)
    return ctx.builder.and_(ctx.get(value), tma_lowering._issuer(ctx))


@lowers(InitBarriersOp)
def _init(ctx: LoweringContext, op: InitBarriersOp) -> None:
    b, arch = ctx.builder, _arch(ctx)
    count = op.result.type.slots  # type: ignore[attr-defined]
    offset = (ctx.shared_reserved + BARRIER_BYTES - 1) // BARRIER_BYTES * BARRIER_BYTES
    ctx.shared_reserved = offset + count * BARRIER_BYTES
    ctx.shared_bytes = max(ctx.shared_bytes, ctx.shared_reserved)
    base = b.gep(ctx.shared_base(BARRIER_BYTES), [I32(offset)], source_etype=I8)
    barriers = Barriers(base, offset, count)
    issuer = tma_lowering._issuer(ctx)
    for slot in range(count):
        tma.init(arch, b, barriers.at(b, I32(slot)), issuer, ctx.target.barrier_threads)
    ctx.set(op.result, barriers)


@lowers(ArriveBarrierOp)
def _arrive(ctx: LoweringContext, op: ArriveBarrierOp) -> None:
    b = ctx.builder
    barrier = ctx.get(op.barriers).at(b, _slot(ctx, op.slot))
    tma.arrive(_arch(ctx), b, barrier, _predicate(ctx, op.pred))


@lowers(BarrierExpectOp)
def _expect(ctx: LoweringContext, op: BarrierExpectOp) -> None:
    b = ctx.builder
    barrier = ctx.get(op.barriers).at(b, _slot(ctx, op.slot))
    nbytes = op.nbytes.value  # type: ignore[attr-defined]
    tma.expect_bytes(_arch(ctx), b, barrier, nbytes, _predicate(ctx, op.pred))


@lowers(AsyncBulkCopyGlobalToLocalOp)
def _copy(ctx: LoweringContext, op: AsyncBulkCopyGlobalToLocalOp) -> None:
    b, arch = ctx.builder, _arch(ctx)
    buffer = ctx.get(op.buffer)
    slot = _slot(ctx, op.slot)
    barrier = ctx.get(op.barriers).at(b, slot)
    argument = tma_lowering.tensor_map_argument(arch, ctx, op)
    block, swizzle, box = tma_lowering.layout(op)
    size = buffer.tile.element_bytes
    offsets = [b.trunc(o, I32) if o.type.width > 32 else o for o in map(ctx.get, op.offsets)]
    place = tma_lowering._Block(
        arch, argument, block, swizzle, box, size, buffer.slot(b, slot), offsets
    )
    issuer = _predicate(ctx, op.pred)
    for destination, coordinates in place.boxes(b):
        tma.copy_box(arch, b, destination, barrier, argument, coordinates, issuer)


@lowers(WaitBarrierOp)
def _wait(ctx: LoweringContext, op: WaitBarrierOp) -> None:
    b = ctx.builder
    barrier = ctx.get(op.barriers).at(b, _slot(ctx, op.slot))
    tma.wait(_arch(ctx), b, barrier, ctx.get(op.phase))


@lowers(InvalBarriersOp)
def _inval(ctx: LoweringContext, op: InvalBarriersOp) -> None:
    b, arch = ctx.builder, _arch(ctx)
    barriers: Barriers = ctx.get(op.barriers)
    ctx.target.barrier(b)  # every thread is past its last wait
    issuer = tma_lowering._issuer(ctx)
    for slot in range(barriers.count):
        tma.inval(arch, b, barriers.at(b, I32(slot)), issuer)
    if barriers.offset + barriers.count * BARRIER_BYTES == ctx.shared_reserved:
        ctx.shared_reserved = barriers.offset


__all__ = ["BARRIER_BYTES", "Barriers", "RingCopies", "ring_encoding", "ring_swizzle"]
