"""`fuse-nested-loops`: `tl.range(..., flatten=True)` as Triton 3.6 honours it (its FuseNestedLoops).

A persistent kernel loops over output tiles and, in each, over K: the software pipeline of the
K loop (`pipeline-loops`) drains at the end of every tile and fills again at the start of the
next. This pass turns such a nest into one loop over every (tile, k) pair, with the code before
the inner loop (the prologue) under `scf.if` on the first k of a tile and the code after it (the
epilogue) under `scf.if` on the last, so that `pipeline-loops` pipelines the one loop: the loads
of the next tile are in flight while the current tile's last dots and its stores run (the
prologue's `scf.if` computes addresses ahead and the dot stays in flight across the epilogue's:
`tilec.layout.pipeline_branches`). A gir pass, as Triton's runs on ttgir: after the layout
passes, before `pipeline-loops`. The interpreter runs no gir passes: there the hint has no
effect, as `num_stages` has none (nothing is pipelined); results are the same either way.

An `scf.for` marked `flatten` (the frontend's mark for `flatten=True`) is fused where Triton's
pass fuses it, and left alone (the hint then has no effect, as in Triton; `TILEC_LOG=info`
says why) otherwise:
- it is the root of its nest (its parent op is not an `scf.for`: Triton looks for nests from
  the outermost loop, so a marked loop nested directly in another loop is never fused);
- its body holds exactly one `scf.for` directly (in `scf.if`, `scf.while` or other regions,
  loops start nests of their own), and that inner loop's body holds none directly;
- the inner loop's bounds and step are invariant to the outer loop, or made so by hoisting
  pure scalar ops of the outer body (tilec moves only those `licm` would move: an integer
  division only by a constant neither 0 nor -1); a trip count that varies per outer iteration
  would need a loop whose trip count is not known before it starts, which Triton does not build;
  an inner trip count known to be 0 is left alone too;
- every value the prologue passes on is an integer, float or pointer (a scalar or a tensor in
  registers), so that the fused loop can start it with a zero (Triton's poison/zero);
- tilec's own condition: the fused loop's rings and the largest conversion through scratch in
  the nest (the epilogue's, now made while the rings are in use) fit the block's shared
  memory (`tilec.layout.residency`'s estimate). Triton converts through scratch in pieces
  and needs less (128x256x64, 3 stages, an f32 tile stored: 180224 bytes in Triton; tilec's
  whole-tile scratch would need 278528, more than an sm_90 block has), so there the nest
  stays as it is rather than fail to compile.

First, as Triton runs LICM on the nest, the invariant ops the inner loop's inits come from leave
the outer loop (a matmul's zero accumulator in the matrix unit's layout: it is then reset in the
epilogue, not carried through the prologue). The nest is versioned on the inner trip count
(Triton's `speculateInnerLoopLength`): where it is zero, the original nest without the inner
loop runs (its results are its initial values); else the fused loop runs
`len_outer * len_inner` iterations, the inner body in every one of them:

    T = -1; i = lb_i - step_i
    for _ in range(len_outer * len_inner):
        T = 0 if T == len_inner - 1 else T + 1
        if T == 0: i += step_i; prologue(i)          (its outputs carried)
        j = lb_j + T * step_j
        body(i, j)                                   (the inner loop's carried values carried)
        if T == len_inner - 1: epilogue(i)           (the outer loop's carried values updated;
                                                      the inner loop's reset to their inits)

Before that, as Triton's `optimizeEpilogueDependencies` does, prologue ops that only the
epilogue uses move after the inner loop, and cheap pure ops (shape ops, pointer and integer
adds and multiplies: what `licm` hoisted out of the inner loop) that only the inner loop uses
move into its body, so that a broadcast tensor of pointers is not carried from tile to tile;
those computing a row or a column from no broadcast (row pointers `a_ptr + rm[:, None] * K`)
stay in the prologue and are carried (`_compact`), as the nest's K loop has them hoisted;
pure scalar prologue ops that the epilogue reads too (a tile's indices) are recomputed there
(`_recompute_scalars`), so that the epilogue reads nothing the prologue's `scf.if` passes on.
The fused loop takes the larger of the two loops' `num_stages`, and `disable_licm` where
either has it; not `warp_specialize` (as Triton's, whose Hopper tutorial turns `flatten` off
where it asks for warp specialization: "Hopper warpspec doesn't work with flatten"). Counts are 64-bit, so no product of 32-bit trip counts overflows.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from tilec.dialects.arith import (
    AddIOp,
    AndIOp,
    CmpIOp,
    ConstantOp,
    DivSIOp,
    ExtSIOp,
    MulIOp,
    SelectOp,
    ShLIOp,
    SubIOp,
    TruncIOp,
)
from tilec.dialects.gpu import ConvertLayoutOp, SharedEncodingAttr
from tilec.dialects.scf import ForOp, IfOp, YieldOp
from tilec.dialects.tile import (
    AddPtrOp,
    BroadcastOp,
    DotOp,
    ExpandDimsOp,
    IntToPtrOp,
    MakeRangeOp,
    SplatOp,
)
from tilec.ir.attributes import (
    UNKNOWN_LOC,
    DenseAttr,
    FloatAttr,
    IntegerAttr,
    Location,
    StringAttr,
    UnitAttr,
)
from tilec.ir.core import Block, BlockArgument, Operation, Value
from tilec.ir.traits import Pure
from tilec.ir.types import FloatType, IntegerType, PointerType, TensorType, Type, i1, i64
from tilec.layout.pipeline_branches import FUSED_ATTR, top_op
from tilec.layout.pipeline_loops import plan_loop
from tilec.layout.residency import ring_bytes, shared_bytes, tile_bytes
from tilec.passes.base import ALL_ANALYSES, ModulePass, PassContext
from tilec.passes.loop_invariant_code_motion import can_hoist

log = logging.getLogger(__name__)

FLATTEN_ATTR = "flatten"
"""The `scf.for` flag of `tl.range(..., flatten=True)`."""

NUM_STAGES_ATTR = "num_stages"
DISABLE_LICM_ATTR = "disable_licm"
WARP_SPECIALIZE_ATTR = "warp_specialize"

CHEAP = (
    AddIOp,
    AddPtrOp,
    AndIOp,
    BroadcastOp,
    CmpIOp,
    ConstantOp,
    ExpandDimsOp,
    MakeRangeOp,
    MulIOp,
    ShLIOp,
    SplatOp,
    SubIOp,
)
"""Ops recomputed in the inner body rather than carried from the prologue (module doc)."""


class FuseNestedLoops(ModulePass):
    name = "fuse-nested-loops"
    stage = "gir"
    description = "fuse a loop nest marked flatten (tl.range(flatten=True)) into one loop"
    after = ("remove-layout-conversions",)
    before = ("pipeline-loops",)
    invalidates = ALL_ANALYSES

    def run(self, module: Operation, context: PassContext) -> bool:
        changed = False
        marked = [op for op in module.walk(post_order=True) if isinstance(op, ForOp)]
        for outer in marked:
            if FLATTEN_ATTR not in outer.attributes:
                continue
            inner, why = fusable(outer)
            if inner is not None and not _fits(module, outer, inner, context):
                inner, why = (
                    None,
                    "its rings and its epilogue's scratch would not fit shared memory",
                )
            if inner is None:
                log.info("tl.range(flatten=True) at %s has no effect: %s", outer.location, why)
                continue
            if WARP_SPECIALIZE_ATTR in outer.attributes:  # Triton's fused loop drops it too
                log.info("tl.range(warp_specialize=True) at %s has no effect: the nest is "
                         "fused (flatten=True)", outer.location)  # fmt: skip
            fuse(outer, inner)
            changed = True
        return changed


def _hoist_inits(outer: ForOp) -> None:
    """The invariant ops of `outer`'s body that its inner loops' inits come from, moved before
    it (as Triton's pass runs LICM on the nest first): an accumulator's zeros, converted to the
    matrix unit's layout in the body, is then reset rather than carried through the prologue."""
    if DISABLE_LICM_ATTR in outer.attributes:
        return
    block = outer.regions[0].block
    wanted: set[Operation] = set()
    pending = [v for op in block.ops if isinstance(op, ForOp) for v in op.init_args]
    while pending:
        op = getattr(pending.pop(), "op", None)
        if op is not None and op.parent is block and op not in wanted:
            wanted.add(op)
            pending.extend(op.operands)
    for op in list(block.ops):
        if op in wanted and can_hoist(op, outer):
            op.detach()
            outer.parent.insert_before(op, outer)  # type: ignore[union-attr]


def _fits(module: Operation, outer: ForOp, inner: ForOp, context: PassContext) -> bool:
    """Whether the fused loop's rings (`pipeline-loops`, at the fused loop's stages) and the
    largest register-to-register conversion in the nest (the epilogue's, through scratch above
    the rings: before, the rings were gone by then) fit the block's shared memory, as far as
    `tilec.layout.residency` estimates it; True where the target does not say how much."""
    target = context.target
    limit = getattr(getattr(target, "rules", None), "shared_memory_bytes", None)
    if limit is None:
        return True
    hints = [loop.attributes[NUM_STAGES_ATTR].value for loop in (outer, inner)  # type: ignore[attr-defined]
             if NUM_STAGES_ATTR in loop.attributes]  # fmt: skip
    stages = max(hints) if hints else getattr(target, "num_stages", 1)
    plan = plan_loop(inner) if stages >= 2 else None
    ring, held = 0, frozenset()
    if plan is not None:
        ring = ring_bytes((load.result.type for load in plan.loads), stages)
        held = frozenset(convert for group in plan.converts for convert in group)
    scratch = max((_scratch_bytes(op) for op in outer.walk()
                   if isinstance(op, ConvertLayoutOp) and op not in held), default=0)  # fmt: skip
    return shared_bytes(module, {outer: ring}, held) + scratch <= limit


def _scratch_bytes(convert: ConvertLayoutOp) -> int:
    """The scratch a conversion between register layouts takes (0 for shared encodings)."""
    source, result = convert.operands[0].type, convert.results[0].type
    if not isinstance(source, TensorType) or not isinstance(result, TensorType):
        return 0
    if isinstance(source.encoding, SharedEncodingAttr) or isinstance(
        result.encoding, SharedEncodingAttr
    ):
        return 0
    return tile_bytes(result.shape, result.element_type)


def fusable(outer: ForOp) -> tuple[ForOp | None, str]:
    """The inner loop of `outer`'s nest where the pass fuses it (module doc), else None and why.
    Where the nest's shape qualifies, the invariant ops of its inits leave it first (`_hoist_inits`)."""
    if isinstance(outer.parent_op, ForOp):
        return None, "the loop is nested in another loop (only a nest's outermost loop is fused)"
    block = outer.regions[0].block
    inners = [op for op in block.ops if isinstance(op, ForOp)]
    if len(inners) != 1:
        return None, f"its body holds {len(inners)} loops, not one"
    inner = inners[0]
    if any(isinstance(op, ForOp) for op in inner.regions[0].block.ops):
        return None, "the inner loop holds a loop (only two-loop nests are fused)"
    if _hoisted_bounds(outer, inner) is None:
        return None, "the inner loop's bounds vary with the outer loop"
    if _constant_trips(inner) == 0:
        return None, "the inner loop never runs"
    _hoist_inits(outer)
    for value in _prologue_outputs(outer, inner):
        if _zero_type(value.type) is None:
            return None, f"the code before the inner loop passes on a {value.type}"
    return inner, ""


def _inside(value: Value, op: Operation) -> bool:
    """Whether `value` is defined in `op`'s regions (a block argument of one, or an op's)."""
    owner = value.block.parent_op if isinstance(value, BlockArgument) else value.op  # type: ignore[attr-defined]
    return owner is not None and op.is_ancestor_of(owner)


def _hoisted_bounds(outer: ForOp, inner: ForOp) -> list[Operation] | None:
    """The ops of `outer`'s body to hoist for `inner`'s bounds to be invariant (in body order),
    or None where they cannot be."""
    found: set[Operation] = set()
    pending = [inner.lower_bound, inner.upper_bound, inner.step]
    while pending:
        value = pending.pop()
        if not _inside(value, outer):
            continue
        op = getattr(value, "op", None)
        if op is None or op.parent is not outer.regions[0].block or op.regions:
            return None
        if not all(not isinstance(v.type, TensorType) for v in (*op.operands, *op.results)):
            return None
        if op in found:
            continue
        if not can_hoist(op, op):  # pure and speculatable (its operands are checked here)
            return None
        found.add(op)
        pending.extend(op.operands)
    order = outer.regions[0].block.index_map()
    return sorted(found, key=order.__getitem__)


def _prologue_outputs(outer: ForOp, inner: ForOp) -> list[Value]:
    """The values the ops before `inner` define and ops after them use (prologue outputs)."""
    block = outer.regions[0].block
    prologue = _ops_before(block, inner)
    members = set(prologue)
    outputs = []
    for op in prologue:
        for result in op.results:
            if any(top_op(user, block) not in members for user in result.users):
                outputs.append(result)
    return outputs


def _ops_before(block: Block, anchor: Operation) -> list[Operation]:
    ops = []
    for op in block.ops:
        if op is anchor:
            break
        ops.append(op)
    return ops


def _zero_type(t: Type) -> Type | None:
    """`t` where a zero of it can be made (module doc), else None: not in shared memory."""
    if isinstance(t, TensorType) and isinstance(t.encoding, SharedEncodingAttr):
        return None
    element = t.element_type if isinstance(t, TensorType) else t
    return t if isinstance(element, IntegerType | FloatType | PointerType) else None


class _At:
    """Inserts new ops before `anchor`, or at the end of `block`."""

    def __init__(
        self, block: Block, anchor: Operation | None = None, location: Location = UNKNOWN_LOC
    ):
        self.block, self.anchor, self.location = block, anchor, location

    def add(self, op: Operation) -> Value:
        if op.location is UNKNOWN_LOC:
            op.location = self.location
        if self.anchor is None:
            self.block.append(op)
        else:
            self.block.insert_before(op, self.anchor)
        return op.results[0] if op.results else None  # type: ignore[return-value]

    def const(self, value: int, t: Type) -> Value:
        return self.add(ConstantOp(IntegerAttr(value, t), t))

    def cmp(self, predicate: str, lhs: Value, rhs: Value) -> Value:
        op = CmpIOp(operands=[lhs, rhs], result_types=[i1],
                    attributes={"predicate": StringAttr(predicate)})  # fmt: skip
        return self.add(op)

    def select(self, condition: Value, a: Value, b: Value) -> Value:
        return self.add(SelectOp(operands=[condition, a, b], result_types=[a.type]))

    def cast(self, value: Value, t: Type) -> Value:
        width, target = value.type.width, t.width  # type: ignore[attr-defined]
        if width == target:
            return value
        return self.add((ExtSIOp if width < target else TruncIOp)(value, t))

    def zero(self, t: Type) -> Value:
        """A zero of `t` (`_zero_type`): null pointers for pointers."""
        element = t.element_type if isinstance(t, TensorType) else t
        if isinstance(element, PointerType):
            shaped = t.with_element_type(i64) if isinstance(t, TensorType) else i64
            return self.add(IntToPtrOp(operands=[self.zero(shaped)], result_types=[t]))
        scalar = (
            FloatAttr(0.0, element) if isinstance(element, FloatType) else IntegerAttr(0, element)
        )
        return self.add(
            ConstantOp(DenseAttr(scalar, t) if isinstance(t, TensorType) else scalar, t)
        )

    def trip_count(self, loop: ForOp) -> Value:
        """`loop`'s trip count as an i64: `ceil((ub - lb) / step)`, 0 where `lb >= ub`."""
        lb, ub, step = (self.cast(v, i64) for v in (loop.lower_bound, loop.upper_bound, loop.step))
        span = self.add(SubIOp(ub, lb))
        rounded = self.add(AddIOp(span, self.add(SubIOp(step, self.const(1, i64)))))
        count = self.add(DivSIOp(rounded, step))
        return self.select(self.cmp("slt", lb, ub), count, self.const(0, i64))


def _constant(value: Value) -> int | None:
    op = getattr(value, "op", None)
    if isinstance(op, ConstantOp) and isinstance(op.value, IntegerAttr):  # type: ignore[attr-defined]
        return op.value.value  # type: ignore[attr-defined]
    return None


def _constant_trips(loop: ForOp) -> int | None:
    lb, ub, step = (_constant(v) for v in (loop.lower_bound, loop.upper_bound, loop.step))
    if lb is None or ub is None or step is None or step <= 0:
        return None
    return max(0, -(-(ub - lb) // step))


def _sink(
    ops: list[Operation],
    into: Block,
    before: Operation | None,
    region: Callable,
    keep: Callable = lambda op: False,
) -> None:
    """Move the pure ops of `ops` (`CHEAP` ones where `into` is not their block) whose every user
    is in `region` (a predicate) or moved too, in order, to before `before` in `into`; not those
    `keep` names."""
    sunk: set[Operation] = set()
    for op in reversed(ops):
        if not op.has_trait(Pure) or op.regions or isinstance(op, DotOp) or not op.results:
            continue
        if (into is not op.parent and not isinstance(op, CHEAP)) or keep(op):
            continue
        users = [u for r in op.results for u in r.users]
        if users and all(region(u) or u in sunk for u in users):
            sunk.add(op)
    for op in [op for op in ops if op in sunk]:
        op.detach()
        if before is None:
            into.append(op)
        else:
            into.insert_before(op, before)


def _recompute_scalars(block: Block, inner: ForOp, after_inner: Callable) -> None:
    """The prologue's pure scalar ops (no regions) whose results the code after `inner` (the
    epilogue) reads, recomputed there from their own operands (cloned after `inner`, in order),
    where the epilogue's reads then need none of the prologue's results: the epilogue
    recomputes a tile's indices (a few integer divisions a tile) rather than the fused loop
    carry them from a prologue `scf.if` whose clone `pipeline-loops` keeps for the copies and
    whose original would then run, at every tile's first iteration, only for the epilogue."""
    prologue = _ops_before(block, inner)
    members = set(prologue)
    wanted: list[Operation] = []
    pending = [op for op in prologue if any(after_inner(u) for r in op.results for u in r.users)]
    seen: set[Operation] = set()
    while pending:
        op = pending.pop()
        if op in seen:
            continue
        seen.add(op)
        wanted.append(op)
        pending.extend(o for v in op.operands if (o := getattr(v, "op", None)) in members)
    if not wanted or not all(_scalar_pure(op) for op in wanted):
        return
    order = block.index_map()
    at = inner.next_op
    mapping: dict[Value, Value] = {}
    for op in sorted(wanted, key=order.__getitem__):
        copy = op.clone(mapping)
        block.insert_before(copy, at)  # type: ignore[arg-type]
        for old, new in zip(op.results, copy.results, strict=True):
            mapping[old] = new
            for user, index in list(old.uses):
                if after_inner(user):
                    user.set_operand(index, new)


def _scalar_pure(op: Operation) -> bool:
    return (op.has_trait(Pure) and not op.regions
            and not any(isinstance(v.type, TensorType) for v in (*op.operands, *op.results)))  # fmt: skip


def _compact(prologue: list[Operation]) -> Callable[[Operation], bool]:
    """Which of the prologue's `CHEAP` ops stay in it (their results carried from tile to tile)
    rather than move into the inner body: those computing a row or a column (a tensor with one
    dimension above 1) from no broadcast of the prologue, such as the row pointers
    `a_ptr + rm[:, None] * K`. Recomputed in the fused loop, they cost a 32-bit multiply and a
    64-bit multiply-add a pointer each iteration, which the nest's K loop (where `licm` left
    them) does not run; carried, a thread holds the pointers of its rows (a few registers).
    Broadcasts and what is computed from them move, so no broadcast tensor is carried, nor
    are splats, ranges and constants (sources recomputed for nothing)."""
    expanded: set[Operation] = set()
    for op in prologue:
        if isinstance(op, BroadcastOp) or any(
            getattr(v, "op", None) in expanded for v in op.operands
        ):
            expanded.add(op)

    def keep(op: Operation) -> bool:
        if op in expanded or isinstance(op, SplatOp | MakeRangeOp | ConstantOp):
            return False
        t = op.results[0].type
        return isinstance(t, TensorType) and sum(d > 1 for d in t.shape) <= 1

    return keep


def _replace_uses(value: Value, new: Value, where: Operation | None = None) -> None:
    """Uses of `value` read `new`; only those inside `where` (an op), where given."""
    for user, index in list(value.uses):
        if where is None or where.is_ancestor_of(user):
            user.set_operand(index, new)


def fuse(outer: ForOp, inner: ForOp) -> None:
    """Replace the nest `outer`/`inner` (`fusable`) by its fused form (module doc)."""
    block = outer.regions[0].block
    before_outer = _At(outer.parent, outer, outer.location)  # type: ignore[arg-type]
    for op in _hoisted_bounds(outer, inner) or []:
        op.detach()
        outer.parent.insert_before(op, outer)  # type: ignore[union-attr]
    inner_block = inner.regions[0].block
    order = block.index_map()
    after_inner = lambda user: order.get(top_op(user, block), -1) > order[inner]  # noqa: E731
    _sink(_ops_before(block, inner), block, inner.next_op, after_inner)
    order = block.index_map()  # the epilogue's ops, with those just moved there
    _recompute_scalars(block, inner, after_inner)
    in_inner = lambda user: user is not inner and inner.is_ancestor_of(user)  # noqa: E731
    prologue = _ops_before(block, inner)
    _sink(prologue, inner_block, inner_block.first_op, in_inner, _compact(prologue))
    location = outer.location
    trips = _constant_trips(inner)
    len_inner = before_outer.trip_count(inner)
    if trips is None:  # versioned: the original nest, less its inner loop, where it runs 0 times
        empty = before_outer.cmp("eq", len_inner, before_outer.const(0, i64))
        version = IfOp(empty, [r.type for r in outer.results])
        version.location = location
        before_outer.add(version)
        _zero_trip_copy(outer, inner, version.regions[0].block)
        fused_at = _At(version.regions[1].block, None, outer.location)
    else:
        version, fused_at = None, before_outer
    fused = _fused_loop(outer, inner, fused_at, len_inner)
    if version is None:
        results = fused.results[2 : 2 + len(outer.results)]
    else:
        version.regions[1].block.append(YieldOp(operands=fused.results[2 : 2 + len(outer.results)]))
        results = version.results
    for old, new in zip(outer.results, results, strict=True):
        old.replace_all_uses_with(new)
    outer.erase()


def _zero_trip_copy(outer: ForOp, inner: ForOp, into: Block) -> None:
    """`outer` copied into `into` with `inner`'s results read as its inits, then yielded."""
    mapping: dict[Value, Value] = {}
    copy = outer.clone(mapping)
    copy.attributes.pop(FLATTEN_ATTR, None)
    into.append(copy)
    position = list(outer.regions[0].block.ops).index(inner)
    copied_inner = list(copy.regions[0].block.ops)[position]
    for result, init in zip(copied_inner.results, copied_inner.init_args, strict=True):  # type: ignore[attr-defined]
        result.replace_all_uses_with(init)
    copied_inner.erase()
    into.append(YieldOp(operands=copy.results))


def _fused_loop(outer: ForOp, inner: ForOp, at: _At, len_inner: Value) -> ForOp:
    """The fused loop of the nest, built at `at` (module doc); it takes `outer`'s and `inner`'s
    ops. Its carried values: T, i, the outer loop's, the inner loop's, the prologue outputs."""
    block, inner_block = outer.regions[0].block, inner.regions[0].block
    location = outer.location
    i_type = outer.lower_bound.type
    total = at.add(MulIOp(at.trip_count(outer), len_inner))
    last = at.add(SubIOp(len_inner, at.const(1, i64)))
    zero, one = at.const(0, i64), at.const(1, i64)
    outer_inits = list(outer.init_args)
    inner_inits = list(inner.init_args)
    hoisted = [not _inside(v, outer) for v in inner_inits]
    outputs = _prologue_outputs(outer, inner)
    i_start = at.add(SubIOp(outer.lower_bound, outer.step))
    placeholders = [at.zero(v.type) for v in outputs]
    inner_starts = [v if h else at.zero(v.type) for v, h in zip(inner_inits, hoisted, strict=True)]
    inits = [at.const(-1, i64), i_start, *outer_inits, *inner_starts, *placeholders]
    fused = ForOp(zero, total, one, inits)
    fused.location = location
    at.add(fused)
    stages = [loop.attributes[NUM_STAGES_ATTR].value for loop in (outer, inner)  # type: ignore[attr-defined]
              if NUM_STAGES_ATTR in loop.attributes]  # fmt: skip
    if stages:
        fused.attributes[NUM_STAGES_ATTR] = IntegerAttr(max(stages), IntegerType(32))
    if any(DISABLE_LICM_ATTR in loop.attributes for loop in (outer, inner)):
        fused.attributes[DISABLE_LICM_ATTR] = UnitAttr()
    fused.attributes[FUSED_ATTR] = UnitAttr()  # for pipeline-loops (`pipeline_branches`)
    body = fused.regions[0].block
    args = body.args
    t_prev, i_prev = args[1], args[2]
    n_outer, n_inner = len(outer_inits), len(inner_inits)
    outer_args = args[3 : 3 + n_outer]
    inner_args = args[3 + n_outer : 3 + n_outer + n_inner]
    output_args = args[3 + n_outer + n_inner :]
    inside = _At(body, None, location)
    wraps = inside.cmp("eq", t_prev, last)
    t = inside.select(wraps, zero, inside.add(AddIOp(t_prev, one)))
    # the prologue, on the first inner iteration of each outer one
    starts = [v for v, h in zip(inner_inits, hoisted, strict=True) if not h]
    start_types = [v.type for v in starts]
    first = IfOp(inside.cmp("eq", t, zero), [i_type, *(v.type for v in outputs), *start_types])
    first.location = location
    inside.add(first)
    then_block, else_block = first.regions[0].block, first.regions[1].block
    i_next = _At(then_block, None, location).add(AddIOp(i_prev, outer.step))
    for op in _ops_before(block, inner):
        op.detach()
        then_block.append(op)
    then_block.append(YieldOp(operands=[i_next, *outputs, *starts]))
    kept = [a for a, h in zip(inner_args, hoisted, strict=True) if not h]
    else_block.append(YieldOp(operands=[i_prev, *output_args, *kept]))
    i_now = first.results[0]
    for value, result in zip(outputs, first.results[1 : 1 + len(outputs)], strict=True):
        for user, index in list(value.uses):
            if not first.is_ancestor_of(user):
                user.set_operand(index, result)
    started = iter(first.results[1 + len(outputs) :])
    inner_values = [a if h else next(started) for a, h in zip(inner_args, hoisted, strict=True)]
    # the inner body, every iteration
    j_type = inner.lower_bound.type
    offset = inside.add(MulIOp(inside.cast(t, j_type), inner.step))
    j = inside.add(AddIOp(inner.lower_bound, offset))
    inner_yield = inner_block.last_op
    inner_block.args[0].replace_all_uses_with(j)
    for arg, value in zip(inner_block.args[1:], inner_values, strict=True):
        arg.replace_all_uses_with(value)
    for op in list(inner_block.ops):
        if op is not inner_yield:
            op.detach()
            body.append(op)
    body_results = list(inner_yield.operands)  # type: ignore[union-attr]
    # the epilogue, on the last inner iteration of each outer one
    outer_yield = block.last_op
    outer_types = [v.type for v in outer_inits]
    reset_types = [v.type for v, h in zip(inner_inits, hoisted, strict=True) if h]
    last_one = IfOp(inside.cmp("eq", t, last), [*outer_types, *reset_types])
    last_one.location = location
    inside.add(last_one)
    ends, passes = last_one.regions[0].block, last_one.regions[1].block
    for result, value in zip(inner.results, body_results, strict=True):
        result.replace_all_uses_with(value)
    for op in list(block.ops):
        if op is not inner and op is not outer_yield:
            op.detach()
            ends.append(op)
    resets = [v for v, h in zip(inner_inits, hoisted, strict=True) if h]
    ends.append(YieldOp(operands=[*outer_yield.operands, *resets]))  # type: ignore[union-attr]
    carried_on = [r for r, h in zip(body_results, hoisted, strict=True) if h]
    passes.append(YieldOp(operands=[*outer_args, *carried_on]))
    # the outer loop's induction variable and carried values, now the fused loop's
    _replace_uses(block.args[0], i_next, where=first)
    block.args[0].replace_all_uses_with(i_now)
    for arg, value in zip(block.args[1:], outer_args, strict=True):
        arg.replace_all_uses_with(value)
    reset_results = iter(last_one.results[n_outer:])
    inner_next = [next(reset_results) if h else r
                  for r, h in zip(body_results, hoisted, strict=True)]  # fmt: skip
    yields = [
        t,
        i_now,
        *last_one.results[:n_outer],
        *inner_next,
        *first.results[1 : 1 + len(outputs)],
    ]
    body.append(YieldOp(operands=yields))
    inner_yield.erase()  # type: ignore[union-attr]
    outer_yield.erase()  # type: ignore[union-attr]
    inner.erase()
    return fused


__all__ = ["FLATTEN_ATTR", "FuseNestedLoops", "fusable", "fuse"]
