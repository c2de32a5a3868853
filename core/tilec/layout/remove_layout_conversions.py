"""The `remove-layout-conversions` pass: drop the `gpu.convert_layout`s gir does not need.

- A conversion to the layout its source already has is its source.
- A conversion of a conversion converts the original value (`convert(convert(x))` ->
  `convert(x)`), which may then be the first case.
- A second conversion of one value to one layout is the first one, where that dominates it.
- A conversion of a cheap value (a constant, `tile.splat`, `tile.make_range`, or a broadcast,
  `expand_dims` or element-wise op, `math.*` aside, of cheap values) is replaced by computing
  that value again directly in the target layout: a few register operations instead of a trip
  through shared memory (not for a conversion to a shared-memory encoding: no register
  layout can compute in it).
- A conversion of a broadcast or `expand_dims` converts the smaller value under it instead and
  rebuilds the shape ops in the target layout (not for `#gpu.dot_op` targets, which the lowering
  reads through shared memory whole, nor for shared-memory encodings).
- A conversion inside a loop of a value defined outside it is made once before the loop.

Cheap values also take in, as Triton's backward rematerialization does (its
`isExpensiveLoadOrStore`): a conversion between register layouts of a cheap value; a load of
fewer elements than the CTA has threads (not volatile, its pointers, mask and `other` cheap: the
threads read a few words the cache holds, instead of a trip through shared memory with two
barriers, each iteration in a loop); and a value an `scf.for` carries whose initial value is
cheap and whose yielded value is cheap given it (an index vector stepped each iteration,
`offs_m += BLOCK_M`), which the loop then carries in the target layout too (a new loop-carried
value; the old one, where nothing else uses it, is dropped). The last two only for targets
outside the matrix units' operand layouts (`#gpu.dot_op`). The attention backward's softmax
rows (`m`, `Delta`) and causal masks, indexed by a stepped `offs_m`, are computed in the
accumulator's layout so, with no conversion left in its loops.

Before all of this, `tilec.layout.sink_conversions` moves conversions out of `#gpu.mma` in loop
bodies past the ops that can compute in it, so those stay in the tensor-core layout.
Conversions and cheap ops left without uses are erased.
"""

from __future__ import annotations

from tilec.dialects import tile
from tilec.dialects.gpu import (
    ConvertLayoutOp,
    LayoutEncodingAttr,
    SharedEncodingAttr,
    SliceEncodingAttr,
)
from tilec.dialects.gpu_matrix import OperandEncodingAttr
from tilec.dialects.scf import ForOp
from tilec.dialects.scf_patterns import erase_for_iter_args
from tilec.ir.attributes import DenseAttr
from tilec.ir.core import BlockArgument, Operation, OpResult, Value
from tilec.ir.rewriting import Rewriter
from tilec.ir.types import TensorType
from tilec.layout.assign_layouts import (
    CHEAP_SOURCES,
    is_tensor,
    recomputes_cheaply,
    with_layout,
)
from tilec.layout.sink_conversions import convert_before, sink_conversions
from tilec.passes.base import ModulePass, PassContext
from tilec.passes.dead_code_elimination import has_no_effects, iter_arg_slice


class RemoveLayoutConversions(ModulePass):
    name = "remove-layout-conversions"
    stage = "gir"
    description = "drop identity and chained layout conversions, recompute cheap values instead"
    after = ("assign-layouts",)

    def run(self, module: Operation, context: PassContext) -> bool:
        sunk = sink_conversions(module)
        hoisted = _hoist_invariant_conversions(module)
        target = context.target
        threads = getattr(target, "num_warps", 0) * getattr(
            getattr(target, "rules", None), "threads_per_warp", 0
        )
        remover = _Remover(threads)
        for op in list(module.walk()):
            if isinstance(op, ConvertLayoutOp) and op.parent is not None:
                remover.simplify(op)
        remover.erase_dead()
        return sunk or hoisted or remover.changed


class _Remover:
    def __init__(self, threads: int = 0) -> None:
        self.threads = threads
        """The CTA's threads: loads of fewer elements are cheap (0: none is)."""
        self.changed = False
        self.memo: dict[tuple[Value, object], Value] = {}
        self.origin: dict[Value, Value] = {}
        """Each value `recompute` made, to the value it computes again (one memo entry for
        both)."""
        self.loops: list[ForOp] = []
        """The loops given new loop-carried values."""
        self.maybe_dead: list[Operation] = []
        self.converts: dict[tuple[Value, object], Operation] = {}

    def simplify(self, convert: ConvertLayoutOp) -> None:
        source = convert.source
        while isinstance(source, OpResult) and isinstance(source.op, ConvertLayoutOp):
            self.maybe_dead.append(source.op)
            source = source.op.source
            convert.set_operand(0, source)
            self.changed = True
        result = convert.result
        if not result.has_uses():
            self.maybe_dead.append(convert)
            self.changed = True
            return
        layout = result.type.encoding  # type: ignore[attr-defined]
        earlier = self.converts.get((source, layout))
        if source.type == result.type:
            replacement = source
        elif not isinstance(layout, SharedEncodingAttr) and self.is_cheap(source, layout):
            replacement = self.recompute(source, layout)
        elif _is_shape_op(source) and _rebuilds_shape_ops(layout):
            replacement = self.rebuild(source, layout)
        elif earlier is not None and _dominates(earlier, convert):
            replacement = earlier.results[0]
        else:
            self.converts[(source, layout)] = convert
            return
        result.replace_all_uses_with(replacement)
        self.maybe_dead.append(convert)
        self.changed = True

    def is_cheap(
        self, value: Value, layout: object = None, carried: frozenset = frozenset()
    ) -> bool:
        """Whether `value` computes again cheaply in `layout` (None: in any register layout;
        small loads and loop-carried values only outside operand layouts). `carried`: the
        loop-carried values assumed cheap while their yielded values are checked."""
        if isinstance(value, BlockArgument):
            return self.is_cheap_carried(value, layout, carried)
        op = value.op if isinstance(value, OpResult) else None
        if op is None or len(op.results) != 1 or not is_tensor(value):
            return False
        if isinstance(op, CHEAP_SOURCES):
            return True
        extended = layout is not None and not isinstance(layout, OperandEncodingAttr)
        if isinstance(op, ConvertLayoutOp):
            source_layout = op.source.type.encoding  # type: ignore[attr-defined]
            if isinstance(source_layout, SharedEncodingAttr):
                return False
            return extended and self.is_cheap(op.source, layout, carried)
        if isinstance(op, tile.LoadOp):
            if not (extended and self._small_load(op)):
                return False
        elif not recomputes_cheaply(op):
            return False
        return all(self.is_cheap(v, layout, carried) for v in op.operands if is_tensor(v))

    def _small_load(self, op: tile.LoadOp) -> bool:
        """A load of fewer elements than the CTA's threads, not volatile: in a loop or not, as
        Triton's (a program that runs once, such as the rotary embedding's 8 heads a token,
        spent a quarter of its instructions on two conversions of its cos and sin rows)."""
        elements = 1
        for extent in op.result.type.shape:  # type: ignore[attr-defined]
            elements *= extent
        return elements < self.threads and "volatile" not in op.attributes

    def is_cheap_carried(self, arg: BlockArgument, layout: object, carried: frozenset) -> bool:
        """A tensor an `scf.for` carries (not its induction variable): cheap where its initial
        value is, and its yielded value given that it is."""
        if arg in carried:
            return True
        loop = arg.block.parent_op
        if (
            layout is None
            or isinstance(layout, OperandEncodingAttr)
            or not isinstance(loop, ForOp)
            or arg.index == 0
            or not is_tensor(arg)
        ):
            return False
        init = loop.operands[2 + arg.index]
        yielded = arg.block.last_op.operands[arg.index - 1]  # type: ignore[union-attr]
        return self.is_cheap(init, layout, carried) and self.is_cheap(
            yielded, layout, carried | {arg}
        )

    def recompute(self, value: Value, layout: object) -> Value:
        value = self.origin.get(value, value)
        if value.type.encoding == layout:  # type: ignore[attr-defined]
            return value
        key = (value, layout)
        if key in self.memo:
            return self.memo[key]
        if isinstance(value, BlockArgument):
            return self.recompute_carried(value, layout)
        op = value.op  # type: ignore[attr-defined]
        if isinstance(op, ConvertLayoutOp):
            return self.recompute(op.source, layout)
        result_type = with_layout(value.type, layout)  # type: ignore[arg-type]
        operands = []
        for operand in op.operands:
            if not is_tensor(operand):
                operands.append(operand)
            elif isinstance(op, tile.ExpandDimsOp):
                slice_layout = SliceEncodingAttr(op.axis.value, layout)  # type: ignore[arg-type]
                operands.append(self.recompute(operand, slice_layout))
            else:
                operands.append(self.recompute(operand, layout))
        attributes = dict(op.attributes)
        if isinstance(attributes.get("value"), DenseAttr):
            attributes["value"] = DenseAttr(attributes["value"].value, result_type)
        clone = type(op).create(operands, [result_type], attributes, location=op.location)
        clone.results[0].name_hint = value.name_hint
        op.parent.insert_after(clone, op)
        self.memo[key] = clone.results[0]
        self.origin[clone.results[0]] = value
        self.maybe_dead.append(op)
        return clone.results[0]

    def recompute_carried(self, arg: BlockArgument, layout: object) -> Value:
        """A new value of `arg`'s loop carrying `arg` in `layout`: its initial value and its
        yielded value computed there."""
        loop = arg.block.parent_op
        assert isinstance(loop, ForOp)
        block = arg.block
        terminator = block.last_op
        assert terminator is not None
        new_type = with_layout(arg.type, layout)  # type: ignore[arg-type]
        init = self.recompute(loop.operands[2 + arg.index], layout)
        yielded = terminator.operands[arg.index - 1]
        new_arg = block.add_arg(new_type, arg.name_hint)
        self.memo[(arg, layout)] = new_arg
        self.origin[new_arg] = arg
        if loop not in self.loops:
            self.loops.append(loop)
        loop.set_operands([*loop.operands, init])
        loop.results.append(OpResult(new_type, loop, len(loop.results)))
        # the yield's slot is taken before the yielded value is computed again: that may carry
        # other values anew (a loaded row whose pointers step a carried index), whose slots
        # come after this one, as their block arguments do
        slot = len(terminator.operands)
        terminator.set_operands([*terminator.operands, yielded])
        terminator.set_operand(slot, self.recompute(yielded, layout))
        self.changed = True
        return new_arg

    def rebuild(self, value: Value, layout: object) -> Value:
        """`value`, a chain of broadcasts and `expand_dims`, built in `layout` from a conversion
        of the value at the chain's root."""
        op = value.op  # type: ignore[attr-defined]
        operand = op.operands[0]
        operand_layout = layout
        if isinstance(op, tile.ExpandDimsOp):
            operand_layout = SliceEncodingAttr(op.axis.value, layout)  # type: ignore[arg-type]
        root_convert = None
        if operand.type.encoding == operand_layout:  # type: ignore[attr-defined]
            new_operand = operand
        elif _is_shape_op(operand):
            new_operand = self.rebuild(operand, operand_layout)
        else:
            new_operand = convert_before(op, operand, operand_layout)
            root_convert = new_operand.op  # type: ignore[attr-defined]
        result_type = with_layout(value.type, layout)  # type: ignore[arg-type]
        clone = type(op).create(
            [new_operand], [result_type], dict(op.attributes), location=op.location
        )
        clone.results[0].name_hint = value.name_hint
        op.parent.insert_after(clone, op)
        self.maybe_dead.append(op)
        if root_convert is not None:
            self.simplify(root_convert)
        return clone.results[0]

    def erase_dead(self) -> None:
        """Erase the replaced conversions, the cheap ops they leave unused, and the loop-carried
        values left carried for nothing (with what only they used)."""
        self._drain(list(self.maybe_dead))
        for loop in self.loops:
            while True:  # a dropped value's ops drained may leave another carried for nothing
                read = _drop_dead_carried(loop)
                if not read:
                    break
                self._drain([v.op for v in read if isinstance(v, OpResult)])

    def _drain(self, worklist: list[Operation]) -> None:
        while worklist:
            op = worklist.pop()
            if op.parent is None or any(r.has_uses() for r in op.results):
                continue
            if not has_no_effects(op):  # a yielded atomic's result: the op stays
                continue
            operands = [v for v in op.operands if isinstance(v.type, TensorType)]
            op.erase()
            for value in operands:
                if not isinstance(value, OpResult):
                    continue
                if self.is_cheap(value) or isinstance(value.op, ConvertLayoutOp):
                    worklist.append(value.op)
                elif isinstance(value.op, tile.LoadOp) and "volatile" not in value.op.attributes:
                    worklist.append(value.op)  # a small load recomputed elsewhere


def _drop_dead_carried(loop: ForOp) -> list[Value]:
    """Drop the values `loop` carries only for themselves: an unused result whose block
    argument feeds nothing but pure ops that lead only to its own yield (an index vector
    `recompute_carried` carries again in another layout). Returns the values the dropped ops,
    yields and initial values read (which may be left unused)."""
    block = loop.regions[0].block
    terminator = block.last_op
    dead, read = [], []
    for index, result in enumerate(loop.results):
        arg = block.args[1 + index]
        if result.has_uses():
            continue
        chain = iter_arg_slice(loop, index)
        if chain is None:
            continue
        read.append(terminator.operands[index])  # type: ignore[union-attr]
        terminator.set_operand(index, arg)  # type: ignore[union-attr]
        for op in reversed(chain):
            read += op.operands
            op.erase()
        read.append(loop.operands[3 + index])
        dead.append(index)
    if dead:
        erase_for_iter_args(loop, dead, Rewriter())
    return read


def _rebuilds_shape_ops(layout: object) -> bool:
    """Whether a shape op may be rebuilt in `layout` (`LayoutEncodingAttr.rebuilds_shape_ops`;
    never in shared memory)."""
    if isinstance(layout, SharedEncodingAttr):
        return False
    return not isinstance(layout, LayoutEncodingAttr) or layout.rebuilds_shape_ops


def _is_shape_op(value: Value) -> bool:
    return isinstance(value, OpResult) and isinstance(
        value.op, (tile.BroadcastOp, tile.ExpandDimsOp)
    )


def _hoist_invariant_conversions(module: Operation) -> bool:
    """Move each conversion in a loop whose source is defined outside the loop to just before
    the outermost such loop."""
    changed = False
    for convert in [op for op in module.walk() if isinstance(op, ConvertLayoutOp)]:
        target = None
        loop = convert.parent_op
        while isinstance(loop, ForOp) and _defined_outside(convert.source, loop):
            target = loop
            loop = loop.parent_op
        if target is None:
            continue
        convert.detach()
        target.parent.insert_before(convert, target)
        changed = True
    return changed


def _defined_outside(value: Value, loop: Operation) -> bool:
    owner = value.op if isinstance(value, OpResult) else value.block.parent_op  # type: ignore[attr-defined]
    while owner is not None:
        if owner is loop:
            return False
        owner = owner.parent_op
    return True


def _dominates(earlier: Operation, later: Operation) -> bool:
    """Whether `earlier`, met before `later` in a walk, is in `later`'s block or an enclosing one."""
    op: Operation | None = later
    while op is not None:
        if op.parent is earlier.parent:
            return True
        op = op.parent_op
    return False
