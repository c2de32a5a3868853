"""`tile.scan` -> LLVM IR: an inclusive scan along the axis, as Triton lowers it.

1. Within the thread: each run of contiguous registers along the axis is scanned in order.
2. Across lanes: the runs' totals are scanned over the lanes that span the axis (Hillis-Steele
   with `shuffle_up`, or `shuffle_idx` from the lane above for `reverse`), and each lane combines
   the exclusive prefix of the lanes before it into its elements.
3. Across warps: the last lane of each warp writes the warp's total to shared memory; each thread
   combines the totals of the warps before it into its elements.
4. Across repetitions of the layout's tile along the axis: the total of every earlier
   repetition is carried into the later ones.

The combiner's left operand is always the prefix of the elements that come first (for `reverse`,
those of higher index), as in the interpreter's sequential accumulation; the grouping differs,
which the combiner's associativity allows (integer scans give the interpreter's results exactly).
"""

from __future__ import annotations

import itertools

from llvmlite import ir

from tilec.dialects.tile import ScanOp
from tilec.ir.core import Operation
from tilec.lowering.context import I32, LoweringContext, LoweringError, LTensor, _where, lowers
from tilec.lowering.reduce import (
    AxisSpread,
    axis_groups,
    axis_spread,
    combine,
    lane_coord,
    load_slot,
    reduced_index,
    select_values,
    shared_slots,
    shuffle_value,
    store_slot,
    warp_coord,
)

Values = list[ir.Value]


@lowers(ScanOp)
def _scan(ctx: LoweringContext, op: ScanOp) -> None:
    try:
        _lower_scan(ctx, op)
    except TypeError as error:
        raise LoweringError(f"{_where(op)}cannot lower '{op.name}': {error}") from error


def _lower_scan(ctx: LoweringContext, op: ScanOp) -> None:
    axis = op.axis_int
    reverse = op.is_reverse
    sources = [ctx.get(v) for v in op.operands]
    mapping = sources[0].mapping
    spread = axis_spread(mapping, axis)
    groups = axis_groups(mapping, axis)
    out: list[Values] = [[s.values[i] for s in sources] for i in range(mapping.num_registers)]

    # chunks[key][rep] = register indices in scan order (first to last).
    chunks: dict[tuple[int, ...], list[list[int]]] = {}
    for key, regs in groups.items():
        runs = [regs[r * spread.elements : (r + 1) * spread.elements] for r in range(spread.reps)]
        chunks[key] = [list(reversed(run)) for run in reversed(runs)] if reverse else runs

    # 1. Within the thread.
    for runs in chunks.values():
        for run in runs:
            for prev, cur in itertools.pairwise(run):
                out[cur] = combine(ctx, op, out[prev], out[cur])

    totals: dict[tuple[int, ...], list[Values]] = {
        key: [out[run[-1]] for run in runs] for key, runs in chunks.items()
    }
    # 2. Across lanes (the totals over the lanes are needed only by later steps).
    if spread.lanes > 1:
        need_totals = spread.warps > 1 or spread.reps > 1
        totals = _across_lanes(ctx, op, spread, reverse, chunks, totals, out, need_totals)
    # 3. Across warps.
    if spread.warps > 1:
        totals = _across_warps(ctx, op, mapping, axis, spread, reverse, chunks, totals, out)
    # 4. Across repetitions: `totals` now hold each repetition's total over the whole axis.
    for key, runs in chunks.items():
        if len(runs) < 2:
            continue
        carry = totals[key][0]
        for r in range(1, len(runs)):
            if r > 1:
                carry = combine(ctx, op, carry, totals[key][r - 1])
            for reg in runs[r]:
                out[reg] = combine(ctx, op, carry, out[reg])

    for n, result in enumerate(op.results):
        ctx.set(result, LTensor(result.type, [values[n] for values in out]))


def _across_lanes(
    ctx: LoweringContext,
    op: Operation,
    spread: AxisSpread,
    reverse: bool,
    chunks: dict[tuple[int, ...], list[list[int]]],
    totals: dict[tuple[int, ...], list[Values]],
    out: list[Values],
    need_totals: bool,
) -> dict[tuple[int, ...], list[Values]]:
    """Scan the run totals across lanes; return each repetition's total over the warp's lanes
    (as every lane sees it; empty unless `need_totals`)."""
    b = ctx.builder
    d, lanes = spread.dim, spread.lanes
    coord = lane_coord(ctx, d, lanes)
    # The lane's place in scan order, and the lane `delta` places before it.
    place = b.sub(I32(lanes - 1), coord) if reverse else coord
    lane = ctx.lane_id()

    def before(value: ir.Value, delta: int) -> ir.Value:
        if not reverse:
            return ctx.target.shuffle_up(b, value, delta * d.lane_div)
        source = b.add(lane, I32(delta * d.lane_div))
        return ctx.target.shuffle_idx(b, value, source)

    def shuffled(values: Values, delta: int) -> Values:
        return [shuffle_value(ctx, v, lambda x: before(x, delta)) for v in values]

    inclusive = {key: list(reps) for key, reps in totals.items()}
    step = 1
    while step < lanes:
        has = b.icmp_unsigned(">=", place, I32(step))
        for reps in inclusive.values():
            for r, mine in enumerate(reps):
                other = shuffled(mine, step)
                reps[r] = select_values(ctx, has, combine(ctx, op, other, mine), mine)
        step *= 2
    has_prefix = b.icmp_unsigned(">=", place, I32(1))
    last_lane = b.add(
        b.sub(lane, b.mul(coord, I32(d.lane_div))), I32((0 if reverse else lanes - 1) * d.lane_div)
    )
    whole = {}
    for key, runs in chunks.items():
        whole[key] = []
        for r, run in enumerate(runs):
            prefix = shuffled(inclusive[key][r], 1)
            for reg in run:
                out[reg] = select_values(
                    ctx, has_prefix, combine(ctx, op, prefix, out[reg]), out[reg]
                )
            if not need_totals:
                continue
            whole[key].append(
                [
                    shuffle_value(ctx, v, lambda x: ctx.target.shuffle_idx(b, x, last_lane))
                    for v in inclusive[key][r]
                ]
            )
    return whole


def _across_warps(
    ctx: LoweringContext,
    op: Operation,
    mapping,
    axis: int,
    spread: AxisSpread,
    reverse: bool,
    chunks: dict[tuple[int, ...], list[list[int]]],
    totals: dict[tuple[int, ...], list[Values]],
    out: list[Values],
) -> dict[tuple[int, ...], list[Values]]:
    """Combine the totals of earlier warps into each element; return each repetition's total
    over all warps."""
    b = ctx.builder
    warps = spread.warps
    reps = spread.reps
    numel = 1
    for i, size in enumerate(mapping.shape):
        numel *= 1 if i == axis else size
    types = [v.type for v in next(iter(totals.values()))[0]]
    bases = shared_slots(ctx, op, types, numel * reps * warps)
    coord = warp_coord(ctx, spread.dim, warps)
    place = b.sub(I32(warps - 1), coord) if reverse else coord
    firsts = {}
    for key, values in totals.items():
        first = b.mul(reduced_index(ctx, mapping, axis, key), I32(reps * warps))
        firsts[key] = first
        for r, total in enumerate(values):
            slot = b.add(first, b.add(I32(r * warps), place))
            for base, value in zip(bases, total, strict=True):
                store_slot(ctx, base, slot, value)
    ctx.target.barrier(b)
    whole = {}
    for key, runs in chunks.items():
        whole[key] = []
        for r, run in enumerate(runs):
            loaded = [
                [
                    load_slot(ctx, base, b.add(firsts[key], I32(r * warps + w)), t)
                    for base, t in zip(bases, types, strict=True)
                ]
                for w in range(warps)
            ]
            # prefixes[p] combines the totals of the warps in places 0 .. p.
            prefixes = [loaded[0]]
            for w in range(1, warps):
                prefixes.append(combine(ctx, op, prefixes[-1], loaded[w]))
            prefix = prefixes[0]
            for p in range(1, warps - 1):
                is_p = b.icmp_unsigned("==", place, I32(p + 1))
                prefix = select_values(ctx, is_p, prefixes[p], prefix)
            has_prefix = b.icmp_unsigned(">=", place, I32(1))
            for reg in run:
                out[reg] = select_values(
                    ctx, has_prefix, combine(ctx, op, prefix, out[reg]), out[reg]
                )
            whole[key].append(prefixes[-1])
    return whole
