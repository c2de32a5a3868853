"""`tile.descriptor_store` through TMA (docs/tma.md, step 3): NVIDIA's `descriptor_store`.

A claimed store (`tma_lowering.claims`, behind `tma_lowering.STORES`) writes its block into the
swizzled scratch buffer in the layout of the tensor map's boxes (`tma_lowering._Block`), makes
the writes visible to the async proxy (`fence.proxy.async.shared::cta` by every writer, then a
barrier), and thread 0 issues one `cp.async.bulk.tensor.Nd.global.shared::cta.bulk_group` a
box, commits the group and waits for it to complete before the buffer is used again.

A TMA store is not the masked store it stands for everywhere. On Hopper (the H200, 2026-11-27;
triton-lang/triton#11583, #7385):

- it writes a row's elements in whole 16-byte chunks of global memory: where the tensor's
  innermost extent is not a multiple of 16 bytes, a box reaching past it also writes the
  elements up to the next 16-byte boundary (a column slice's neighbours: an fp32 store of 90
  columns of a 96-column tensor wrote columns 90 and 91);
- a box starting before the tensor (a negative coordinate) raised an illegal instruction, as
  does an innermost coordinate that is not a multiple of 16 bytes;
- a box lying wholly past the tensor has nothing to write, and TMA is not trusted with it.

So the store tests, at run time and once for the whole block (its offsets and the tensor's
sizes are the same in every thread: the branch is uniform), whether TMA writes exactly the
elements the mask holds (`exact`): every offset non-negative, the innermost one a multiple of
16 bytes, and the block's rows ending inside the tensor or the tensor's rows a multiple of 16
bytes. Where it does, the TMA store, each box issued only if it starts inside the tensor;
elsewhere, the masked store of the op's pointers (`tilec.lowering.memory.masked_store`), which
honours every element. A block at the tensor's edge of a tensor whose rows are not 16-byte
multiples, or one starting before the tensor, is therefore an ordinary masked store.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from llvmlite import ir

from tilec.dialects.tile import DescriptorStoreOp
from tilec.ir.types import element_type
from tilec.lowering.context import I32, LoweringContext, memory_type
from tilec.lowering.memory import masked_store
from tilec_nvidia import tma, tma_lowering


def descriptor_store(arch: str, ctx: LoweringContext, op: DescriptorStoreOp) -> bool:
    """Lower a claimed descriptor store (module doc); False where `op` is not claimed."""
    if not tma_lowering.claims(arch, op):  # perhaps on a map the kernel builds
        from tilec_nvidia import tma_made

        return tma_made.descriptor_store(arch, ctx, op)
    b = ctx.builder
    place = tma_lowering._prepare(arch, ctx, op)
    sizes = [_size(b, ctx.fn.args, part) for part in tma_lowering.parts(op.shape_params)]
    store_where(arch, ctx, op, place, sizes, exact(b, place.offsets, sizes, place.block,
                                                   place.size))  # fmt: skip
    return True


def store_where(arch: str, ctx: LoweringContext, op: DescriptorStoreOp, place: Any,
                sizes: Sequence[ir.Value], through_tma: ir.Value,
                before: Any = None) -> None:  # fmt: skip
    """The store through TMA where `through_tma` (i1, the same in every thread) holds, after
    `before(ctx)` (a made descriptor's map), else the masked store it stands for."""
    b = ctx.builder
    function = b.function
    tma_block = function.append_basic_block("tma.store")
    masked_block = function.append_basic_block("tma.store.masked")
    done = function.append_basic_block("tma.store.done")
    b.cbranch(through_tma, tma_block, masked_block)
    b.position_at_end(tma_block)
    if before is not None:
        before(ctx)
    _store_boxes(arch, ctx, op, place, sizes)
    b.branch(done)
    b.position_at_end(masked_block)
    masked_store(ctx, op)
    b.branch(done)
    b.position_at_end(done)


def _size(b: ir.IRBuilder, args: Any, part: Any) -> ir.Value:
    """A size of the descriptor (i32; `tma_lowering.parts`): its parameter (an i64 one clamped
    to 2**31 - 1, past every i32 offset), the constant `-part`, or the product of such, in
    the product's width, as the kernel computed it."""
    if isinstance(part, int) and part < 0:
        return I32(min(-part, 2**31 - 1))
    arg = args[part] if isinstance(part, int) else tma_lowering.product(b, args, part)
    if arg.type.width <= 32:
        return arg
    limit = ir.Constant(arg.type, 2**31 - 1)
    return b.trunc(b.select(b.icmp_signed(">", arg, limit), limit, arg), I32)


def exact(b: ir.IRBuilder, offsets: Sequence[ir.Value], sizes: Sequence[ir.Value],
          block: Sequence[int], size: int) -> ir.Value:  # fmt: skip
    """i1: whether TMA stores exactly the elements of the block at `offsets` (i32, outermost
    first) that lie in a tensor of `sizes` (i32) (module doc), `size`-byte elements."""
    ok: ir.Value = ir.Constant(ir.IntType(1), 1)
    for offset in offsets:
        ok = b.and_(ok, b.icmp_signed(">=", offset, I32(0)))
    inner, extent = offsets[-1], sizes[-1]
    aligned = tma_lowering.innermost_aligned(b, inner, size)
    whole_rows = tma_lowering.innermost_aligned(b, extent, size)  # rows of whole chunks
    # the block's rows end inside the tensor (inner <= extent - block: no overflow)
    inside = b.icmp_signed("<=", inner, b.sub(extent, I32(block[-1])))
    return b.and_(ok, b.and_(aligned, b.or_(whole_rows, inside)))


def _store_boxes(arch: str, ctx: LoweringContext, op: DescriptorStoreOp, place: Any,
                 sizes: Sequence[ir.Value]) -> None:  # fmt: skip
    """The registers into the scratch buffer, fenced for the async proxy, then one TMA store
    a box that starts inside the tensor, waited for (module doc)."""
    b, target = ctx.builder, ctx.target
    issuer = tma_lowering._issuer(ctx)
    value_type = op.value.type
    mem = memory_type(element_type(value_type), target)
    registers = ctx.get(op.value).values
    target.barrier(b)  # every thread done with the scratch
    vec, addresses = place.accesses(ctx, value_type)
    for i, address in enumerate(addresses):
        group = registers[i * vec : (i + 1) * vec]
        if vec == 1:
            b.store(group[0], address, align=place.size)
            continue
        vector: ir.Value = ir.Constant(ir.VectorType(mem, vec), None)
        for k, register in enumerate(group):
            vector = b.insert_element(vector, register, I32(k))
        b.store(vector, address, align=vec * place.size)
    tma.fence_async_shared(arch, b)  # each writer's stores, visible to the async proxy
    target.barrier(b)  # every writer's, before thread 0 issues the copies
    for source, coordinates in place.boxes(b):
        starts_inside = issuer
        for coordinate, extent in zip(coordinates, sizes, strict=True):
            starts_inside = b.and_(starts_inside, b.icmp_signed("<", coordinate, extent))
        tma.store_box(arch, b, source, place.argument, coordinates, starts_inside)
    tma.commit_and_wait(arch, b, issuer)
    target.barrier(b)  # the scratch is free again


__all__ = ["descriptor_store", "exact", "store_where"]
