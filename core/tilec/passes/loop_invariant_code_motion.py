"""`licm`: hoist loop-invariant pure ops out of `scf.for` and `scf.while` loops.

An op moves to just before its loop when
- it is `Pure` (so `tile.reduce` with its combiner qualifies, `scf` control flow does not),
- it is safe to run even if the loop runs zero times: integer division and remainder only move
  with a constant divisor that is neither zero nor (signed) -1, and
- every value it uses (also inside its regions) is defined outside the loop.

Loops are visited innermost first and each body in order, so chains of invariant ops and ops
hoisted out of an inner loop keep moving out through the enclosing loops.

A loop marked `disable_licm` keeps its ops. Loads are never hoisted: the loop may write the memory they read (and a loop that runs zero
times must not load at all). Nor are stores, atomics or any other op with effects.
"""

from __future__ import annotations

from tilec.dialects.arith import DivSIOp, DivUIOp, RemSIOp, RemUIOp
from tilec.dialects.arith_folding import as_signed
from tilec.dialects.scf import ForOp, WhileOp
from tilec.ir.attributes import DenseAttr, IntegerAttr
from tilec.ir.core import BlockArgument, Operation, Value
from tilec.ir.rewriting import Rewriter, defining_op
from tilec.ir.traits import ConstantLike, IsTerminator, Pure
from tilec.passes.base import ALL_ANALYSES, ModulePass, PassContext

LOOPS = (ForOp, WhileOp)

DISABLE_LICM = "disable_licm"
"""The loop flag of `tl.range(disable_licm=True)` and `tl.condition(c, disable_licm=True)`: the
loop's own ops stay in it (invariants of loops nested in it may still move out to it)."""

_INTEGER_DIVISIONS: dict[type[Operation], bool] = {
    DivSIOp: True,
    RemSIOp: True,
    DivUIOp: False,
    RemUIOp: False,
}
"""Per integer division op: whether it is signed (a divisor of -1 may overflow too)."""


class LoopInvariantCodeMotion(ModulePass):
    """Move pure ops whose operands are defined outside a loop to before the loop."""

    name = "licm"
    stage = "tir"
    description = "hoist loop-invariant pure ops out of scf.for and scf.while"
    after = ("canonicalize",)
    invalidates = ALL_ANALYSES

    def run(self, module: Operation, context: PassContext) -> bool:
        rewriter = Rewriter()
        loops = [op for op in module.walk(post_order=True) if isinstance(op, LOOPS)]
        for loop in loops:
            if DISABLE_LICM not in loop.attributes:
                hoist_invariants(loop, rewriter)
        return rewriter.changed


def hoist_invariants(loop: Operation, rewriter: Rewriter) -> None:
    """Hoist the invariant ops of `loop`'s regions to just before `loop`."""
    for region in loop.regions:
        for block in region.blocks:
            for op in list(block.ops):
                if can_hoist(op, loop):
                    rewriter.move_before(op, loop)


def can_hoist(op: Operation, loop: Operation) -> bool:
    if op.has_trait(IsTerminator) or not op.has_trait(Pure) or not _is_speculatable(op):
        return False
    for inner in op.walk():
        for value in inner.operands:
            if not _defined_inside(value, op) and _defined_inside(value, loop):
                return False
    return True


def _defined_inside(value: Value, op: Operation) -> bool:
    """Whether `value` is defined by `op`, inside one of `op`'s regions, or is a block argument
    of one of them."""
    owner = value.block.parent_op if isinstance(value, BlockArgument) else defining_op(value)
    return owner is not None and op.is_ancestor_of(owner)


def _is_speculatable(op: Operation) -> bool:
    """Whether running `op` when the program would not have is harmless (no undefined behavior)."""
    signed = _INTEGER_DIVISIONS.get(type(op))
    if signed is None:
        return True
    divisor = defining_op(op.operands[1])
    if divisor is None or not divisor.has_trait(ConstantLike):
        return False
    attr = divisor.attributes.get("value")
    if isinstance(attr, DenseAttr):
        attr = attr.value
    if not isinstance(attr, IntegerAttr):
        return False
    value = as_signed(attr.value, attr.type.width)
    return value != 0 and not (signed and value == -1)
