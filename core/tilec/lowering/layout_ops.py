"""Tensor creation and data movement between layouts and shapes.

`tile.splat` and `tile.make_range` fill a thread's registers directly. The ops that move elements
(`tile.broadcast`, `tile.expand_dims`, `tile.reshape`, `tile.trans`, `gpu.convert_layout`) are
all one rearrangement: the result element at coordinates `c` is the source element whose
row-major linear index is `sum(c[i] * weight[i])` (weights 0 along broadcast dimensions, the
source strides permuted for a transpose, the result strides for a reshape). When every thread
already holds, in a fixed register, each element its result registers need (checked for every
thread with `thread_mapping(...).coords`), the result just picks registers; otherwise the
elements go through the shared scratch buffer: every thread writes its registers to their
linear indices, and reads its result registers back by coordinates.
"""

from __future__ import annotations

from functools import lru_cache

from llvmlite import ir

from tilec.dialects.gpu import ConvertLayoutOp, layout_of
from tilec.ir.core import Operation
from tilec.ir.types import IntegerType, TensorType
from tilec.layout.mapping import thread_mapping
from tilec.lowering.context import I8, I32, LoweringContext, LTensor, lowers, memory_type
from tilec.lowering.dot_operand import lower_to_dot_operand
from tilec.lowering.memory import byte_size


@lowers("tile.splat")
def _splat(ctx: LoweringContext, op: Operation) -> None:
    value = ctx.get(op.operands[0])
    result_type = op.results[0].type
    count = LTensor(result_type, []).mapping.num_registers
    ctx.set(op.results[0], LTensor(result_type, [value] * count))


@lowers("tile.make_range")
def _make_range(ctx: LoweringContext, op: Operation) -> None:
    result_type = op.results[0].type
    start = op.attributes["start"].value  # type: ignore[attr-defined]
    coords = ctx.element_coords(LTensor(result_type, []).mapping)
    b = ctx.builder
    values = [b.add(c[0], ir.Constant(I32, start)) if start else c[0] for c in coords]
    ctx.set(op.results[0], LTensor(result_type, values))


def _strides(shape: tuple[int, ...]) -> tuple[int, ...]:
    strides, step = [], 1
    for extent in reversed(shape):
        strides.append(step)
        step *= extent
    return tuple(reversed(strides))


def _weights(op: Operation) -> tuple[int, ...]:
    """Per result dimension, its weight in the source's linear index (see the module doc)."""
    src, dst = op.operands[0].type, op.results[0].type
    src_strides = _strides(src.shape)  # type: ignore[attr-defined]
    if op.name == "tile.broadcast":
        return tuple(
            0 if s != d else stride
            for s, d, stride in zip(src.shape, dst.shape, src_strides, strict=True)  # type: ignore[attr-defined]
        )
    if op.name == "tile.expand_dims":
        axis = op.attributes["axis"].value  # type: ignore[attr-defined]
        return (*src_strides[:axis], 0, *src_strides[axis:])
    if op.name == "tile.trans":
        order = op.attributes["order"].ints()  # type: ignore[attr-defined]
        return tuple(src_strides[i] for i in order)
    if op.name == "tile.reshape":
        return _strides(dst.shape)  # type: ignore[attr-defined]
    return src_strides  # gpu.convert_layout


@lowers("tile.broadcast", "tile.expand_dims", "tile.reshape", "tile.trans", "gpu.convert_layout")
def _rearrange(ctx: LoweringContext, op: Operation) -> None:
    if isinstance(op, ConvertLayoutOp) and lower_to_dot_operand(ctx, op):
        return  # tensor-core operands: shared memory and ldmatrix (tilec.lowering.dot_operand)
    source: LTensor = ctx.get(op.operands[0])
    result_type: TensorType = op.results[0].type  # type: ignore[assignment]
    src_type = source.type
    weights = _weights(op)
    picks = register_picks(
        (layout_of(src_type), src_type.shape),
        (layout_of(result_type), result_type.shape),
        weights,
        ctx.threads_per_warp,
        ctx.num_warps,
    )
    if picks is not None:
        values = [source.values[i] for i in picks]
    else:
        values = _through_shared(ctx, source, result_type, weights)
    ctx.set(op.results[0], LTensor(result_type, values))


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
    `src` and `dst` are (layout, shape) pairs; `weights` as in the module doc."""
    src_map, dst_map = thread_mapping(*src), thread_mapping(*dst)
    src_strides = _strides(src[1])
    picks: list[int] | None = None
    for warp in range(warps):
        for lane in range(lanes):
            held: dict[int, int] = {}
            for index, coord in enumerate(src_map.coords(lane, warp)):
                held.setdefault(sum(c * s for c, s in zip(coord, src_strides, strict=True)), index)
            needed = [
                held.get(sum(c * w for c, w in zip(coord, weights, strict=True)), -1)
                for coord in dst_map.coords(lane, warp)
            ]
            if -1 in needed or (picks is not None and needed != picks):
                return None
            picks = needed
    return tuple(picks or ())


def _through_shared(
    ctx: LoweringContext, source: LTensor, result_type: TensorType, weights: tuple[int, ...]
) -> list[ir.Value]:
    b = ctx.builder
    scalar = result_type.element_type
    mem_type = memory_type(scalar, ctx.target)
    nbytes = byte_size(mem_type)
    base = ctx.shared_scratch(source.type.numel * nbytes)
    src_strides = _strides(source.type.shape)

    def address(coords: list[ir.Value], factors: tuple[int, ...]) -> ir.Value:
        linear = ir.Constant(I32, 0)
        for coord, factor in zip(coords, factors, strict=True):
            if factor:
                linear = b.add(linear, b.mul(coord, ir.Constant(I32, factor)))
        offset = b.mul(linear, ir.Constant(I32, nbytes))
        return b.gep(base, [offset], source_etype=I8)

    is_bool = isinstance(scalar, IntegerType) and scalar.width == 1
    ctx.target.barrier(b)
    for coords, value in zip(ctx.element_coords(source.mapping), source.values, strict=True):
        b.store(b.zext(value, I8) if is_bool else value, address(coords, src_strides))
    ctx.target.barrier(b)
    values = []
    for coords in ctx.element_coords(LTensor(result_type, []).mapping):
        loaded = b.load(address(coords, weights), typ=mem_type)
        values.append(b.trunc(loaded, ir.IntType(1)) if is_bool else loaded)
    return values


__all__ = ["register_picks"]
