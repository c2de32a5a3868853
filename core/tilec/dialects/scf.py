"""`scf.*`: structured control flow (for, while, if) whose regions end in yields.

Loop-carried values are explicit: `scf.for` takes initial values, passes them to its body as block
arguments after the induction variable, and the body's `scf.yield` gives the next iteration's
values; the loop's results are the last yielded values.
"""

from __future__ import annotations

from collections.abc import Sequence

from tilec.dialects import scf_patterns
from tilec.ir.core import (
    Block,
    Operation,
    Region,
    Value,
    VerifyError,
    operand_def,
    region_def,
    register_op,
    result_def,
)
from tilec.ir.traits import BOOL_SCALAR, INT_SCALAR, HasParent, IsTerminator, Pure, RecursivelyPure
from tilec.ir.types import Type


def _types(values: Sequence[Value]) -> str:
    return "(" + ", ".join(str(v.type) for v in values) + ")"


def _check_yield(op: Operation, region: Region, expected: list[Type], what: str) -> None:
    terminator = region.block.last_op
    if not isinstance(terminator, YieldOp):
        raise VerifyError(f"{what} must end with '{YieldOp.name}'", op)
    got = [v.type for v in terminator.operands]
    if got != expected:
        raise VerifyError(
            f"{what} yields {_types(terminator.operands)} but {'(' + ', '.join(map(str, expected)) + ')'} "
            "is expected",
            op,
        )


@register_op
class ForOp(Operation):
    """`%r = scf.for %lb, %ub, %step, %init : f32 { ^bb0(%i: i32, %acc: f32): ... scf.yield %n }`.

    Iterates `i = lb; i < ub; i += step` (signed comparison); `step` must be positive.
    """

    name = "scf.for"
    lower_bound = operand_def(INT_SCALAR)
    upper_bound = operand_def(INT_SCALAR)
    step = operand_def(INT_SCALAR)
    init_args = operand_def(variadic=True)
    results_ = result_def(variadic=True)
    body = region_def()
    traits = (RecursivelyPure(),)

    def __init__(self, lower: Value, upper: Value, step: Value, inits: Sequence[Value] = ()):
        block = Block([lower.type, *(v.type for v in inits)])
        super().__init__(
            operands=[lower, upper, step, *inits],
            result_types=[v.type for v in inits],
            regions=[Region([block])],
        )

    @property
    def induction_variable(self) -> Value:
        return self.regions[0].block.args[0]

    @property
    def iter_args(self) -> list[Value]:
        return list(self.regions[0].block.args[1:])

    def verify_(self) -> None:
        lb, ub, st = self.lower_bound, self.upper_bound, self.step
        if not lb.type == ub.type == st.type:
            raise VerifyError(
                f"bounds and step must have one type, got {lb.type}, {ub.type}, {st.type}", self
            )
        inits = list(self.init_args)
        if [r.type for r in self.results] != [v.type for v in inits]:
            raise VerifyError(
                f"results {_types(self.results)} must match the initial values {_types(inits)}",
                self,
            )
        block = self.regions[0].block
        expected_args = [lb.type, *(v.type for v in inits)]
        if [a.type for a in block.args] != expected_args:
            raise VerifyError(
                f"body arguments {_types(block.args)} must be the induction variable and the "
                f"loop-carried values ({', '.join(map(str, expected_args))})",
                self,
            )
        _check_yield(self, self.regions[0], [v.type for v in inits], "body")

    @classmethod
    def canonicalization_patterns(cls) -> list:
        return [scf_patterns.FoldConstantTripFor(), scf_patterns.SimplifyForIterArgs()]


@register_op
class IfOp(Operation):
    """`%r = scf.if %c : f32 { ... scf.yield %a } { ... scf.yield %b }`; the else region may be
    omitted when the op has no results."""

    name = "scf.if"
    condition = operand_def(BOOL_SCALAR)
    results_ = result_def(variadic=True)
    then_region = region_def()
    else_region = region_def(optional=True)
    traits = (RecursivelyPure(),)

    def __init__(self, condition: Value, result_types: Sequence[Type] = (), with_else: bool = True):
        regions = [Region([Block()]), Region([Block()] if with_else or result_types else [])]
        super().__init__(operands=[condition], result_types=result_types, regions=regions)

    def verify_(self) -> None:
        expected = [r.type for r in self.results]
        _check_yield(self, self.regions[0], expected, "then region")
        if self.regions[1].blocks:
            _check_yield(self, self.regions[1], expected, "else region")
        elif expected:
            raise VerifyError("must have an else region because it has results", self)

    @classmethod
    def canonicalization_patterns(cls) -> list:
        return [scf_patterns.InlineConstantIf()]


@register_op
class WhileOp(Operation):
    """`%r = scf.while %init : T { ^bb0(%a: T): ... scf.condition %c, %x } { ^bb0(%x: T): ...
    scf.yield %next }`: the before region decides whether to go on and forwards values to the
    after region (or, on exit, to the results); the after region yields the next iteration's."""

    name = "scf.while"
    init_args = operand_def(variadic=True)
    results_ = result_def(variadic=True)
    before = region_def()
    after = region_def()
    traits = (RecursivelyPure(),)

    def verify_(self) -> None:
        init_types = [v.type for v in self.init_args]
        before, after = self.regions[0].block, self.regions[1].block
        if [a.type for a in before.args] != init_types:
            raise VerifyError(
                f"before-region arguments {_types(before.args)} must match the initial values "
                f"{_types(self.init_args)}",
                self,
            )
        condition = before.last_op
        if not isinstance(condition, ConditionOp):
            raise VerifyError(f"before region must end with '{ConditionOp.name}'", self)
        forwarded = [v.type for v in condition.operands[1:]]
        if forwarded != [r.type for r in self.results]:
            raise VerifyError(
                f"'scf.condition' forwards {_types(condition.operands[1:])} but the results are "
                f"{_types(self.results)}",
                self,
            )
        if [a.type for a in after.args] != forwarded:
            raise VerifyError(
                f"after-region arguments {_types(after.args)} must match the forwarded values "
                f"{_types(condition.operands[1:])}",
                self,
            )
        _check_yield(self, self.regions[1], init_types, "after region")


@register_op
class YieldOp(Operation):
    """Ends an `scf` region, giving its values to the parent op."""

    name = "scf.yield"
    values = operand_def(variadic=True)
    traits = (IsTerminator(), Pure(), HasParent(ForOp, IfOp, WhileOp))


@register_op
class ConditionOp(Operation):
    """Ends the before region of `scf.while`: continue if `%c`, forwarding the other values."""

    name = "scf.condition"
    condition = operand_def(BOOL_SCALAR)
    args = operand_def(variadic=True)
    traits = (IsTerminator(), Pure(), HasParent(WhileOp))


def in_loop(op: Operation) -> bool:
    """Whether `op` is inside an `scf.for` or `scf.while` (at any depth): code an earlier
    iteration may have run."""
    parent = op.parent_op
    while parent is not None:
        if isinstance(parent, ForOp | WhileOp):
            return True
        parent = parent.parent_op
    return False
