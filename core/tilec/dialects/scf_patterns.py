"""Canonicalization patterns for `scf` ops, and helpers that drop unused loop-carried values and
results (shared with dead-code elimination).

- `scf.if` with a constant condition is replaced by the taken region's ops.
- `scf.for` with constant bounds that runs zero times is replaced by its initial values; one that
  runs exactly once is replaced by its body (with the induction variable set to the lower bound).
- `scf.for` loop-carried values that the body passes through unchanged are replaced by their
  initial values; those whose result and block argument are otherwise unused are dropped.
"""

from __future__ import annotations

from collections.abc import Iterable

from tilec.dialects.arith_folding import as_signed
from tilec.ir.attributes import IntegerAttr
from tilec.ir.core import Operation, Value
from tilec.ir.rewriting import RewritePattern, Rewriter, defining_op
from tilec.ir.traits import ConstantLike
from tilec.ir.types import IntegerType


def constant_int(value: Value) -> int | None:
    """The value of an integer scalar constant (read as signed), or None."""
    op = defining_op(value)
    if op is None or not op.has_trait(ConstantLike):
        return None
    attr = op.attributes.get("value")
    if not isinstance(attr, IntegerAttr) or not isinstance(attr.type, IntegerType):
        return None
    return as_signed(attr.value, attr.type.width)


class InlineConstantIf(RewritePattern):
    """`scf.if` on a constant condition: keep the taken region's ops, use its yielded values."""

    def match_and_rewrite(self, op: Operation, rewriter: Rewriter) -> bool:
        condition = constant_int(op.operands[0])
        if condition is None:
            return False
        region = op.regions[0] if condition else op.regions[1]
        values = rewriter.inline_block_before(region.block, op, []) if region.blocks else []
        rewriter.replace_op(op, values)
        return True


class FoldConstantTripFor(RewritePattern):
    """`scf.for` with constant bounds and zero trips gives its initial values; with one trip it
    is its body, run once with the induction variable equal to the lower bound."""

    def match_and_rewrite(self, op: Operation, rewriter: Rewriter) -> bool:
        lower_bound, upper_bound, step = op.operands[:3]
        lower, upper = constant_int(lower_bound), constant_int(upper_bound)
        if lower is None or upper is None:
            return False
        inits = list(op.operands[3:])
        if lower >= upper:
            rewriter.replace_op(op, inits)
            return True
        step_value = constant_int(step)
        if step_value is None or step_value <= 0 or upper - lower > step_value:
            return False
        values = rewriter.inline_block_before(op.regions[0].block, op, [lower_bound, *inits])
        rewriter.replace_op(op, values)
        return True


class SimplifyForIterArgs(RewritePattern):
    """Replace pass-through loop-carried values (the body yields its own argument) by their
    initial values, and drop loop-carried values used by nothing but their own yield."""

    def match_and_rewrite(self, op: Operation, rewriter: Rewriter) -> bool:
        body = op.regions[0].block
        terminator = body.last_op
        assert terminator is not None
        changed = False
        droppable = []
        for index, (init, result) in enumerate(zip(op.operands[3:], op.results, strict=True)):
            arg = body.args[index + 1]
            if terminator.operands[index] is arg and (result.has_uses() or len(arg.uses) > 1):
                rewriter.replace_all_uses_with(result, init)
                _replace_uses_except(arg, init, terminator, index, rewriter)
                changed = True
            if not result.has_uses() and set(arg.uses) <= {(terminator, index)}:
                droppable.append(index)
        if droppable:
            erase_for_iter_args(op, droppable, rewriter)
        return changed or bool(droppable)


def _replace_uses_except(
    value: Value, new: Value, keep_user: Operation, keep_index: int, rewriter: Rewriter
) -> None:
    for user, index in list(value.uses):
        if (user, index) != (keep_user, keep_index):
            user.set_operand(index, new)
            rewriter.modified(user)


def erase_for_iter_args(op: Operation, indices: Iterable[int], rewriter: Rewriter) -> None:
    """Drop loop-carried values `indices` of `scf.for` `op`: their initial value, block argument,
    yielded value and result. Each block argument may only be used by the yield at its position,
    and each result must be unused."""
    drop = set(indices)
    body = op.regions[0].block
    terminator = body.last_op
    assert terminator is not None
    count = len(op.results)
    rewriter.set_operands(
        terminator, [terminator.operands[k] for k in range(count) if k not in drop]
    )
    for k in sorted(drop, reverse=True):
        body.erase_arg(body.args[k + 1])
        rewriter.erase_result(op, k)
    kept_inits = [op.operands[3 + k] for k in range(count) if k not in drop]
    rewriter.set_operands(op, [*op.operands[:3], *kept_inits])


def erase_if_results(op: Operation, indices: Iterable[int], rewriter: Rewriter) -> None:
    """Drop unused results `indices` of `scf.if` `op` and the values its regions yield for them."""
    drop = set(indices)
    count = len(op.results)
    for region in op.regions:
        if region.blocks:
            terminator = region.block.last_op
            assert terminator is not None
            kept = [terminator.operands[k] for k in range(count) if k not in drop]
            rewriter.set_operands(terminator, kept)
    for k in sorted(drop, reverse=True):
        rewriter.erase_result(op, k)


def erase_while_results(op: Operation, indices: Iterable[int], rewriter: Rewriter) -> None:
    """Drop results `indices` of `scf.while` `op`: each result and the after-region argument
    that receives the same forwarded value must be unused."""
    drop = set(indices)
    count = len(op.results)
    condition = op.regions[0].block.last_op
    after = op.regions[1].block
    assert condition is not None
    forwarded = condition.operands[1:]
    kept = [forwarded[k] for k in range(count) if k not in drop]
    rewriter.set_operands(condition, [condition.operands[0], *kept])
    for k in sorted(drop, reverse=True):
        after.erase_arg(after.args[k])
        rewriter.erase_result(op, k)
