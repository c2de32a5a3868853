"""Shared-memory buffers and asynchronous copies (`tilec.dialects.gpu_shared`) -> LLVM IR.

Buffers live in the block's dynamic shared memory (`global_smem`) as a stack: `gpu.local_alloc`
takes the next 128-byte aligned bytes above the live buffers, `gpu.local_dealloc` gives them
back (buffers are freed in the reverse order of their allocation, as `pipeline-loops` places
them around its loop), and the scratch buffer of layout conversions lies above every live buffer
(`LoweringContext.shared_reserved`). The kernel's shared memory is the largest extent reached;
`make_llir` checks it against the arch's limit.

Each slot is a `SwizzledTile` (16-byte chunks XOR-swizzled by row; a vector's slot is one row),
the layout `ldmatrix` reads of `#gpu.dot_op` expect, or for a buffer in a shared encoding a
backend lays out itself (`tilec.lowering.matrix_units.lays_out_shared`: `#gpu.nvmma_shared`'s
`NvmmaTile`, wgmma's swizzle modes, 1024-byte aligned) the tile it gives, which
`gpu.local_load` gives as a `SharedView` of the slot.
`gpu.async_copy_global_to_local` copies each thread's vectors with the target's `async_copy`
(`cp.async` on NVIDIA: 16 bytes where axis info proves them, else 8 or 4, down to one 4-byte
element, as a tf32 operand stored transposed needs; a masked-off vector is read with source size
0, so its bytes are zeros; replicas copy what their owners do); a vector of fewer than 4 bytes is
loaded and stored synchronously (correct, without the overlap), and where the buffer is one a
backend's matrix instruction reads in place (wgmma, through NVIDIA's async proxy) the stores are
followed by `TargetInfo.fence_async_shared`, once for the copies of one batch (as `gpu.local_store`s
into such a buffer are). `gpu.local_load` into a layout
no backend reads its own way (a blocked or slice layout: `pipeline-loops`' rings of small loads
used in registers) reads each thread's elements back, as vectors where they are consecutive.
"""

from __future__ import annotations

from typing import Any

import attrs
from llvmlite import ir

from tilec.dialects.gpu import SharedEncodingAttr
from tilec.dialects.gpu_matrix import OperandEncodingAttr, SwizzledSharedEncodingAttr
from tilec.dialects.gpu_shared import (
    AsyncCommitGroupOp,
    AsyncCopyGlobalToLocalOp,
    AsyncWaitOp,
    LocalAllocOp,
    LocalDeallocOp,
    LocalLoadOp,
    LocalStoreOp,
)
from tilec.ir.traits import Pure
from tilec.ir.types import MemDescType, TensorType
from tilec.lowering.context import (
    I8,
    I32,
    LoweringContext,
    LoweringError,
    LTensor,
    _where,
    lowers,
    memory_type,
)
from tilec.lowering.matrix_units import SHARED_READS, SHARED_TILES, registered
from tilec.lowering.memory import byte_size, masked_global_load, unpack_access, vector_width
from tilec.lowering.memory_hints import MemoryHints, hints_of
from tilec.lowering.swizzle import SharedView, SwizzledTile
from tilec.lowering.target import TargetInfo

ALIGNMENT = 128
ASYNC_COPY_BYTES = (4, 8, 16)
"""The sizes of one asynchronous copy (`cp.async`): a vector of fewer bytes (a 2-byte element
alone) is loaded and stored synchronously."""


@attrs.frozen
class SharedBuffer:
    """A lowered `!gpu.memdesc`: `slots` tiles from `base`, `offset` bytes into shared memory,
    one every `slot_bytes`."""

    base: ir.Value
    offset: int
    nbytes: int
    tile: Any
    """A `SwizzledTile`, or the tile a backend lays out for the buffer's encoding."""
    element: ir.Type
    slot_bytes: int

    def slot(self, b: ir.IRBuilder, index: ir.Value) -> ir.Value:
        return b.gep(self.base, [b.mul(index, I32(self.slot_bytes))], source_etype=I8)

    def address(self, b: ir.IRBuilder, slot: ir.Value, row: ir.Value, col: ir.Value) -> ir.Value:
        offset = b.mul(self.tile.emit_offset(b, row, col), I32(self.tile.element_bytes))
        return b.gep(slot, [offset], source_etype=I8)


@lowers(LocalAllocOp)
def _alloc(ctx: LoweringContext, op: LocalAllocOp) -> None:
    t = op.result.type
    assert isinstance(t, MemDescType)
    element = memory_type(t.element_type, ctx.target)
    rows, cols = (1, *t.tile_shape) if len(t.tile_shape) == 1 else t.tile_shape
    tile: Any
    layout = registered(SHARED_TILES, t.encoding)
    if layout is not None:  # a backend's own shared layout (tilec.lowering.matrix_units)
        tile, align = layout(t, byte_size(element))
    else:
        transposed = isinstance(t.encoding, SwizzledSharedEncodingAttr) and t.encoding.transposed
        tile = SwizzledTile(rows, cols, byte_size(element), transposed)
        align = ALIGNMENT
    slot_bytes = (tile.nbytes + align - 1) // align * align
    offset = (ctx.shared_reserved + align - 1) // align * align
    nbytes = t.slots * slot_bytes
    ctx.shared_reserved = offset + nbytes
    ctx.shared_bytes = max(ctx.shared_bytes, ctx.shared_reserved)
    base = ctx.builder.gep(ctx.shared_base(align), [I32(offset)], source_etype=I8)
    ctx.set(op.result, SharedBuffer(base, offset, nbytes, tile, element, slot_bytes))


@lowers(LocalDeallocOp)
def _dealloc(ctx: LoweringContext, op: LocalDeallocOp) -> None:
    buffer: SharedBuffer = ctx.get(op.buffer)
    if buffer.offset + buffer.nbytes == ctx.shared_reserved:
        ctx.shared_reserved = buffer.offset
    # else memory reserved above it since (a loop-invariant wgmma operand) stays live: the
    # buffer's bytes stay reserved too, which is safe


@lowers(AsyncCopyGlobalToLocalOp)
def _async_copy(ctx: LoweringContext, op: AsyncCopyGlobalToLocalOp) -> None:
    b = ctx.builder
    buffer: SharedBuffer = ctx.get(op.buffer)
    ptrs: LTensor = ctx.get(op.ptr)
    masks = None if op.mask is None else ctx.get(op.mask).values
    slot = buffer.slot(b, ctx.get(op.slot))
    mapping = ptrs.mapping
    vec = _copy_vector(ctx, op)
    asynchronous = not _copies_synchronously(ctx, op, vec)
    nbytes = vec * buffer.tile.element_bytes
    hints = hints_of(op, store=False)
    if hints is not None:
        hints = ctx.target.prepare_memory_hints(b, hints)
    synchronous = []
    starts = range(0, len(ptrs.values), vec)
    for first, dst in zip(starts, _destinations(ctx, buffer, slot, mapping, starts), strict=True):
        mask = None if masks is None else masks[first]
        if asynchronous:
            size = None if mask is None else b.select(mask, I32(nbytes), I32(0))
            if hints is None:
                ctx.target.async_copy(b, dst, ptrs.values[first], size, nbytes)
            else:
                ctx.target.async_copy(b, dst, ptrs.values[first], size, nbytes, hints=hints)
            continue
        synchronous.append((ptrs.values[first], mask, dst))
    _copy_now(ctx, buffer, vec, synchronous, hints)
    if synchronous and not _fenced_later(ctx, op):
        _fence_for_in_place_reads(ctx, op.buffer.type)


def _copy_vector(ctx: LoweringContext, op: AsyncCopyGlobalToLocalOp) -> int:
    """The elements of one copy of `op`: a vector along the slot's contiguous dimension."""
    buffer: SharedBuffer = ctx.get(op.buffer)
    if _tile_dim(LTensor(op.ptr.type, []).mapping) != buffer.tile.contiguous_dim:
        return 1
    return vector_width(ctx, op.ptr, op.mask, buffer.tile.element_bytes)


def _copies_synchronously(
    ctx: LoweringContext, op: AsyncCopyGlobalToLocalOp, vec: int | None = None
) -> bool:
    """Whether `op`'s copies are loads and stores (no asynchronous copy of their size), `vec`
    the elements of one (`_copy_vector`, computed where not given)."""
    vec = _copy_vector(ctx, op) if vec is None else vec
    nbytes = vec * ctx.get(op.buffer).tile.element_bytes
    return not (has_async_copies(ctx.target) and nbytes in ASYNC_COPY_BYTES)


def _fenced_later(ctx: LoweringContext, op: AsyncCopyGlobalToLocalOp) -> bool:
    """Whether a later synchronous copy into a buffer read in place follows `op` with only
    pure ops between: that copy's fence orders `op`'s stores too (one fence for a ring's A
    and B, as Triton's one fence a dot)."""
    later = op.next_op
    while later is not None:
        if isinstance(later, AsyncCopyGlobalToLocalOp):
            if _read_in_place(later.buffer.type) and _copies_synchronously(ctx, later):
                return True
        elif not later.has_trait(Pure):
            return False
        later = later.next_op
    return False


def _destinations(
    ctx: LoweringContext, buffer: SharedBuffer, slot: ir.Value, mapping: Any, starts: range
) -> list[ir.Value]:
    """The shared address of each copy (the registers `starts` of `mapping`). A register whose
    offset from an earlier one's is a multiple of the tile's `periods` in both dimensions is
    that one's address plus a constant, the same in every thread (the assembler folds it into
    the copy: Triton's `[%r + 4096]`); where the layout's coordinates wrap around the tile
    (replicas), or a tile has no periods, each is computed."""
    coords = ctx.element_coords(mapping)
    tile = buffer.tile
    periods = getattr(tile, "periods", None)
    if periods is not None and _wraps(mapping):
        periods = None
    anchors: dict[tuple[int, int], tuple[ir.Value, int]] = {}
    addresses = []
    for first in starts:
        row, col = tile_coords(coords[first])
        reg = (
            (0, *mapping.registers[first]) if len(mapping.shape) == 1 else mapping.registers[first]
        )
        key = None if periods is None else (reg[0] % periods[0], reg[1] % periods[1])
        if key in anchors:
            anchor, offset = anchors[key]
            delta = (tile.offset(*reg) - offset) * tile.element_bytes
            addresses.append(ctx.builder.gep(anchor, [I32(delta)], source_etype=I8))
            continue
        address = buffer.address(ctx.builder, slot, row, col)
        if key is not None:
            anchors[key] = (address, tile.offset(*reg))
        addresses.append(address)
    return addresses


def _wraps(mapping: Any) -> bool:
    """Whether a thread's register coordinates wrap around the shape (replicated layouts)."""
    return any(
        reg[d] + dim.lane_scale * (dim.lane_count - 1) + dim.warp_scale * (dim.warp_count - 1)
        >= size
        for reg in mapping.registers
        for d, (dim, size) in enumerate(zip(mapping.dims, mapping.shape, strict=True))
    )


def _copy_now(
    ctx: LoweringContext,
    buffer: SharedBuffer,
    vec: int,
    copies: list[tuple[ir.Value, ir.Value | None, ir.Value]],
    hints: MemoryHints | None,
) -> None:
    """The synchronous form of `copies` (source, mask, destination) of `vec` elements each:
    every load (zeros where masked off), then every store, so that the loads are in flight
    together (a store right after its load waits for it: one memory latency a copy)."""
    b = ctx.builder
    access = ir.VectorType(buffer.element, vec) if vec > 1 else buffer.element
    align = vec * buffer.tile.element_bytes
    zero = ir.Constant(access, [ir.Constant(buffer.element, 0)] * vec if vec > 1 else 0)
    loaded = [
        masked_global_load(ctx, src, access, align, hints, mask, zero) for src, mask, _ in copies
    ]
    for value, (_, _, dst) in zip(loaded, copies, strict=True):
        b.store(value, dst, align=align)


@lowers(LocalStoreOp)
def _local_store(ctx: LoweringContext, op: LocalStoreOp) -> None:
    buffer: SharedBuffer = ctx.get(op.buffer)
    slot = buffer.slot(ctx.builder, ctx.get(op.slot))
    store_registers(ctx, ctx.get(op.value), buffer.tile, buffer.element, slot)
    _fence_for_in_place_reads(ctx, op.buffer.type)


def _fence_for_in_place_reads(ctx: LoweringContext, buffer_type: Any) -> None:
    """After this thread's stores into a buffer in a shared encoding its backend lays out
    (read in place by the backend's matrix instruction: NVIDIA's wgmma, through the async
    proxy), `TargetInfo.fence_async_shared`, before the barrier that orders them before the
    reads: as Triton's fence-insertion puts `fence.proxy.async` between shared memory written
    from registers and the wgmma reading it. Not after `cp.async`, as Triton's: its rings fill
    without a fence (`pipeline-loops`' module doc)."""
    if _read_in_place(buffer_type):
        ctx.target.fence_async_shared(ctx.builder)


def _read_in_place(buffer_type: Any) -> bool:
    """Whether a buffer of `buffer_type` is in a shared encoding its backend lays out (and its
    matrix instruction reads in place)."""
    return registered(SHARED_TILES, buffer_type.encoding) is not None


def store_registers(
    ctx: LoweringContext,
    tensor: LTensor,
    tile: Any,
    element: ir.Type,
    base: ir.Value,
) -> None:
    """Every thread stores its registers of `tensor` at their offsets in `tile` from `base`, as
    vectors (up to one 16-byte chunk) where its layout holds consecutive elements along the
    tile's contiguous dimension (replicas store what their owners do)."""
    b = ctx.builder
    mapping = tensor.mapping
    vec = _tile_vector(mapping, tile)
    coords = ctx.element_coords(mapping)
    eb = tile.element_bytes
    for first in range(0, len(tensor.values), vec):
        row, col = tile_coords(coords[first])
        offset = b.mul(tile.emit_offset(b, row, col), I32(eb))
        address = b.gep(base, [offset], source_etype=I8)
        values = tensor.values[first : first + vec]
        if vec == 1:
            b.store(values[0], address, align=eb)
            continue
        vector: ir.Value = ir.Constant(ir.VectorType(element, vec), None)
        for i, value in enumerate(values):
            vector = b.insert_element(vector, value, I32(i))
        b.store(vector, address, align=eb * vec)


def load_registers(
    ctx: LoweringContext, result_type: TensorType, tile: Any, element: ir.Type, base: ir.Value
) -> list[ir.Value]:
    """`store_registers`' reverse: every thread reads the elements its layout of `result_type`
    holds from `tile` at `base`, as vectors (up to one 16-byte chunk) where they are consecutive
    along the tile's contiguous dimension (elements of at least a byte: no i1)."""
    b = ctx.builder
    mapping = LTensor(result_type, []).mapping
    vec = _tile_vector(mapping, tile)
    access = ir.VectorType(element, vec) if vec > 1 else element
    coords = ctx.element_coords(mapping)
    eb = tile.element_bytes
    values: list[ir.Value] = []
    for first in range(0, mapping.num_registers, vec):
        row, col = tile_coords(coords[first])
        offset = b.mul(tile.emit_offset(b, row, col), I32(eb))
        address = b.gep(base, [offset], source_etype=I8)
        values += unpack_access(b, b.load(address, typ=access, align=eb * vec), vec)
    return values


def tile_coords(coords: list[ir.Value]) -> tuple[ir.Value, ir.Value]:
    """A register's (row, column) in a slot: a vector's slot is a tile of one row."""
    return (I32(0), coords[0]) if len(coords) == 1 else (coords[0], coords[1])


def _tile_dim(mapping: Any) -> int | None:
    """The tile dimension along which `mapping`'s threads hold consecutive elements."""
    dim = mapping.contiguous_dim
    return None if dim is None else dim + 2 - len(mapping.shape)


def _tile_vector(mapping: Any, tile: Any) -> int:
    if _tile_dim(mapping) != tile.contiguous_dim:
        return 1
    return max(1, min(mapping.contiguity, tile.chunk_elements))


def has_async_copies(target: TargetInfo) -> bool:
    """Whether `target` has asynchronous global -> shared copies (its `async_copy` hook): on a
    target without (AMD's gfx9: no cp.async), `gpu.async_copy_global_to_local` loads into
    registers and stores to shared memory where it stands, and the group ops are nothing (the
    barrier after a wait orders the stores before the reads): a ring still double-buffers, with
    the next tile's loads issued before the current tile's math."""
    return type(target).async_copy is not TargetInfo.async_copy


@lowers(AsyncCommitGroupOp)
def _commit(ctx: LoweringContext, op: AsyncCommitGroupOp) -> None:
    if has_async_copies(ctx.target):
        ctx.target.async_commit(ctx.builder)


@lowers(AsyncWaitOp)
def _wait(ctx: LoweringContext, op: AsyncWaitOp) -> None:
    if has_async_copies(ctx.target):
        ctx.target.async_wait(ctx.builder, op.num.value)  # type: ignore[attr-defined]


@lowers(LocalLoadOp)
def _local_load(ctx: LoweringContext, op: LocalLoadOp) -> None:
    buffer: SharedBuffer = ctx.get(op.buffer)
    result_type = op.result.type
    assert isinstance(result_type, TensorType)
    if isinstance(result_type.encoding, SharedEncodingAttr):  # read in place: a view
        slot = buffer.slot(ctx.builder, ctx.get(op.slot))
        ctx.set(op.result, SharedView(slot, buffer.tile))  # type: ignore[arg-type]
        return
    read = registered(SHARED_READS, result_type.encoding)
    if read is None and not isinstance(result_type.encoding, OperandEncodingAttr):
        slot = buffer.slot(ctx.builder, ctx.get(op.slot))
        values = load_registers(ctx, result_type, buffer.tile, buffer.element, slot)
        ctx.set(op.result, LTensor(result_type, values))
        return
    if read is None:
        raise LoweringError(
            f"{_where(op)}gpu.local_load reads into the operand layouts of a matrix unit whose "
            f"backend registered the read (tilec.lowering.matrix_units); got {result_type}"
        )
    slot = buffer.slot(ctx.builder, ctx.get(op.slot))
    values = read(ctx, op, buffer.tile, slot)  # a backend's matrix-unit operands
    ctx.set(op.result, LTensor(result_type, values))


__all__ = ["ALIGNMENT", "SharedBuffer", "load_registers", "store_registers", "tile_coords"]
