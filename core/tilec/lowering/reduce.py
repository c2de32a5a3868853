"""`tile.reduce` -> LLVM IR, as Triton lowers it: within each thread's registers along the axis,
then across the lanes that span the axis (`shuffle_xor` butterflies), then across the warps that
span it (one partial per warp through shared memory, read back whole where a group's partials
fit one 16-byte load, or two in a loop, else one a lane and combined by a butterfly over the low
lane bits), result in the slice layout (every thread along the axis gets the value; a rank-1
source gives a scalar that every thread holds).

Order. Along the axis, an element's index is, from its lowest bits up: its place among the
thread's contiguous registers, the lane coordinate, the warp coordinate, the repetition of the
layout's tile. Combining level by level in that order, always with the lower-index half as the
left operand, is exactly the balanced tree the interpreter evaluates (`tilec_interp.reductions`:
pairs (0, 1), (2, 3), ...), so order-sensitive combiners (argmax/argmin with NaN, ties without
`tie_break_left`, user combiners) give the interpreter's answer. A combiner that is one
commutative `arith` op (sum, max, and, ...) folds all of a thread's registers first instead,
left to right as Triton does (`THREAD_CHAINS`), which saves shuffles and lets a sum of products
contract to one fma a register; float sums then round in another order than the interpreter's.

Lanes or warps that hold replicas along the axis (the tensor is narrower than the layout's tile)
take no part: only the lane and warp bits that span distinct elements are combined.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import attrs
from llvmlite import ir

from tilec.dialects.arith import BinaryOp
from tilec.dialects.scf import in_loop
from tilec.dialects.tile import ReduceOp
from tilec.ir.core import Operation
from tilec.ir.traits import Commutative
from tilec.ir.types import TensorType
from tilec.layout.mapping import DimMapping, ThreadMapping
from tilec.lowering.context import (
    F32,
    I8,
    I32,
    I64,
    LoweringContext,
    LoweringError,
    LTensor,
    _where,
    lowers,
)

Values = list[ir.Value]

THREAD_CHAINS = 1
"""How a commutative combiner folds a thread's registers: k > 0, k interleaved left folds
(register i into fold i % k), then a tree of the k (`chains`); 0, a balanced tree (`tree`). At 1,
Triton's order, `sum(x * x)` is a mul and an fma a register; the tree took a mul and an fma a
pair and an add a pair, and layer norm forward bf16 8192x5120 at 8 warps ran 59.2 us against 57.0
at 1 and 56.6 at 4 (Triton 56.3; H200, paired sweep, eighth session of issue 23). 4 lost 2% on
the float32 layer norm; 1 is the default."""


@attrs.frozen
class AxisSpread:
    """How a layout spreads the distinct elements along one dimension (see the module doc)."""

    dim: DimMapping
    elements: int
    """Contiguous elements per thread and repetition."""
    lanes: int
    """Distinct lane coordinates (lanes beyond hold replicas)."""
    warps: int
    """Distinct warp coordinates."""
    reps: int
    """Repetitions of the layout's tile."""


def axis_spread(mapping: ThreadMapping, axis: int) -> AxisSpread:
    d = mapping.dims[axis]
    elements = min(d.lane_scale, d.size)
    lanes = min(d.lane_count, max(1, d.size // d.lane_scale))
    warps = min(d.warp_count, max(1, d.size // d.warp_scale))
    reps = max(1, d.size // (d.warp_scale * d.warp_count))
    return AxisSpread(d, elements, lanes, warps, reps)


def axis_groups(mapping: ThreadMapping, axis: int) -> dict[tuple[int, ...], list[int]]:
    """Registers grouped by their offsets outside `axis` (in register order of first
    appearance), each group ordered by the offset along `axis` (repetition-major)."""
    groups: dict[tuple[int, ...], list[int]] = {}
    for index, reg in enumerate(mapping.registers):
        groups.setdefault(reg[:axis] + reg[axis + 1 :], []).append(index)
    for regs in groups.values():
        regs.sort(key=lambda i: mapping.registers[i][axis])
    return groups


def lane_coord(ctx: LoweringContext, d: DimMapping, distinct: int) -> ir.Value:
    """This thread's lane coordinate along `d`, modulo the `distinct` coordinates."""
    b = ctx.builder
    coord = b.udiv(ctx.lane_id(), I32(d.lane_div))
    return b.urem(coord, I32(min(d.lane_count, distinct)))


def warp_coord(ctx: LoweringContext, d: DimMapping, distinct: int) -> ir.Value:
    b = ctx.builder
    coord = b.udiv(ctx.warp_id(), I32(d.warp_div))
    return b.urem(coord, I32(min(d.warp_count, distinct)))


def shuffle_value(
    ctx: LoweringContext, value: ir.Value, move: Callable[[ir.Value], ir.Value]
) -> ir.Value:
    """`move` (a target shuffle of an i32 or f32) applied to a value of any scalar type: narrower
    ones are widened to i32, 64-bit ones move as two i32 halves, pointers as integers."""
    b = ctx.builder
    t = value.type
    if t in (I32, F32):
        return move(value)
    if isinstance(t, ir.VectorType | ir.ArrayType | ir.LiteralStructType):
        raise TypeError(f"cannot move a {t} across lanes")
    if isinstance(t, ir.PointerType):
        return b.inttoptr(shuffle_value(ctx, b.ptrtoint(value, I64), move), t)
    bits = (
        t.width if isinstance(t, ir.IntType) else {"half": 16, "bfloat": 16, "double": 64}[str(t)]
    )
    int_type = ir.IntType(bits)
    as_int = value if isinstance(t, ir.IntType) else b.bitcast(value, int_type)
    if bits < 32:
        moved = b.trunc(move(b.zext(as_int, I32)), int_type)
    elif bits == 64:
        low = move(b.trunc(as_int, I32))
        high = move(b.trunc(b.lshr(as_int, I64(32)), I32))
        moved = b.or_(b.zext(low, I64), b.shl(b.zext(high, I64), I64(32)))
    else:
        raise TypeError(f"cannot move a {t} across lanes")
    return moved if isinstance(t, ir.IntType) else b.bitcast(moved, t)


def combine(ctx: LoweringContext, op: Operation, lhs: Values, rhs: Values) -> Values:
    """The op's combiner region applied to scalar tuples `lhs` and `rhs`."""
    return ctx.inline_region(op.regions[0], [*lhs, *rhs])


def select_values(ctx: LoweringContext, cond: ir.Value, a: Values, b: Values) -> Values:
    return [ctx.builder.select(cond, x, y) for x, y in zip(a, b, strict=True)]


def tree(ctx: LoweringContext, op: Operation, items: Sequence[Values]) -> Values:
    """Combine `items` as the interpreter does: pairs (0, 1), (2, 3), ..., level by level."""
    level = list(items)
    while len(level) > 1:
        merged = [combine(ctx, op, level[i], level[i + 1]) for i in range(0, len(level) - 1, 2)]
        if len(level) % 2:
            merged.append(level[-1])
        level = merged
    return level[0]


def chains(ctx: LoweringContext, op: Operation, items: Sequence[Values], k: int) -> Values:
    """`items` folded left in `k` interleaved chains (item i into chain i % k), then the chains
    combined by `tree`."""
    folds = list(items[:k])
    for i, item in enumerate(items[k:], start=k):
        folds[i % k] = combine(ctx, op, folds[i % k], item)
    return tree(ctx, op, folds)


def _powers_below(n: int) -> list[int]:
    return [1 << i for i in range(max(0, (n - 1).bit_length()))]


def butterfly(
    ctx: LoweringContext, op: Operation, mine: Values, masks: Sequence[int], commutative: bool
) -> Values:
    """`mine` combined across the lanes that differ in the bits of `masks` (`shuffle_xor`, in
    the order given), every such lane getting the result. An order-sensitive combiner takes the
    lower lane's value as its left operand, so masks 1, 2, 4, ... over lanes that hold items
    0, 1, 2, ... give `tree`'s order."""
    b = ctx.builder
    for mask in masks:
        other = [
            shuffle_value(ctx, v, lambda x, m=mask: ctx.target.shuffle_xor(b, x, m)) for v in mine
        ]
        if commutative:
            mine = combine(ctx, op, mine, other)
            continue
        upper = b.icmp_unsigned("!=", b.and_(ctx.lane_id(), I32(mask)), I32(0))
        lhs = select_values(ctx, upper, other, mine)
        rhs = select_values(ctx, upper, mine, other)
        mine = combine(ctx, op, lhs, rhs)
    return mine


def is_commutative(op: Operation) -> bool:
    """Whether the combiner is a single commutative `arith` binary op of its two arguments
    (all of them are associative too: add, mul, and, or, xor, min and max)."""
    block = op.regions[0].block
    ops = list(block.ops)
    if len(op.operands) != 1 or len(ops) != 2:
        return False
    if not isinstance(ops[0], BinaryOp) or not ops[0].has_trait(Commutative):
        return False
    return set(ops[0].operands) == set(block.args) and list(ops[1].operands) == [ops[0].results[0]]


def reduced_index(
    ctx: LoweringContext, mapping: ThreadMapping, axis: int, key: tuple[int, ...]
) -> ir.Value:
    """The row-major index, in the reduced shape, of the elements of register group `key`."""
    b = ctx.builder
    offsets = ctx.thread_offsets(mapping)
    dims = [i for i in range(len(mapping.shape)) if i != axis]
    index: ir.Value = I32(0)
    for d, reg_offset in zip(dims, key, strict=True):
        size = mapping.shape[d]
        coord = b.urem(b.add(offsets[d], I32(reg_offset)), I32(size))
        index = b.add(b.mul(index, I32(size)), coord)
    return index


def shared_slots(
    ctx: LoweringContext, op: Operation, types: Sequence[ir.Type], count: int
) -> list[ir.Value]:
    """Per type, the base of an array of `count` slots in the shared scratch buffer, for one
    use by `op` (`LoweringContext.scratch`: the caller writes, barriers, reads)."""
    b = ctx.builder
    sizes = [element_bytes(t) for t in types]
    total = sum((count * s + 7) // 8 * 8 for s in sizes)
    base = ctx.scratch(op, total)
    bases, at = [], 0
    for size in sizes:
        bases.append(b.gep(base, [I32(at)], source_etype=I8) if at else base)
        at += (count * size + 7) // 8 * 8
    return bases


def element_bytes(t: ir.Type) -> int:
    if isinstance(t, ir.IntType):
        return max(1, t.width // 8)
    if isinstance(t, ir.PointerType):
        return 8
    return {"half": 2, "bfloat": 2, "float": 4, "double": 8}[str(t)]


def store_slot(ctx: LoweringContext, base: ir.Value, index: ir.Value, value: ir.Value) -> None:
    b = ctx.builder
    if value.type == ir.IntType(1):
        value = b.zext(value, I8)
    b.store(value, b.gep(base, [index], source_etype=value.type))


def load_slot(ctx: LoweringContext, base: ir.Value, index: ir.Value, t: ir.Type) -> ir.Value:
    b = ctx.builder
    mem = I8 if t == ir.IntType(1) else t
    value = b.load(b.gep(base, [index], source_etype=mem), typ=mem)
    return b.icmp_unsigned("!=", value, I8(0)) if t == ir.IntType(1) else value


# The lowering ------------------------------------------------------------------------------------


@lowers(ReduceOp)
def _reduce(ctx: LoweringContext, op: ReduceOp) -> None:
    try:
        _lower_reduce(ctx, op)
    except TypeError as error:
        raise LoweringError(f"{_where(op)}cannot lower '{op.name}': {error}") from error


def _lower_reduce(ctx: LoweringContext, op: ReduceOp) -> None:
    axis = op.axis_int
    sources = [ctx.get(v) for v in op.operands]
    mapping = sources[0].mapping
    spread = axis_spread(mapping, axis)
    d = spread.dim
    commutative = is_commutative(op)
    groups = axis_groups(mapping, axis)
    if not commutative and any(len(r) != spread.elements * spread.reps for r in groups.values()):
        raise LoweringError(
            f"{_where(op)}cannot reduce axis {axis} of {op.operands[0].type} in the interpreter's "
            "order: the layout's registers along it are not whole runs per tile repetition "
            "(a #gpu.mma along M); convert the operand to a #gpu.blocked layout first"
        )

    # Within the thread: per group and repetition, the thread's contiguous elements.
    partials: dict[tuple[int, ...], list[Values]] = {}
    for key, regs in groups.items():
        items = [[s.values[i] for s in sources] for i in regs]
        if commutative:
            fold = chains(ctx, op, items, THREAD_CHAINS) if THREAD_CHAINS else tree(ctx, op, items)
            partials[key] = [fold]
            continue
        chunks = [
            items[r * spread.elements : (r + 1) * spread.elements] for r in range(spread.reps)
        ]
        partials[key] = [tree(ctx, op, chunk) for chunk in chunks]

    # Across lanes: butterflies over the lane bits that span distinct elements.
    masks = [step * d.lane_div for step in _powers_below(spread.lanes)]
    for reps in partials.values():
        reps[:] = [butterfly(ctx, op, mine, masks, commutative) for mine in reps]

    # Across warps: one partial per warp through shared memory, then the final combine.
    if spread.warps > 1:
        partials = _across_warps(ctx, op, mapping, axis, spread, partials, commutative)

    results = {key: tree(ctx, op, reps) for key, reps in partials.items()}
    _bind_results(ctx, op, results)


def _across_warps(
    ctx: LoweringContext,
    op: Operation,
    mapping: ThreadMapping,
    axis: int,
    spread: AxisSpread,
    partials: dict[tuple[int, ...], list[Values]],
    commutative: bool,
) -> dict[tuple[int, ...], list[Values]]:
    """Each warp's partials to its slots, a barrier, then per group and repetition the `warps`
    partials read back: by every thread, where each type's partials fit `_whole_bytes(op)`,
    else one per lane (lane `l` reads warp `l % warps`'s) and combined by a butterfly over the
    low lane bits (Triton's inter-warp step, without its second round through shared memory): a
    thread then holds one partial rather than `warps` (at 16 warps, 16 registers a reduction
    live beside the row, which cost a block an SM in the layer norm)."""
    b = ctx.builder
    warps = spread.warps
    reps = len(next(iter(partials.values())))
    reduced_numel = 1
    for i, size in enumerate(mapping.shape):
        reduced_numel *= 1 if i == axis else size
    types = [v.type for v in next(iter(partials.values()))[0]]
    bases = shared_slots(ctx, op, types, reduced_numel * reps * warps)
    warp = warp_coord(ctx, spread.dim, warps)
    indices = {}
    for key, values in partials.items():
        first = b.mul(reduced_index(ctx, mapping, axis, key), I32(reps * warps))
        indices[key] = first
        for r, partial in enumerate(values):
            slot = b.add(first, b.add(I32(r * warps), warp))
            for base, value in zip(bases, partial, strict=True):
                store_slot(ctx, base, slot, value)
    ctx.target.barrier(b)
    limit = _whole_bytes(op)
    by_lane = warps <= ctx.threads_per_warp and any(warps * element_bytes(t) > limit for t in types)
    lane_warp = b.urem(ctx.lane_id(), I32(warps)) if by_lane else None
    merged: dict[tuple[int, ...], list[Values]] = {}
    for key, first in indices.items():
        merged[key] = []
        for r in range(reps):
            if lane_warp is not None:
                slot = b.add(first, b.add(I32(r * warps), lane_warp))
                mine = [load_slot(ctx, base, slot, t) for base, t in zip(bases, types, strict=True)]
                masks = _powers_below(warps)
                merged[key].append(butterfly(ctx, op, mine, masks, commutative))
                continue
            items = []
            for w in range(warps):
                slot = b.add(first, I32(r * warps + w))
                items.append(
                    [load_slot(ctx, base, slot, t) for base, t in zip(bases, types, strict=True)]
                )
            merged[key].append(tree(ctx, op, items))
    return merged


def _whole_bytes(op: Operation) -> int:
    """The bytes of one type's partials that every thread reads whole: one 16-byte load, two in
    a loop. Whole, 8 warps' f32 partials are two 16-byte loads issued together and a tree of
    three adds; by lane, a load then three dependent shuffles and adds (on sm_90a about 45
    against 125 cycles). Outside loops (a row a program: softmax, the layer norm forward) the
    registers the butterfly saves decide the blocks an SM. In a loop the latency comes back each
    iteration: the layer norm backward's row loop (two sums a row, each behind a barrier every
    warp waits at; two programs an SM, so registers do not set its blocks) has 8-warp loops of
    7 SASS instructions fewer by lane but 3 dependent shuffles more a sum, and by lane its
    8-warp candidates lost up to 6% against Triton's on the H200 (8192x1024: 64.3 -> 68.1 us,
    Triton's 66.2 -> 65.8; x5120 3%, others within 1%, fp32 gained 2%). Above 8 warps the butterfly stays in loops too: 16 partials whole hold
    16 registers beside the row at a 128-register ceiling (512 threads) and lengthen the loop
    (bf16 5120 columns w16: 127 registers and 349 SASS an iteration whole, 124 and 326 by lane;
    no slower on the H200)."""
    return 32 if in_loop(op) else 16


def _bind_results(
    ctx: LoweringContext, op: Operation, results: dict[tuple[int, ...], Values]
) -> None:
    result_type = op.results[0].type
    if not isinstance(result_type, TensorType):
        (only,) = results.values()
        for result, value in zip(op.results, only, strict=True):
            ctx.set(result, value)
        return
    layout = LTensor(result_type, []).mapping
    for n, result in enumerate(op.results):
        values = [results[reg][n] for reg in layout.registers]
        ctx.set(result, LTensor(result.type, values))


__all__ = [
    "AxisSpread",
    "axis_groups",
    "axis_spread",
    "combine",
    "element_bytes",
    "lane_coord",
    "shuffle_value",
    "tree",
    "warp_coord",
]
