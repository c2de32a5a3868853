"""`canonicalize`: fold constants, apply exact simplifications, erase dead pure ops.

Greedy and worklist-driven, to a fixed point (`apply_patterns_greedily`). On each op:

1. A pure op whose results are unused is erased.
2. `op.fold(constants)` gets the `value` attribute of every operand defined by a `ConstantLike` op
   (None for the others). A returned Value replaces the result; a returned Attribute becomes an
   `arith.constant`. Tensor splats fold elementwise like scalars (that is `fold`'s job).
3. The op class's `canonicalization_patterns()`, plus one for every op: a commutative op puts a
   constant operand on the right.

Constants are kept like MLIR's OperationFolder does: one `arith.constant` per value and type in
each function, at the top of the function's body, in order of first appearance. Folded constants
join them (named like `%c4_i32`, `%true`, `%cst`).

Option `max-iterations` (default 10) bounds the sweeps over the module that change something (one
more must then find nothing to change); running out of them, or one sweep applying far more
rewrites than the module has ops, is an error (`NoConvergenceError`) naming the last rewrites.
"""

from __future__ import annotations

from functools import cache

import attrs

from tilec.dialects.arith import ConstantOp
from tilec.ir.attributes import Attribute, DenseAttr, FloatAttr, IntegerAttr
from tilec.ir.core import Block, Operation, Value
from tilec.ir.module import ModuleOp
from tilec.ir.rewriting import (
    RewritePattern,
    Rewriter,
    apply_patterns_greedily,
    defining_op,
    is_trivially_dead,
)
from tilec.ir.traits import Commutative, ConstantLike, IsolatedFromAbove
from tilec.ir.types import Type, i1
from tilec.passes.base import ALL_ANALYSES, ModulePass, PassContext
from tilec.passes.options import pass_option


class Canonicalize(ModulePass):
    """Fold, simplify and erase dead ops until nothing changes."""

    name = "canonicalize"
    stage = "tir"
    description = "fold constants, simplify ops with exact identities, erase dead pure ops"
    after = ("inline",)
    invalidates = ALL_ANALYSES

    @attrs.frozen
    class Options:
        max_iterations: int = pass_option(
            10, "sweeps over the module that may change something", minimum=0
        )

    def run(self, module: Operation, context: PassContext) -> bool:
        folder = ConstantFolder()
        return apply_patterns_greedily(
            module,
            lambda op: patterns_for(type(op)),
            fold=folder.fold,
            before_sweep=folder.gather_constants,
            max_iterations=self.options.max_iterations,
        )


class ConstantsToTheRight(RewritePattern):
    """`addi %c, %x` -> `addi %x, %c` for commutative ops, so later folds see one form."""

    def match_and_rewrite(self, op: Operation, rewriter: Rewriter) -> bool:
        if not op.has_trait(Commutative) or len(op.operands) != 2:
            return False
        lhs, rhs = op.operands
        if constant_value(lhs) is None or constant_value(rhs) is not None:
            return False
        rewriter.set_operands(op, [rhs, lhs])
        return True


GENERIC_PATTERNS: tuple[RewritePattern, ...] = (ConstantsToTheRight(),)


@cache
def patterns_for(op_class: type[Operation]) -> tuple[RewritePattern, ...]:
    """The patterns canonicalize tries on ops of `op_class`."""
    return (*op_class.canonicalization_patterns(), *GENERIC_PATTERNS)


def constant_value(value: Value) -> Attribute | None:
    """The `value` attribute of the `ConstantLike` op defining `value`, or None."""
    op = defining_op(value)
    if op is None or not op.has_trait(ConstantLike):
        return None
    return op.attributes.get("value")


def _is_constant(op: Operation) -> bool:
    return (
        op.has_trait(ConstantLike) and not op.operands and not op.regions and len(op.results) == 1
    )


def _constant_block(op: Operation) -> Block | None:
    """The entry block of the function (nearest isolated-from-above op) that holds `op`."""
    parent = op.parent_op
    while parent is not None and not parent.has_trait(IsolatedFromAbove):
        parent = parent.parent_op
    if parent is None or isinstance(parent, ModuleOp) or not parent.regions:
        return None
    return parent.regions[0].blocks[0] if parent.regions[0].blocks else None


def _can_materialize(attr: Attribute, type_: Type) -> bool:
    return isinstance(attr, (IntegerAttr, FloatAttr, DenseAttr)) and attr.type == type_


def _constant_name(attr: Attribute) -> str:
    if isinstance(attr, IntegerAttr):
        if attr.type == i1:
            return "true" if attr.value else "false"
        return f"c{attr.value}_{attr.type}".replace("-", "n")
    return "cst"


class ConstantFolder:
    """Folds ops and keeps each function's constants unique and at the top of its body."""

    def __init__(self) -> None:
        self.tables: dict[Block, dict[tuple[Attribute, Type], Operation]] = {}

    def gather_constants(self, root: Operation, rewriter: Rewriter) -> None:
        """Move every constant to the top of its function, merging equal ones."""
        self.tables = {}
        last: dict[Block, Operation] = {}
        for op in [op for op in root.walk() if _is_constant(op)]:
            block = _constant_block(op)
            if block is None:
                continue
            table = self.tables.setdefault(block, {})
            key = (op.attributes["value"], op.results[0].type)
            kept = table.get(key)
            if kept is not None:
                rewriter.replace_op(op, kept.results)
                continue
            table[key] = op
            anchor = last.get(block)
            if op is not (block.first_op if anchor is None else anchor.next_op):
                op.detach()
                if anchor is None:
                    rewriter.insert_at_start(op, block)
                else:
                    rewriter.insert_after(op, anchor)
            last[block] = op

    def fold(self, op: Operation, rewriter: Rewriter) -> bool:
        """Fold `op` if its `fold` gives values or constants for its results."""
        if op.has_trait(ConstantLike) or not any(r.has_uses() for r in op.results):
            return False
        folded = op.fold([constant_value(v) for v in op.operands])
        if not folded:
            return False
        if len(folded) != len(op.results):
            raise ValueError(
                f"'{op.name}'.fold returned {len(folded)} values for {len(op.results)} results"
            )
        for result, item in zip(op.results, folded, strict=True):
            if isinstance(item, Attribute) and not _can_materialize(item, result.type):
                return False
        if all(item is result for result, item in zip(op.results, folded, strict=True)):
            return False
        for result, item in zip(op.results, folded, strict=True):
            new = (
                item
                if isinstance(item, Value)
                else self.materialize(item, result.type, op, rewriter)
            )
            rewriter.replace_all_uses_with(result, new)
        if is_trivially_dead(op):
            rewriter.erase_op(op)
        return True

    def materialize(
        self, attr: Attribute, type_: Type, user: Operation, rewriter: Rewriter
    ) -> Value:
        """The result of an `arith.constant` of `attr`: an existing one of the function, or a new
        one at the top of its body (before `user` if it is in no function)."""
        block = _constant_block(user)
        table = self.tables.setdefault(block, {}) if block is not None else {}
        existing = table.get((attr, type_))
        if existing is not None and existing.parent is block:
            return existing.results[0]
        constant = ConstantOp(attr, type_)
        constant.location = user.location
        constant.results[0].name_hint = _constant_name(attr)
        if block is None:
            rewriter.insert_before(constant, user)
            return constant.results[0]
        anchor = None
        for candidate in block.ops:
            if not _is_constant(candidate):
                break
            anchor = candidate
        if anchor is None:
            rewriter.insert_at_start(constant, block)
        else:
            rewriter.insert_after(constant, anchor)
        table[(attr, type_)] = constant
        return constant.results[0]
