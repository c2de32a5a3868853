"""The values the `scf` terminators ending a region pass on, for the layout dataflow passes.

Verified IR ends every `scf.for` body, `scf.if` branch and `scf.while` after region with an
`scf.yield`, and every `scf.while` before region with an `scf.condition`.
"""

from __future__ import annotations

from tilec.dialects.scf import ConditionOp, YieldOp
from tilec.ir.core import Block, Value


def yielded(block: Block) -> tuple[Value, ...]:
    """The values of the `scf.yield` that ends `block`."""
    terminator = block.last_op
    assert isinstance(terminator, YieldOp), terminator
    return terminator.values


def forwarded(block: Block) -> tuple[Value, ...]:
    """The values the `scf.condition` ending a `scf.while` before region forwards (not its flag)."""
    terminator = block.last_op
    assert isinstance(terminator, ConditionOp), terminator
    return terminator.args
