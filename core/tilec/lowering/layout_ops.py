"""Tensor creation and data movement between layouts and shapes.

`tile.splat` and `tile.make_range` fill a thread's registers directly. The ops that move elements
(`tile.broadcast`, `tile.expand_dims`, `tile.reshape`, `tile.trans`, `gpu.convert_layout`) are
all one rearrangement: the result element at coordinates `c` is the source element whose
row-major linear index is `sum(c[i] * weight[i])` (weights 0 along broadcast dimensions, the
source strides permuted for a transpose, the result strides for a reshape). When every thread
already holds, in a fixed register, each element its result registers need (checked for every
distinct thread placement of `thread_mapping(...)`: `register_picks`), the result just picks
registers; otherwise the elements go through the shared scratch buffer: every thread writes its
registers to their linear indices, and reads its result registers back by coordinates.
"""

from __future__ import annotations

from functools import lru_cache

import attrs
from llvmlite import ir

from tilec.dialects.gpu import (
    ConvertLayoutOp,
    SharedEncodingAttr,
    in_loop_value_family,
    layout_of,
)
from tilec.dialects.tile import (
    BroadcastOp,
    ExpandDimsOp,
    MakeRangeOp,
    ReshapeOp,
    SplatOp,
    TransOp,
)
from tilec.ir.core import Operation
from tilec.ir.types import IntegerType, TensorType
from tilec.layout.mapping import thread_mapping
from tilec.layout.mapping_types import ThreadMapping
from tilec.lowering.context import I8, I32, LoweringContext, LTensor, lowers, memory_type
from tilec.lowering.matrix_units import CONVERSIONS, registered
from tilec.lowering.memory import (
    MAX_VECTOR_BYTES,
    byte_size,
    pack_access,
    unpack_access,
)
from tilec.lowering.swizzle import SwizzledTile, swizzled_pointers


@lowers(SplatOp)
def _splat(ctx: LoweringContext, op: SplatOp) -> None:
    value = ctx.get(op.source)
    result_type = op.result.type
    count = LTensor(result_type, []).mapping.num_registers
    ctx.set(op.result, LTensor(result_type, [value] * count))


@lowers(MakeRangeOp)
def _make_range(ctx: LoweringContext, op: MakeRangeOp) -> None:
    result_type = op.result.type
    start = op.start_int
    coords = ctx.element_coords(LTensor(result_type, []).mapping)
    b = ctx.builder
    values = [b.add(c[0], ir.Constant(I32, start)) if start else c[0] for c in coords]
    ctx.set(op.result, LTensor(result_type, values))


def _strides(shape: tuple[int, ...]) -> tuple[int, ...]:
    strides, step = [], 1
    for extent in reversed(shape):
        strides.append(step)
        step *= extent
    return tuple(reversed(strides))


Rearrangement = BroadcastOp | ExpandDimsOp | ReshapeOp | TransOp | ConvertLayoutOp


def _weights(op: Rearrangement, src: TensorType, dst: TensorType) -> tuple[int, ...]:
    """Per result dimension, its weight in the source's linear index (see the module doc)."""
    src_strides = _strides(src.shape)
    if isinstance(op, BroadcastOp):
        return tuple(
            0 if s != d else stride
            for s, d, stride in zip(src.shape, dst.shape, src_strides, strict=True)
        )
    if isinstance(op, ExpandDimsOp):
        axis = op.axis_int
        return (*src_strides[:axis], 0, *src_strides[axis:])
    if isinstance(op, TransOp):
        return tuple(src_strides[i] for i in op.order_ints)
    if isinstance(op, ReshapeOp):
        return _strides(dst.shape)
    return src_strides  # gpu.convert_layout


@lowers(BroadcastOp, ExpandDimsOp, ReshapeOp, TransOp, ConvertLayoutOp)
def _rearrange(ctx: LoweringContext, op: Rearrangement) -> None:
    encoding = getattr(op.result.type, "encoding", None)
    if (
        isinstance(op, ConvertLayoutOp)
        and isinstance(encoding, SharedEncodingAttr)
        and _matrix_unit_conversion(ctx, op)
    ):
        return  # operands a matrix unit reads from shared memory (tilec.lowering.matrix_units)
    if isinstance(op, TransOp):
        source = ctx.get(op.source)
        if hasattr(source, "transposed_view"):  # in shared memory: the same bytes, transposed
            ctx.set(op.result, source.transposed_view())
            return
    source: LTensor = ctx.get(op.source)
    result_type = op.result.type
    assert isinstance(result_type, TensorType)
    src_type = source.type
    weights = _weights(op, src_type, result_type)
    picks = None
    if not isinstance(op, ConvertLayoutOp) or in_loop_value_family(layout_of(src_type)):
        # An `#gpu.mma` result holds, in each thread, the elements its `#gpu.dot_op` operand
        # fragment needs when the warps tile only M (attention's p): no data moves. Likewise
        # its row vectors (slices) between two `#gpu.mma` of other instruction widths
        # (attention's alpha when the head dim differs from BLOCK_N).
        picks = register_picks(
            (layout_of(src_type), src_type.shape),
            (layout_of(result_type), result_type.shape),
            weights,
            ctx.threads_per_warp,
            ctx.num_warps,
        )
    if picks is not None:
        values = [source.values[i] for i in picks]
    elif isinstance(op, ConvertLayoutOp) and _matrix_unit_conversion(ctx, op):
        return  # a backend's matrix-unit operands (tilec.lowering.matrix_units)
    else:
        values = _through_shared(ctx, op, source, result_type, weights)
    ctx.set(op.result, LTensor(result_type, values))


def _matrix_unit_conversion(ctx: LoweringContext, op: ConvertLayoutOp) -> bool:
    """Whether the conversion registered for `op`'s result layout lowered it."""
    conversion = registered(CONVERSIONS, getattr(op.result.type, "encoding", None))
    return conversion is not None and conversion(ctx, op)


@lru_cache(maxsize=1024)
def register_picks(
    src: tuple[object, tuple[int, ...]],
    dst: tuple[object, tuple[int, ...]],
    weights: tuple[int, ...],
    lanes: int,
    warps: int,
) -> tuple[int, ...] | None:
    """Per result register, the source register of the same thread that holds its element, if
    one register index serves every thread; else None (the data must move between threads).
    `src` and `dst` are (layout, shape) pairs; `weights` as in the module doc.

    A thread's element at register `r` has coordinates `(r + base) % shape` (`base`: the
    thread's offsets, taken modulo the shape). Threads with the same pair of bases need the same
    picks, so each distinct pair is worked out once; where no register wraps around the shape,
    a linear index is a register part plus a thread part, and the picks depend only on the
    difference of the two thread parts. The work is per distinct pair or difference, not per
    thread and register."""
    src_map, dst_map = thread_mapping(*src), thread_mapping(*dst)
    src_strides = _strides(src[1])
    bases = set(
        zip(_thread_bases(src_map, lanes, warps), _thread_bases(dst_map, lanes, warps), strict=True)
    )
    if _never_wraps(src_map, [s for s, _ in bases]) and _never_wraps(
        dst_map, [d for _, d in bases]
    ):
        held = _first_register(_linear(src_map.registers, src_strides))
        needs = _linear(dst_map.registers, weights)
        shifts = {_dot(d, weights) - _dot(s, src_strides) for s, d in bases}
        options = {_picks(held, [need + shift for need in needs]) for shift in shifts}
    else:
        options = {
            _picks(
                _first_register(_linear(src_map.coords_at(s), src_strides)),
                _linear(dst_map.coords_at(d), weights),
            )
            for s, d in bases
        }
    if len(options) != 1:
        return None
    (picks,) = options
    return None if -1 in picks else picks


def _thread_bases(mapping: ThreadMapping, lanes: int, warps: int) -> list[tuple[int, ...]]:
    """Each thread's offsets modulo the shape (`(r + base) % shape` is the same with them), for
    the warps in turn, each lane in turn. A dimension's offset is its lane part plus its warp
    part (`DimMapping.thread_offset`), so each part is worked out once a lane or warp, not once
    a thread: 21 calls of `register_picks` of 256 threads each in the 128x256x64 matmul."""
    if not mapping.dims:
        return [()] * (lanes * warps)
    columns = []
    for dim, size in zip(mapping.dims, mapping.shape, strict=True):
        lane_parts = [dim.thread_offset(lane, 0) for lane in range(lanes)]
        warp_parts = [dim.thread_offset(0, warp) for warp in range(warps)]
        columns.append([(w + part) % size for w in warp_parts for part in lane_parts])
    return list(zip(*columns, strict=True))


def _never_wraps(mapping: ThreadMapping, bases: list[tuple[int, ...]]) -> bool:
    """Whether `(register + base) % shape` never wraps for any register and thread base."""
    if not mapping.registers or not bases:
        return True
    return all(
        max(reg[d] for reg in mapping.registers) + max(base[d] for base in bases) < size
        for d, size in enumerate(mapping.shape)
    )


def _dot(coord: tuple[int, ...], factors: tuple[int, ...]) -> int:
    return sum(c * f for c, f in zip(coord, factors, strict=True))


def _linear(coords, factors: tuple[int, ...]) -> list[int]:
    return [_dot(coord, factors) for coord in coords]


def _picks(held: dict[int, int], needs: list[int]) -> tuple[int, ...]:
    return tuple(held.get(need, -1) for need in needs)


def _first_register(linear: list[int]) -> dict[int, int]:
    """Linear index -> the first register holding it."""
    first: dict[int, int] = {}
    for index, value in enumerate(linear):
        first.setdefault(value, index)
    return first


def _through_shared(
    ctx: LoweringContext,
    op: Operation,
    source: LTensor,
    result_type: TensorType,
    weights: tuple[int, ...],
) -> list[ir.Value]:
    b = ctx.builder
    scalar = result_type.element_type
    mem_type = memory_type(scalar, ctx.target)
    nbytes = byte_size(mem_type)
    base = ctx.scratch(op, source.type.numel * nbytes)
    src_strides = _strides(source.type.shape)
    result_mapping = LTensor(result_type, []).mapping
    tile = None
    # read back by the same linear index: a swizzle may permute it
    if weights == src_strides and ctx.target.swizzled_scratch:
        tile = scratch_tile(source.mapping, result_mapping, nbytes)

    scaled: dict[tuple[int, int], ir.Value] = {}

    def term(coord: ir.Value, factor: int) -> ir.Value:
        """`coord * factor`, once for each coordinate value (registers share them)."""
        key = (id(coord), factor)
        if key not in scaled:
            scaled[key] = coord if factor == 1 else b.mul(coord, ir.Constant(I32, factor))
        return scaled[key]

    def address(coords: list[ir.Value], factors: tuple[int, ...]) -> ir.Value:
        terms = [term(c, f) for c, f in zip(coords, factors, strict=True) if f]
        linear = terms[0] if terms else ir.Constant(I32, 0)
        for other in terms[1:]:
            linear = b.add(linear, other)
        offset = b.mul(linear, ir.Constant(I32, nbytes))
        return b.gep(base, [offset], source_etype=I8)

    def addresses(mapping: ThreadMapping, factors: tuple[int, ...], width: int) -> list:
        if tile is not None:
            return _swizzled_addresses(ctx, base, tile, mapping, width)
        return [address(coords, factors) for coords in _group_starts(ctx, mapping, width)]

    is_bool = isinstance(scalar, IntegerType) and scalar.width == 1
    if tile is None or not ctx.target.store_matrix_fragments(ctx, source, tile, base):
        width = scratch_vector_width(source.mapping, src_strides, nbytes)
        access = ir.VectorType(mem_type, width) if width > 1 else mem_type
        stores = addresses(source.mapping, src_strides, width)
        for index, pointer in zip(range(0, len(source.values), width), stores, strict=True):
            data = pack_access(b, source.values[index : index + width], access, is_bool)
            b.store(data, pointer, align=width * nbytes)
    ctx.target.barrier(b)
    width = scratch_vector_width(result_mapping, weights, nbytes)
    access = ir.VectorType(mem_type, width) if width > 1 else mem_type
    values = []
    for pointer in addresses(result_mapping, weights, width):
        loaded = b.load(pointer, typ=access, align=width * nbytes)
        for element in unpack_access(b, loaded, width):
            values.append(b.trunc(element, ir.IntType(1)) if is_bool else element)
    return values


def scratch_tile(
    written: ThreadMapping, read: ThreadMapping, element_bytes: int
) -> SwizzledTile | None:
    """The swizzled row-major tile (`tilec.lowering.swizzle`) that a conversion's trip through
    the scratch buffer uses: rows are the leading dimensions flattened, columns the last one.
    Without it, a writer whose lanes hold one column of 8 rows (an accumulator's fragments) puts
    all 8 in the same banks (8-way conflicts on every store); with it, each row's 16-byte chunks
    are permuted by its phase, and both sides' accesses stay within a chunk. None where the
    shape has no such tile (a single row, a row of one chunk or of a size not a power of two) or
    where a side's coordinates wrap around the shape (replicated layouts), which keep the plain
    row-major buffer."""
    shape = written.shape
    if len(shape) < 2 or any(_wraps(mapping) for mapping in (written, read)):
        return None
    cols, rows = shape[-1], _rows(shape)
    tile = SwizzledTile(rows, cols, element_bytes)
    if rows < 2 or cols & (cols - 1) or cols % tile.chunk_elements or tile.max_phase == 1:
        return None
    return tile


def _rows(shape: tuple[int, ...]) -> int:
    rows = 1
    for extent in shape[:-1]:
        rows *= extent
    return rows


def _wraps(mapping: ThreadMapping) -> bool:
    """Whether some register's coordinate, thread offset included, reaches past the shape."""
    for dim, d in enumerate(mapping.dims):
        largest = d.lane_scale * (d.lane_count - 1) + d.warp_scale * (d.warp_count - 1)
        if max((reg[dim] for reg in mapping.registers), default=0) + largest >= d.size:
            return True
    return False


def _swizzled_addresses(
    ctx: LoweringContext, base: ir.Value, tile: SwizzledTile, mapping: ThreadMapping, width: int
) -> list[ir.Value]:
    """The scratch pointer of every `width`-th register of `mapping` in `tile`: a register's
    row (the leading dimensions flattened) and column are the thread's plus constants."""
    b = ctx.builder
    thread = ctx.thread_offsets(mapping)
    row_factors = [f // tile.cols for f in _strides(mapping.shape)[:-1]]
    row = None
    for offset, factor in zip(thread[:-1], row_factors, strict=True):
        part = offset if factor == 1 else b.mul(offset, ir.Constant(I32, factor))
        row = part if row is None else b.add(row, part)
    offsets = [
        (sum(o * f for o, f in zip(reg[:-1], row_factors, strict=True)), reg[-1])
        for reg in mapping.registers[::width]
    ]
    return swizzled_pointers(b, base, tile, row, thread[-1], offsets)


def _group_starts(ctx: LoweringContext, mapping: ThreadMapping, width: int):
    """The coordinates of every `width`-th register (the first of each vector access)."""
    if width == 1:
        return ctx.element_coords(mapping)
    return ctx.element_coords(attrs.evolve(mapping, registers=mapping.registers[::width]))


def scratch_vector_width(mapping: ThreadMapping, factors: tuple[int, ...], nbytes: int) -> int:
    """The widest power of two `k` (at most 16 bytes) such that each thread's registers, in
    groups of `k`, hold elements at `k` consecutive, `k`-aligned linear indices
    (`sum(coord * factor)`): each group is then one vector access of the scratch buffer."""
    dim = mapping.contiguous_dim
    if dim is None or factors[dim] != 1:
        return 1
    width = min(MAX_VECTOR_BYTES // nbytes, mapping.num_registers)
    while width > 1:
        if _groups_aligned(mapping, factors, dim, width):
            return width
        width //= 2
    return 1


def _groups_aligned(mapping: ThreadMapping, factors: tuple[int, ...], dim: int, width: int) -> bool:
    d = mapping.dims[dim]
    if mapping.num_registers % width or mapping.shape[dim] % width:
        return False
    if any(f % width for i, f in enumerate(factors) if i != dim):
        return False
    if (d.lane_count > 1 and d.lane_scale % width) or (d.warp_count > 1 and d.warp_scale % width):
        return False
    registers = mapping.registers
    for start in range(0, len(registers), width):
        first = registers[start]
        if first[dim] % width:
            return False
        for step in range(1, width):
            expected = tuple(o + step if i == dim else o for i, o in enumerate(first))
            if registers[start + step] != expected:
                return False
    return True


__all__ = ["register_picks", "scratch_tile", "scratch_vector_width"]
