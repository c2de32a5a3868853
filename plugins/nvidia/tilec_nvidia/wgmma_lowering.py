"""Hopper's warpgroup tensor cores: `gpu.warp_group_dot` and its shared-memory operands -> LLVM IR.

- `gpu.convert_layout` of a register tensor to `#gpu.nvmma_shared` emits nothing where it stands:
  its value is a `PendingTile` (the registers and the tile layout), which the
  `gpu.warp_group_dot` reading it stores into the shared scratch buffer (both operands at once,
  1024-byte aligned), then `fence.proxy.async` and a barrier. A conversion read inside a loop
  (a loop-invariant operand that `accelerate-matmul` converts before the loop) stores at once,
  into shared memory of its own that stays reserved for the rest of the kernel; such conversions
  one right after the other are published together (one fence and one barrier after them all),
  after the prologue of the pipelined loop that follows them (`_Publication`). An operand that is a
  `gpu.local_load` of a pipelined ring is a `SharedView` of its slot already (written by cp.async).
- `tile.trans` of a tensor in shared memory is the same bytes seen transposed (no code).
- A may also be in registers (`#gpu.dot_op` of the version 3 layout, mma.sync's A fragment per
  warp): the instruction then takes 4 registers of A a K step instead of a descriptor.
- `gpu.warp_group_dot`: every warpgroup (4 consecutive warps) computes its 64-row slices of
  `#gpu.mma` version 3: per repetition of the warps' tile and per 32-byte K step, one
  `wgmma.mma_async.m64nNkK` on two shared-memory matrix descriptors (K 16 for f16/bf16, 8 for
  f32 operands, which wgmma reads as tf32, 32 for e4m3/e5m2, A and B of either); an operand
  whose contiguous dimension is K is K-major, else MN-major (the instruction's transpose bits,
  which exist for 16-bit types only: tf32 and float8 operands must be K-major). The wgmmas of
  the op form one group, after a `wgmma.fence`; the op then waits until at most `pendings`
  groups are in flight, threading the accumulators through the wait. Float8 operands with a
  `max_num_imprecise_acc` of at most K (Triton's `needsPartialAccumulator`) are summed apart:
  per output tile, the wgmmas of each `max_num_imprecise_acc` products (whole K steps) go into
  a fresh zero accumulator after a fence, are committed and waited for, and are added to the
  accumulator in f32 (`_split_accumulation`).

The descriptor (PTX ISA "matrix descriptor", the same encoding as CUTLASS's `GmmaDescriptor`):
bits 0-13 the start address / 16, 16-29 the leading-dimension byte offset / 16, 32-45 the
stride-dimension byte offset / 16, 62-63 the swizzle mode (1: 128 bytes, 2: 64, 3: 32). With
`W` the tile's swizzle bytes, both operands use SBO = 8 W (the next 8 stored rows); an MN-major
operand uses LBO = R W (the next column block of `NvmmaTile`, R its stored rows); a K-major one
never crosses a column block within one instruction (its K is 32 bytes), so its LBO is
unused (1).
"""

from __future__ import annotations

from collections.abc import Callable

import attrs
from llvmlite import ir

from tilec.dialects.gpu import ConvertLayoutOp, layout_of
from tilec.dialects.gpu_shared import AsyncCommitGroupOp, AsyncCopyGlobalToLocalOp, LocalAllocOp
from tilec.dialects.scf import ForOp, WhileOp
from tilec.dialects.tile import BarrierOp
from tilec.ir.core import Operation
from tilec.ir.traits import Pure
from tilec.ir.types import TensorType, element_type
from tilec.lowering.context import (
    F32,
    I8,
    I32,
    I64,
    LoweringContext,
    LoweringError,
    LTensor,
    location_prefix,
    lowers,
    memory_type,
)
from tilec.lowering.debug import guards_untouched_buffers
from tilec.lowering.matrix_units import lowers_conversion_to, pack_registers
from tilec.lowering.memory import byte_size
from tilec.lowering.shared_memory import store_registers
from tilec.lowering.swizzle import SharedView
from tilec_nvidia.nvmma_tile import NVMMA_ALIGNMENT, NvmmaTile
from tilec_nvidia.tensor_core_layouts import MmaEncodingAttr, NvmmaSharedEncodingAttr
from tilec_nvidia.wgmma_ops import FenceAsyncSharedOp, WarpGroupDotOp, WarpGroupDotWaitOp
from tilec_nvidia.wgmma_rewrite import WGMMA_K_BYTES

SWIZZLE_MODE = {128: 1, 64: 2, 32: 3}
WGMMA_OPERANDS = {"f16": "f16", "bf16": "bf16", "f32": "tf32", "f8E4M3FN": "e4m3", "f8E5M2": "e5m2"}
"""The wgmma operand type of each element type (f32 tensors are read as tf32)."""
FLOAT8 = ("e4m3", "e5m2")
WARPGROUP_WARPS = 4
WARPGROUP_ROWS = 64


@attrs.frozen
class PendingTile:
    """A register tensor converted to `#gpu.nvmma_shared` whose store waits for its reader:
    `source` is stored as `tile` lays it out; `view` is how the reader sees those bytes (the
    tile itself, or its transpose after a `tile.trans`)."""

    source: LTensor
    tile: NvmmaTile
    element: ir.Type
    view: NvmmaTile

    def transposed_view(self) -> PendingTile:
        """`tile.trans` of it: the same store, seen transposed."""
        return PendingTile(self.source, self.tile, self.element, self.view.transpose())


def nvmma_tile(ctx: LoweringContext, tensor_type: TensorType) -> tuple[NvmmaTile, ir.Type]:
    encoding = tensor_type.encoding
    assert isinstance(encoding, NvmmaSharedEncodingAttr)
    element = memory_type(tensor_type.element_type, ctx.target)
    rows, cols = tensor_type.shape
    tile = NvmmaTile(rows, cols, byte_size(element), encoding.swizzle, encoding.transposed)
    return tile, element


@lowers_conversion_to(NvmmaSharedEncodingAttr)
def lower_to_shared(ctx: LoweringContext, op: ConvertLayoutOp) -> bool:
    """Lower `op`, a conversion to `#gpu.nvmma_shared` (module doc)."""
    result_type = op.result.type
    assert isinstance(result_type, TensorType)
    tile, element = nvmma_tile(ctx, result_type)
    if op.result in ctx.values:
        return True  # stored with the conversion before it (`_stored_together`)
    if not _stored_once(op):
        ctx.set(op.result, PendingTile(ctx.get(op.source), tile, element, tile))
        return True
    # read in a nested region (a loop): stored once, here, into shared memory of its own, with
    # the conversions of the same kind right after it
    b = ctx.builder
    batch = _stored_together(op)
    places = []
    for conversion in batch:
        tile, element = nvmma_tile(ctx, conversion.result.type)  # type: ignore[arg-type]
        offset = _round_up(ctx.shared_reserved, NVMMA_ALIGNMENT)
        places.append((conversion, tile, element, offset, _untouched(ctx, conversion, offset)))
        ctx.shared_reserved = offset + _round_up(tile.nbytes, NVMMA_ALIGNMENT)
    ctx.shared_bytes = max(ctx.shared_bytes, ctx.shared_reserved)
    stores = []
    for conversion, tile, element, offset, _ in places:
        at = b.gep(ctx.shared_base(NVMMA_ALIGNMENT), [I32(offset)], source_etype=I8)
        stores.append((ctx.get(conversion.source), tile, element, at))
        ctx.set(conversion.result, SharedView(at, tile))
    barrier_first = not all(untouched for *_, untouched in places)
    results = frozenset(conversion.result for conversion in batch)
    ctx.defer(_Publication(ctx, stores, barrier_first, results))
    return True


_PASSED = (LocalAllocOp, AsyncCopyGlobalToLocalOp, AsyncCommitGroupOp, BarrierOp)
"""Ops a publication waits behind (`_Publication`): a pipelined loop's prologue before it."""


@attrs.define
class _Publication:
    """The stores of conversions stored once (`_stored_together`), put off past the ops that
    cannot read them (`_PASSED`, pure ops without regions: a pipelined loop's prologue, which
    `pipeline-loops` places between them and their loop), then a barrier first where an earlier
    reader may still read those bytes and no barrier has passed since, the stores,
    `fence.proxy.async` and a barrier. The prologue's copies then go before the stores, which
    wait for the operands' global loads: the two latencies overlap (one before the loop where
    they were two in a row; the attention backward's K and V, then Q and dO). The bytes are
    reserved already, so nothing placed meanwhile overlaps them."""

    ctx: LoweringContext
    stores: list[tuple]
    barrier_first: bool
    results: frozenset
    """The conversions' values: an op reading one gets them stored first."""

    def __call__(self, op: Operation) -> bool:
        passes = isinstance(op, _PASSED) or op.has_trait(Pure)
        if passes and not op.regions and self.results.isdisjoint(op.operands):
            if isinstance(op, BarrierOp) and not guards_untouched_buffers(self.ctx, op):
                self.barrier_first = False  # a barrier after every earlier reader
            return False
        b = self.ctx.builder
        if self.barrier_first:
            self.ctx.target.barrier(b)  # earlier readers of the scratch these bytes may overlap
        for source, tile, element, at in self.stores:
            store_registers(self.ctx, source, tile, element, at)
        self.ctx.target.fence_async_shared(b)
        self.ctx.target.barrier(b)
        return True


def _stored_once(op: ConvertLayoutOp) -> bool:
    """Whether `op`, a conversion to `#gpu.nvmma_shared`, is read in a nested region (a loop),
    so stored where it stands (module doc) rather than by its reader."""
    if not isinstance(getattr(op.result.type, "encoding", None), NvmmaSharedEncodingAttr):
        return False
    return not all(user.parent is op.parent for user in op.result.users)


def _stored_together(op: ConvertLayoutOp) -> list[ConvertLayoutOp]:
    """`op` and the conversions stored once that follow it with nothing between (the attention
    backward's K and V, then Q and dO): their stores share one barrier before them (where any
    needs one), one `fence.proxy.async` and one barrier after them, as Triton publishes its
    operands, instead of a fence and a barrier each (and a second barrier before the next's
    stores, right after the first's)."""
    batch = [op]
    later = op.next_op
    while isinstance(later, ConvertLayoutOp) and _stored_once(later):
        batch.append(later)
        later = later.next_op
    return batch


def _untouched(ctx: LoweringContext, op: ConvertLayoutOp, offset: int) -> bool:
    """Whether no thread has accessed the shared memory from `offset` up before `op`: nothing
    lowered before it has used those bytes (the lowering follows the program's order, and
    `ctx.shared_bytes` is the extent of every use so far) and no loop holds it (an earlier
    iteration would have). Then nobody can still be reading the bytes it writes, and the barrier
    before its stores goes (the attention forward's Q, the backward's K and V: Triton has none
    either)."""
    at = op.parent_op
    while at is not None:
        if isinstance(at, ForOp | WhileOp):
            return False
        at = at.parent_op
    return offset >= ctx.shared_bytes


def _round_up(value: int, multiple: int) -> int:
    return (value + multiple - 1) // multiple * multiple


def _store_pending(ctx: LoweringContext, operands: list[object]) -> list[SharedView]:
    """Store the `PendingTile`s among `operands` into the scratch buffer; every operand as a
    `SharedView`."""
    b = ctx.builder
    pending = [o for o in operands if isinstance(o, PendingTile)]
    if not pending:
        return operands  # type: ignore[return-value]
    ctx.target.barrier(b)  # earlier readers of the scratch buffer are done
    start = (ctx.shared_reserved + NVMMA_ALIGNMENT - 1) // NVMMA_ALIGNMENT * NVMMA_ALIGNMENT
    offsets, end = [], start
    for tile in pending:
        offsets.append(end)
        end += (tile.tile.nbytes + NVMMA_ALIGNMENT - 1) // NVMMA_ALIGNMENT * NVMMA_ALIGNMENT
    ctx.shared_bytes = max(ctx.shared_bytes, end)
    base = ctx.shared_base(NVMMA_ALIGNMENT)
    views: dict[int, SharedView] = {}
    for tile, offset in zip(pending, offsets, strict=True):
        at = b.gep(base, [I32(offset)], source_etype=I8)
        store_registers(ctx, tile.source, tile.tile, tile.element, at)
        views[id(tile)] = SharedView(at, tile.view)
    ctx.target.fence_async_shared(b)
    ctx.target.barrier(b)
    return [views.get(id(o), o) for o in operands]  # type: ignore[misc]


@attrs.frozen
class _Operand:
    """How one wgmma operand is addressed: K-major (K is its contiguous dimension) or MN-major
    (the instruction's transpose bit), and the descriptor of its first element for this
    warpgroup (`base`)."""

    view: SharedView
    k_dim: int
    base: ir.Value

    @property
    def k_major(self) -> bool:
        return self.view.tile.contiguous_dim == self.k_dim

    def descriptor(self, ctx: LoweringContext, row: int, col: int) -> ir.Value:
        """The matrix descriptor of the sub-matrix at (`row`, `col`) (module doc): `base` plus
        the sub-matrix's offset in 16-byte units, one 64-bit add of a constant as Triton's (the
        start field counts 16-byte units of the shared-memory window, which fits its 14 bits,
        and the tile and the warpgroup's offset are 16-byte aligned, so the sum carries into no
        other field)."""
        offset = self.view.tile.linear_byte_offset(row, col)
        assert offset % 16 == 0, offset
        return ctx.builder.add(self.base, I64(offset >> 4)) if offset else self.base


def _operand(ctx: LoweringContext, view: SharedView, k_dim: int, start: ir.Value) -> _Operand:
    """`view` with this warpgroup's offset: `start` (its first row of A or column of B, along
    the dimension that is not K) as bytes: whole stored rows where that dimension is the stored
    row, whole column blocks where it is the contiguous one; and the descriptor there."""
    b = ctx.builder
    tile = view.tile
    k_major = tile.contiguous_dim == k_dim
    if k_major:  # the warpgroup's rows or columns are stored rows
        extra = b.mul(start, I32(tile.swizzle))
    else:
        block = b.udiv(start, I32(tile.block_cols))
        extra = b.mul(block, I32(tile.stored[0] * tile.swizzle))
    lbo = 16 if k_major else tile.stored[0] * tile.swizzle
    # in 32 bits, as Triton's: the field keeps bits 4-17 of the address, which the carries of
    # the high half never reach (64-bit adds and shifts cost a loop 4-8 uniform instructions)
    address = b.add(b.ptrtoint(view.base, I32), extra)
    start_field = b.zext(b.and_(b.lshr(address, I32(4)), I32(0x3FFF)), I64)
    fields = (
        ((lbo >> 4) << 16) | ((8 * tile.swizzle >> 4) << 32) | (SWIZZLE_MODE[tile.swizzle] << 62)
    )
    return _Operand(view, k_dim, b.or_(start_field, ir.Constant(I64, fields)))


HOIST_A_MIN_N = 128
"""From this N on, a warp_group_dot whose A comes from registers (#gpu.dot_op: attention's P @ V)
packs all of A before `wgmma.fence`, threaded through it, rather than each k-step's registers
between the wgmmas: measured on the H100 (benchmarks/RESULTS.md), the attention forward at head dim
128 runs 3-7% faster so, and at head dim 64 up to 20% slower (the packed registers live longer and
cross the 128-register occupancy step of 8-warp blocks)."""


@lowers(WarpGroupDotOp)
def _warp_group_dot(ctx: LoweringContext, op: WarpGroupDotOp) -> None:
    b = ctx.builder
    layout = layout_of(op.result.type)
    if not isinstance(layout, MmaEncodingAttr) or layout.version != 3:
        raise LoweringError(
            f"{location_prefix(op)}gpu.warp_group_dot needs a #gpu.mma version 3 result"
        )
    a, bv = _store_pending(ctx, [ctx.get(op.a), ctx.get(op.b)])
    a_registers = isinstance(a, LTensor)  # #gpu.dot_op: wgmma's A from registers
    acc: LTensor = ctx.get(op.acc)
    (m_size, k_size), n_size = op.a.type.shape, op.b.type.shape[1]  # type: ignore[attr-defined]
    wm = layout.warps_per_cta[0]
    instr_n, instr_k = layout.instr_n, layout.instr_shape[2]
    tile_m, tile_n = layout.tile()
    if m_size % tile_m or n_size % tile_n or k_size % instr_k:
        raise LoweringError(
            f"{location_prefix(op)}gpu.warp_group_dot {m_size}x{n_size}x{k_size} is not made of whole "
            f"m64n{instr_n}k{instr_k} instructions of {layout}"
        )
    element, b_element = element_type(op.a.type), element_type(op.b.type)
    dtype, b_dtype = WGMMA_OPERANDS.get(str(element)), WGMMA_OPERANDS.get(str(b_element))
    mixed = b_element != element and not (dtype in FLOAT8 and b_dtype in FLOAT8)
    if dtype is None or mixed or WGMMA_K_BYTES * 8 // element.width != instr_k:  # type: ignore[attr-defined]
        raise LoweringError(
            f"{location_prefix(op)}gpu.warp_group_dot has no wgmma for {element} x {b_element} "
            f"operands with K = {instr_k} ({layout})"
        )
    reps_m, reps_n = m_size // tile_m, n_size // tile_n
    regs = instr_n // 2
    if len(acc.values) != reps_m * reps_n * regs:
        raise LoweringError(f"{location_prefix(op)}accumulator fragments do not match {layout}")
    # this warpgroup's first row and column, as byte offsets into A and B
    warp = ctx.uniform_warp_id()  # descriptors in uniform registers (no R2UR a wgmma)
    group_row = b.mul(b.udiv(b.urem(warp, I32(wm)), I32(WARPGROUP_WARPS)), I32(WARPGROUP_ROWS))
    group_col = b.mul(b.udiv(warp, I32(wm)), I32(instr_n))
    b_operand = _operand(ctx, bv, 0, group_col)
    a_operand = None if a_registers else _operand(ctx, a, 1, group_row)  # type: ignore[arg-type]
    transpose = (a_operand is not None and not a_operand.k_major, not b_operand.k_major)
    if dtype not in ("f16", "bf16") and (any(transpose) or (a_registers and dtype == "tf32")):
        raise LoweringError(
            f"{location_prefix(op)}wgmma reads {dtype} operands K-major only (A and B stored with "
            f"K contiguous, A from shared memory for tf32; accelerate-matmul places them so)"
        )
    limit = _imprecise_limit(op, dtype, k_size)
    operand_types = {"b_dtype": b_dtype} if dtype in FLOAT8 else {}
    reps_k = k_size // instr_k
    values = list(acc.values)
    k_width = layout_of(op.a.type).k_width if a_registers else 0  # type: ignore[union-attr]
    if a_operand is None and n_size >= HOIST_A_MIN_N:
        # every k-step's A registers packed first and threaded through the fence
        packed = pack_registers(ctx, list(a.values), k_width)  # type: ignore[union-attr]
        packed = ctx.target.wgmma_fence(b, packed)
    else:
        packed = None
        if limit is None:  # split accumulations fence each of their groups
            ctx.target.wgmma_fence(b)

    def a_fragment(rm: int, step: int) -> ir.Value | list[ir.Value]:
        """A of repetition `rm` and K step `step`: a descriptor, or this warp's 4 registers."""
        if a_operand is not None:
            return a_operand.descriptor(ctx, rm * tile_m, step * instr_k)
        at_a = (rm * reps_k + step) * 4
        if packed is not None:
            return packed[at_a : at_a + 4]
        return pack_registers(ctx, a.values[at_a * k_width : (at_a + 4) * k_width], k_width)  # type: ignore[union-attr]

    for rm in range(reps_m):
        for rn in range(reps_n):
            at = (rm * reps_n + rn) * regs
            chunk = values[at : at + regs]
            if limit is not None:  # float8 products summed apart, `limit` K at a time

                def issue(step: int, part: list, rm: int = rm, col: int = rn * tile_n):
                    desc_a = a_fragment(rm, step)
                    desc_b = b_operand.descriptor(ctx, step * instr_k, col)
                    return ctx.target.wgmma(
                        b, instr_n, dtype, desc_a, desc_b, part, *transpose, **operand_types
                    )

                values[at : at + regs] = _split_accumulation(
                    ctx, chunk, limit, reps_k, instr_k, issue
                )
                continue
            for step in range(reps_k):
                desc_a = a_fragment(rm, step)
                desc_b = b_operand.descriptor(ctx, step * instr_k, rn * tile_n)
                chunk = ctx.target.wgmma(
                    b, instr_n, dtype, desc_a, desc_b, chunk, *transpose, **operand_types
                )
            values[at : at + regs] = chunk
    if limit is None:  # split accumulations have waited for each of their groups
        ctx.target.wgmma_commit(b)
        pendings = op.pendings.value  # type: ignore[attr-defined]
        values = ctx.target.wgmma_wait(b, values, pendings)
    ctx.set(op.result, LTensor(op.result.type, values))


def _imprecise_limit(op: WarpGroupDotOp, dtype: str, k_size: int) -> int | None:
    """`max_num_imprecise_acc` where the float8 products of `op` must be summed apart (Triton's
    `needsPartialAccumulator`: float8 operands, f32 accumulators and a limit of at most K);
    None where the tensor cores accumulate all of K onto the accumulator themselves."""
    attr = op.attributes.get("max_num_imprecise_acc")
    if attr is None or dtype not in FLOAT8 or str(element_type(op.acc.type)) != "f32":
        return None
    limit = attr.value  # type: ignore[attr-defined]
    return limit if limit <= k_size else None


def _split_accumulation(
    ctx: LoweringContext,
    acc: list[ir.Value],
    limit: int,
    reps_k: int,
    instr_k: int,
    issue: Callable[[int, list[ir.Value]], list[ir.Value]],
) -> list[ir.Value]:
    """Triton's split float8 accumulation: the wgmmas of K steps go into a fresh (zero)
    accumulator until they have summed `limit` products along K (at least one step) or K ends;
    then, once they are done (committed and waited for), it is added to `acc` in f32.
    `issue(step, part)` issues the wgmma of K step `step` onto `part`."""
    b = ctx.builder
    zeros = [ir.Constant(F32, 0.0)] * len(acc)
    part, summed = None, 0
    for step in range(reps_k):
        if part is None:
            ctx.target.wgmma_fence(b)  # the fresh accumulator's registers were just written
        part = issue(step, zeros if part is None else part)
        summed += instr_k
        if summed >= limit or step == reps_k - 1:
            ctx.target.wgmma_commit(b)
            part = ctx.target.wgmma_wait(b, part, 0)
            acc = [b.fadd(x, y) for x, y in zip(acc, part, strict=True)]
            part, summed = None, 0
    return acc


@lowers(WarpGroupDotWaitOp)
def _warp_group_dot_wait(ctx: LoweringContext, op: WarpGroupDotWaitOp) -> None:
    source: LTensor = ctx.get(op.source)
    pendings = op.pendings.value  # type: ignore[attr-defined]
    values = ctx.target.wgmma_wait(ctx.builder, source.values, pendings)
    ctx.set(op.result, LTensor(op.result.type, values))


@lowers(FenceAsyncSharedOp)
def _fence_async_shared(ctx: LoweringContext, op: FenceAsyncSharedOp) -> None:
    ctx.target.fence_async_shared(ctx.builder)


__all__ = ["PendingTile", "lower_to_shared", "nvmma_tile"]
