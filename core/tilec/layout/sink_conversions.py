"""Keep loop bodies in tensor-core layouts: conversions out of `#gpu.mma` sink to their users.

`accelerate-matmul` gives a `tile.dot` an `#gpu.mma` result and converts it back to the layout
`assign-layouts` chose, so every use of a dot result inside a loop pays a conversion through
shared memory, and a value that flows back into the next dot (attention's `p`, or an accumulator
scaled in the loop) is converted back again. After Triton's layout propagation, a conversion
`y = convert(x)` from the `#gpu.mma` family (an accumulator layout whose
`keeps_loop_values` is set, and slices of it) inside a loop is
moved past the users of `y` that compute in any layout: element-wise ops and selects, broadcasts,
reductions (whose results take the slice of the layout) and `expand_dims` of a matching slice.
Such a user computes on `x` in its layout instead, its other tensor operands are converted to it
(cheap ones are recomputed there by `remove-layout-conversions`), and its result is converted
back for its own users, the next place to sink from. Conversions stop at everything else (dot
operands, stores, `scf.yield`).

A loop that yields a conversion out of the family carries the unconverted value instead (its
init is converted once before the loop, its result once after it), so softmax statistics and
accumulators stay in the family across iterations. Conversions outside loops are left alone:
there the gain is one conversion at most, and the layout `assign-layouts` chose for a store is
the better one. The exception is a conversion whose value only flows, through element-wise ops
whose other operands are cheap to convert (constants, broadcasts: a bias), into a narrowing cast
(a matmul's f32 accumulator stored as f16): it sinks past the cast, as Triton's layout
propagation leaves it, so that the trip through shared memory moves the narrow values (half the
bytes of f32 for f16) and the epilogue computes in the accumulator's layout.
"""

from __future__ import annotations

from tilec.dialects import arith, tile
from tilec.dialects.gpu import ConvertLayoutOp, SliceEncodingAttr, in_loop_value_family
from tilec.dialects.scf import ForOp
from tilec.ir.core import Operation, OpResult, Value
from tilec.ir.traits import Elementwise
from tilec.ir.types import TensorType
from tilec.layout.assign_layouts import CHEAP_SOURCES, is_tensor, with_layout


def sink_conversions(module: Operation) -> bool:
    """Sink conversions out of the `#gpu.mma` family inside loops, and carry the unconverted
    values through the loops that yield them (module doc); whether anything changed."""
    changed = False
    progress = True
    while progress:
        progress = False
        for op in list(module.walk()):
            if isinstance(op, ConvertLayoutOp) and op.parent is not None and _sinkable(op):
                progress |= _sink(op)
        for loop in [op for op in module.walk() if isinstance(op, ForOp)]:
            progress |= _carry_converted_yields(loop)
        changed |= progress
    return changed


def _encoding(value: Value) -> object:
    return value.type.encoding  # type: ignore[attr-defined]


def _sinkable(convert: ConvertLayoutOp) -> bool:
    if not in_loop_value_family(_encoding(convert.source)) or in_loop_value_family(
        _encoding(convert.result)
    ):
        return False
    op: Operation | None = convert.parent_op
    while op is not None and not isinstance(op, ForOp):
        op = op.parent_op
    return op is not None or _narrows_ahead(convert.result)


NARROWING_CHAIN = 8
"""The most element-wise ops between a conversion outside loops and the narrowing cast it sinks
to (an epilogue's bias, activation and scaling are a few)."""


def _narrows_ahead(value: Value) -> bool:
    """Whether `value`'s only user is a narrowing cast, or an element-wise op whose other tensor
    operands convert cheaply and whose result narrows ahead in turn (at most `NARROWING_CHAIN`
    ops deep)."""
    for _ in range(NARROWING_CHAIN):
        users = {id(u): u for u, _ in value.uses}
        if len(users) != 1:
            return False
        (user,) = users.values()
        if isinstance(user, arith.CastOp):
            return _element_width(user.result) < _element_width(user.source)
        if not user.has_trait(Elementwise) or len(user.results) != 1:
            return False
        if not all(is_tensor(v) and (v is value or _converts_cheaply(v)) for v in user.operands):
            return False
        value = user.results[0]
    return False


def _element_width(value: Value) -> int:
    return getattr(value.type.element_type, "width", 0)  # type: ignore[attr-defined]


def _converts_cheaply(value: Value) -> bool:
    """A constant, splat or range (recomputed in any layout) or a broadcast (rebuilt from the
    smaller value under it) by `remove-layout-conversions`."""
    op = value.op if isinstance(value, OpResult) else None
    return isinstance(op, (*CHEAP_SOURCES, tile.BroadcastOp))


def _operand_layout(user: Operation, layout: object, value: Value) -> object | None:
    """The layout `user`'s tensor operands take when `value` among them is in `layout`, or None
    where `user` cannot compute in it."""
    if isinstance(user, tile.ExpandDimsOp):
        fits = isinstance(layout, SliceEncodingAttr) and layout.dim == user.axis_int
        return layout if fits else None
    if isinstance(user, (arith.SelectOp, tile.BroadcastOp, tile.ReduceOp)):
        return layout
    if user.has_trait(Elementwise) and all(is_tensor(v) for v in user.operands):
        return layout
    return None


def _result_layout(user: Operation, layout: object) -> object:
    if isinstance(user, tile.ExpandDimsOp):
        return layout.parent  # type: ignore[attr-defined]
    if isinstance(user, tile.ReduceOp):
        return SliceEncodingAttr(user.axis_int, layout)  # type: ignore[arg-type]
    return layout


def _sink(convert: ConvertLayoutOp) -> bool:
    source, converted = convert.source, convert.result
    layout = _encoding(source)
    changed = False
    for user in list({id(u): u for u, _ in converted.uses}.values()):
        if isinstance(user, ConvertLayoutOp):
            # convert(convert(x)) converts x: the outer conversion, now out of the family,
            # sinks in its turn (a reduction's result taken to a stored vector's layout).
            user.set_operand(0, source)
            changed = True
            continue
        operand_layout = _operand_layout(user, layout, converted)
        if operand_layout is None:
            continue
        for index, operand in enumerate(user.operands):
            if operand is converted:
                user.set_operand(index, source)
            elif is_tensor(operand) and _encoding(operand) != operand_layout:
                user.set_operand(index, convert_before(user, operand, operand_layout))
        result_layout = _result_layout(user, operand_layout)
        for result in user.results:
            if isinstance(result.type, TensorType):  # a reduction to a scalar has no layout
                _retype_with_conversion_back(user, result, result_layout)
        changed = True
    if changed and not converted.has_uses():
        convert.erase()
    return changed


def convert_before(op: Operation, value: Value, layout: object) -> Value:
    """A `gpu.convert_layout` of `value` to `layout`, placed before `op`."""
    convert = ConvertLayoutOp(value, with_layout(value.type, layout))  # type: ignore[arg-type]
    convert.location = op.location
    convert.results[0].name_hint = value.name_hint
    op.parent.insert_before(convert, op)  # type: ignore[union-attr]
    return convert.results[0]


def _retype_with_conversion_back(op: Operation, result: Value, layout: object) -> None:
    """Give tensor `result` of `op` the layout `layout`; its uses get a conversion to the old
    type."""
    old_type = result.type
    result.type = with_layout(old_type, layout)
    if not result.has_uses():
        return
    back = ConvertLayoutOp(result, old_type)
    back.location = op.location
    back.results[0].name_hint = result.name_hint
    op.parent.insert_after(back, op)  # type: ignore[union-attr]
    for user, index in list(result.uses):
        if user is not back:
            user.set_operand(index, back.results[0])


def _carry_converted_yields(loop: ForOp) -> bool:
    block = loop.regions[0].block
    terminator = block.last_op
    changed = False
    for i, yielded in enumerate(terminator.operands):  # type: ignore[union-attr]
        producer = yielded.op if isinstance(yielded, OpResult) else None
        if not isinstance(producer, ConvertLayoutOp):
            continue
        carried = producer.source
        if not in_loop_value_family(_encoding(carried)) or in_loop_value_family(_encoding(yielded)):
            continue
        arg = block.args[1 + i]
        layout = _encoding(carried)
        loop.set_operand(3 + i, convert_before(loop, loop.operands[3 + i], layout))
        old_type = arg.type
        arg.type = carried.type
        inside = ConvertLayoutOp(arg, old_type)  # type: ignore[arg-type]
        inside.location = loop.location
        inside.results[0].name_hint = arg.name_hint
        block.insert_before(inside, block.first_op)  # type: ignore[arg-type]
        for user, index in list(arg.uses):
            if user is not inside:
                user.set_operand(index, inside.results[0])
        terminator.set_operand(i, carried)  # type: ignore[union-attr]
        _retype_with_conversion_back(loop, loop.results[i], layout)
        changed = True
    return changed


__all__ = ["convert_before", "sink_conversions"]
