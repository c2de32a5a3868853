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
from tilec.dialects.scf import ForOp
from tilec.ir.attributes import DenseAttr
from tilec.ir.core import Operation, OpResult, Value
from tilec.ir.types import TensorType
from tilec.layout.assign_layouts import (
    CHEAP_SOURCES,
    is_tensor,
    recomputes_cheaply,
    with_layout,
)
from tilec.layout.sink_conversions import convert_before, sink_conversions
from tilec.passes.base import ModulePass, PassContext


class RemoveLayoutConversions(ModulePass):
    name = "remove-layout-conversions"
    stage = "gir"
    description = "drop identity and chained layout conversions, recompute cheap values instead"
    after = ("assign-layouts",)

    def run(self, module: Operation, context: PassContext) -> bool:
        sunk = sink_conversions(module)
        hoisted = _hoist_invariant_conversions(module)
        remover = _Remover()
        for op in list(module.walk()):
            if isinstance(op, ConvertLayoutOp) and op.parent is not None:
                remover.simplify(op)
        remover.erase_dead()
        return sunk or hoisted or remover.changed


class _Remover:
    def __init__(self) -> None:
        self.changed = False
        self.memo: dict[tuple[Value, object], Value] = {}
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
        elif self.is_cheap(source) and not isinstance(layout, SharedEncodingAttr):
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

    def is_cheap(self, value: Value) -> bool:
        op = value.op if isinstance(value, OpResult) else None
        if op is None or len(op.results) != 1 or not is_tensor(value):
            return False
        if isinstance(op, CHEAP_SOURCES):
            return True
        if not recomputes_cheaply(op):
            return False
        return all(self.is_cheap(v) for v in op.operands if is_tensor(v))

    def recompute(self, value: Value, layout: object) -> Value:
        if value.type.encoding == layout:  # type: ignore[attr-defined]
            return value
        key = (value, layout)
        if key in self.memo:
            return self.memo[key]
        op = value.op  # type: ignore[attr-defined]
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
        self.maybe_dead.append(op)
        return clone.results[0]

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
        """Erase the replaced conversions, and the cheap ops they leave unused."""
        worklist = list(self.maybe_dead)
        while worklist:
            op = worklist.pop()
            if op.parent is None or any(r.has_uses() for r in op.results):
                continue
            operands = [v for v in op.operands if isinstance(v.type, TensorType)]
            op.erase()
            for value in operands:
                if not isinstance(value, OpResult):
                    continue
                if self.is_cheap(value) or isinstance(value.op, ConvertLayoutOp):
                    worklist.append(value.op)


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
