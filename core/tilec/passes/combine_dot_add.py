"""`combine-dot-add`: `d + dot(a, b, 0)` becomes `dot(a, b, d)`, as Triton's combine pass does.

`acc += tl.dot(a, b)` (the attention backward's `dv += tl.dot(p, do)`) is an `arith.addf` of the
accumulator and a dot of a zero accumulator; the matrix units then fill a zeroed register tile,
multiply into it and add it to the accumulator element by element (64 adds a thread for a
128x64 f32 tile on 4 warps, and twice the accumulator's registers live across the dot). Where
the dot's accumulator is a constant zero, its result has no other use and, for `arith.addf`,
the dot has no `max_num_imprecise_acc` (a float8 dot that sums in reduced precision must not
start from `d`), the two ops become one `tile.dot` of accumulator `d`, placed where the add was
(so `d` is defined before it), with the dot's attributes and location. Either operand order
(`d + dot`, `dot + d`) and `arith.addi` of integer dots alike, as in Triton 3.6 (its
`CombineDotAdd{I,F}{,Rev}Pattern`s, which need the same single use and, for floats,
`maxNumImpreciseAcc == 0`).

The result differs from the separate add in its rounding only: the matrix unit adds `d` to the
products in its own order instead of adding the rounded dot to `d` once (Triton's numerics).
"""

from __future__ import annotations

from tilec.dialects.arith import AddFOp, AddIOp
from tilec.dialects.tile import DotOp
from tilec.ir.attributes import DenseAttr, FloatAttr, IntegerAttr
from tilec.ir.core import Operation, Value
from tilec.ir.rewriting import Rewriter, defining_op
from tilec.passes.base import ALL_ANALYSES, ModulePass, PassContext
from tilec.passes.canonicalize import constant_value


class CombineDotAdd(ModulePass):
    """Fold `d + dot(a, b, 0)` into `dot(a, b, d)`."""

    name = "combine-dot-add"
    stage = "tir"
    description = "fold d + dot(a, b, 0) into dot(a, b, d) (Triton's dot-add combine)"
    after = ("canonicalize",)
    before = ("licm",)
    invalidates = ALL_ANALYSES

    def run(self, module: Operation, context: PassContext) -> bool:
        rewriter = Rewriter()
        for op in [op for op in module.walk() if isinstance(op, (AddFOp, AddIOp))]:
            combine(op, rewriter)
        return rewriter.changed


def combine(add: Operation, rewriter: Rewriter) -> bool:
    """Replace `add` (`arith.addf` / `arith.addi`) of a foldable dot by one dot; whether it did."""
    for index in (0, 1):
        dot = defining_op(add.operands[index])
        if isinstance(dot, DotOp) and foldable(dot, add):
            other = add.operands[1 - index]
            new = DotOp([dot.a, dot.b, other], [dot.result.type], dict(dot.attributes))
            new.location = dot.location
            new.results[0].name_hint = add.results[0].name_hint or dot.result.name_hint
            rewriter.insert_before(new, add)
            rewriter.replace_op(add, new.results)
            rewriter.erase_op(dot)
            return True
    return False


def foldable(dot: DotOp, add: Operation) -> bool:
    """Whether `dot` may take the other operand of `add` as its accumulator."""
    if len(dot.result.uses) != 1 or dot.result.type != add.results[0].type:
        return False
    if isinstance(add, AddFOp) and _imprecise(dot):
        return False
    return is_zero(dot.acc)


def _imprecise(dot: DotOp) -> bool:
    attr = dot.attributes.get("max_num_imprecise_acc")
    return isinstance(attr, IntegerAttr) and attr.value != 0


def is_zero(value: Value) -> bool:
    """Whether `value` is a constant zero (a splat; +0 or -0)."""
    attr = constant_value(value)
    if isinstance(attr, DenseAttr):
        attr = attr.value
    return isinstance(attr, (IntegerAttr, FloatAttr)) and attr.value == 0


__all__ = ["CombineDotAdd", "combine", "foldable", "is_zero"]
