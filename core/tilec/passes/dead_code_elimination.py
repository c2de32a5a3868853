"""`dce`: erase ops whose results are unused and that have no effect, to a fixed point.

An op may go when none of its results is used and it is
- `Pure`,
- `ReadOnly` and not `volatile` (an unused `tile.load`), or
- `RecursivelyPure` control flow (`scf.for`, `scf.if`, `scf.while`) all of whose nested ops may go.

Blocks are walked bottom-up, nested regions before their op, so a chain of dead ops goes in one
sweep; sweeps repeat until one erases nothing.

Unused results of control flow are dropped where that is legal:
- `scf.if`: any unused result (and the values both branches yield for it);
- `scf.while`: a result whose after-region argument is unused too;
- `scf.for`: a loop-carried value whose result is unused and whose block argument feeds only
  effect-free ops of the body whose results feed only each other or the yield at the same position
  (an accumulator nobody reads).

Stores, atomics, calls, prints, asserts and barriers always stay.
"""

from __future__ import annotations

from tilec.dialects.scf import ForOp, IfOp, WhileOp
from tilec.dialects.scf_patterns import erase_for_iter_args, erase_if_results, erase_while_results
from tilec.ir.core import Block, Operation, Value
from tilec.ir.rewriting import Rewriter
from tilec.ir.traits import IsTerminator, Pure, ReadOnly, RecursivelyPure
from tilec.passes.base import ALL_ANALYSES, ModulePass, PassContext


class DeadCodeElimination(ModulePass):
    """Erase unused effect-free ops and unused results of structured control flow."""

    name = "dce"
    stage = "tir"
    description = "erase unused pure ops and loads, and unused results of scf ops"
    after = ("canonicalize", "cse")
    invalidates = ALL_ANALYSES

    def run(self, module: Operation, context: PassContext) -> bool:
        changed = False
        while True:
            rewriter = Rewriter()
            for region in module.regions:
                for block in region.blocks:
                    _sweep_block(block, rewriter)
            if not rewriter.changed:
                return changed
            changed = True


def has_no_effects(op: Operation) -> bool:
    """True if erasing `op` (when its results are unused) cannot change what the program does."""
    if op.has_trait(Pure):
        return True
    if op.has_trait(ReadOnly):
        return "volatile" not in op.attributes
    if op.has_trait(RecursivelyPure):
        return all(
            has_no_effects(inner)
            for region in op.regions
            for block in region.blocks
            for inner in block.ops
        )
    return False


def is_dead(op: Operation) -> bool:
    if op.has_trait(IsTerminator) or any(result.has_uses() for result in op.results):
        return False
    return has_no_effects(op)


def _sweep_block(block: Block, rewriter: Rewriter) -> None:
    op = block.last_op
    while op is not None:
        previous = op.prev_op
        for region in op.regions:
            for inner in region.blocks:
                _sweep_block(inner, rewriter)
        if is_dead(op):
            rewriter.erase_op(op)
        else:
            _drop_unused_results(op, rewriter)
        op = previous


def _drop_unused_results(op: Operation, rewriter: Rewriter) -> None:
    if isinstance(op, IfOp):
        unused = [r.index for r in op.results if not r.has_uses()]
        if unused:
            erase_if_results(op, unused, rewriter)
    elif isinstance(op, WhileOp):
        after = op.after.block
        unused = [
            r.index for r in op.results if not r.has_uses() and not after.args[r.index].has_uses()
        ]
        if unused:
            erase_while_results(op, unused, rewriter)
    elif isinstance(op, ForOp):
        while (index := _dead_iter_arg(op)) is not None:
            _erase_dead_iter_arg(op, index, rewriter)


def _dead_iter_arg(op: ForOp) -> int | None:
    """The first loop-carried value of `scf.for` `op` that nothing outside its own cycle uses."""
    for result in op.results:
        if not result.has_uses() and iter_arg_slice(op, result.index) is not None:
            return result.index
    return None


def iter_arg_slice(op: ForOp, index: int) -> list[Operation] | None:
    """The body ops computing only the next value of loop-carried value `index` (in body order),
    or None if the argument's value reaches anything else."""
    body = op.body.block
    terminator = body.last_op
    found: dict[Operation, None] = {}
    pending: list[Value] = [body.args[index + 1]]
    while pending:
        value = pending.pop()
        for user, position in value.uses:
            if user is terminator:
                if position != index:
                    return None
                continue
            if user in found:
                continue
            if user.parent is not body or not has_no_effects(user):
                return None
            found[user] = None
            pending.extend(user.results)
    order = body.index_map()
    return sorted(found, key=order.__getitem__)


def _erase_dead_iter_arg(op: ForOp, index: int, rewriter: Rewriter) -> None:
    body = op.body.block
    terminator = body.last_op
    assert terminator is not None
    slice_ops = iter_arg_slice(op, index)
    assert slice_ops is not None
    terminator.set_operand(index, body.args[index + 1])
    for dead in reversed(slice_ops):
        rewriter.erase_op(dead)
    erase_for_iter_args(op, [index], rewriter)
