"""What `pipeline-loops` needs to pipeline a fused loop nest (`tilec.passes.fuse_nested_loops`):
its loads' addresses come from a prologue under `scf.if`, and its dot's result goes to an
epilogue under `scf.if`.

- An `scf.if` whose nested ops are all pure (no loads, stores or other effects) computes
  addresses like any pure op: `pipeline-loops` clones it for the iteration it issues copies
  for (`pure`, with the values its regions read from the loop body: `operands`), as Triton's
  pipeliner schedules the fused loop's prologue into the loads' stage.
- An asynchronous dot whose result goes on to the next iteration through an `scf.if` (the
  epilogue: its then-region reads the result, stores the tile and yields the accumulator's
  reset; its else-region yields the result) stays in flight across iterations as one whose
  result is yielded directly (`carried_index`); the then-region first waits for it
  (`wait_in_branches`: the dot's `wait_class`, `pendings = 0`), as Triton's WGMMAPipeline puts
  a `warp_group_dot_wait` in the fused loop's epilogue.
"""

from __future__ import annotations

from tilec.dialects.scf import IfOp, YieldOp
from tilec.ir.attributes import IntegerAttr
from tilec.ir.core import Block, Operation, Value
from tilec.ir.traits import Pure
from tilec.ir.types import i32

FUSED_ATTR = "fused_nest"
"""The mark `fuse-nested-loops` leaves on the loops it builds: only there does `pipeline-loops`
take an `scf.if` into an address slice or a dot's epilogue (loops of no flattened nest are
pipelined as before)."""


def pure(op: Operation) -> bool:
    """Whether `op` is pure and region-free, or, in a fused loop (`FUSED_ATTR`), an `scf.if`
    of such ops (nested ifs too)."""
    if not op.regions:
        return op.has_trait(Pure)
    return _in_fused_loop(op) and _pure_if(op)


def _pure_if(op: Operation) -> bool:
    if not op.regions:
        return op.has_trait(Pure)
    if not isinstance(op, IfOp):
        return False
    return all(_pure_if(inner) for region in op.regions for b in region.blocks for inner in b.ops)


def _in_fused_loop(op: Operation) -> bool:
    loop = op.parent_op
    return loop is not None and FUSED_ATTR in loop.attributes


def operands(op: Operation) -> list[Value]:
    """`op`'s operands and the values its regions' ops read from outside `op`."""
    found = list(op.operands)
    for inner in op.walk():
        if inner is op:
            continue
        for value in inner.operands:
            owner = getattr(value, "op", None) or value.owner.parent_op  # type: ignore[attr-defined]
            if owner is None or not op.is_ancestor_of(owner):
                found.append(value)
    return found


def carried_index(dot: Operation, terminator: Operation) -> int | None:
    """The position at which `terminator` (the loop's yield) carries `dot`'s result on: the
    result itself, or an epilogue `scf.if` of the body (module doc) that yields it from its
    else-region; None otherwise."""
    uses = list(dot.result.uses)
    if len(uses) == 1 and uses[0][0] is terminator:
        return uses[0][1]
    branch = _epilogue(dot)
    if branch is None:
        return None
    position = branch[1]
    carried = [(u, i) for u, i in branch[0].results[position].uses]
    if len(carried) != 1 or carried[0][0] is not terminator:
        return None
    return carried[0][1]


def _epilogue(dot: Operation) -> tuple[IfOp, int] | None:
    """The `scf.if` after `dot` in its block whose regions hold every use of `dot`'s result,
    the else-region yielding it at one position, and that position."""
    block: Block = dot.parent  # type: ignore[assignment]
    if not _in_fused_loop(dot):
        return None
    users = {u for u, _ in dot.result.uses}
    tops = {top_op(u, block) for u in users}
    if len(tops) != 1:
        return None
    branch = tops.pop()
    if not isinstance(branch, IfOp) or len(branch.regions[1].blocks) != 1:
        return None
    otherwise = branch.regions[1].block
    if any(u.parent is otherwise and not isinstance(u, YieldOp) for u in users):
        return None
    positions = [i for u, i in dot.result.uses if u is otherwise.last_op]
    if len(positions) != 1:
        return None
    return branch, positions[0]


def updates_left(updates: tuple[Operation, ...], cloned: tuple[Operation, ...]) -> list[Operation]:
    """The update ops `pipeline-loops` still clones after an iteration's issue cloned the
    address ops `cloned`: all but an `scf.if` among those (the prologue's: its clone's results,
    in the issue's mapping, serve the updates too; pure region-free ops cloned twice are
    merged by LLVM, an `scf.if` is not)."""
    return [op for op in updates if not (op.regions and op in cloned)]


def top_op(op: Operation, block: Block) -> Operation | None:
    """The op of `block` that is or holds `op`, or None."""
    at: Operation | None = op
    while at is not None and at.parent is not block:
        at = at.parent_op
    return at


def wait_in_branches(dot: Operation) -> None:
    """Where `dot`'s result goes on through an epilogue `scf.if` (`carried_index`), a wait for
    it (`pendings = 0`) first in the then-region, whose uses read the wait's registers."""
    branch = _epilogue(dot)
    if branch is None:
        return
    then = branch[0].regions[0].block
    result = dot.result
    wait = dot.wait_class(  # type: ignore[attr-defined]
        operands=[result], result_types=[result.type], attributes={"pendings": IntegerAttr(0, i32)}
    )
    if then.first_op is None:
        then.append(wait)
    else:
        then.insert_before(wait, then.first_op)
    for user, index in list(result.uses):
        if user is not wait and _within(user, then):
            user.set_operand(index, wait.results[0])


def _within(op: Operation, block: Block) -> bool:
    at: Operation | None = op
    while at is not None:
        if at.parent is block:
            return True
        at = at.parent_op
    return False


def address_anchor(loop: Operation, dots: list[Operation]) -> Operation | None:
    """Where a fused loop (`FUSED_ATTR`) whose asynchronous `dots` stay in flight computes the
    addresses and masks of the copies it issues (the prologue's `scf.if` cloned for that
    iteration, the pointer math): before its first dot, so that only the copies follow the
    barrier before them (`issue_anchor`), as in Triton's fused loop, whose pointer math ptxas
    schedules among the wgmmas. After the barrier, the math (a 64-bit multiply-add a copy,
    behind the `scf.if`'s branch) delayed each copy and shortened the time its tile has to
    land, where the unfused nest's pointer increments and Triton's copies issue back to back.
    None elsewhere: other loops keep their address ops after the barrier."""
    if FUSED_ATTR not in loop.attributes or not dots:
        return None
    order = loop.regions[0].block.index_map()
    return min(dots, key=order.__getitem__)


def defer_prologue(loop: Operation, dots: list[Operation]) -> None:
    """In a fused loop (`FUSED_ATTR`) whose asynchronous `dots` stay in flight, move each pure
    `scf.if` of the body that nothing before the last dot reads (the prologue of the current
    iteration, once the copies read its clone: at a tile's first iteration it computes what the
    epilogue stores to, two integer divisions and more) to right before its first reader, so
    that the tile's first wgmmas are issued before it runs, as Triton's fused loop, whose
    epilogue reads values its prologue computed iterations earlier, issues them."""
    if FUSED_ATTR not in loop.attributes or not dots:
        return
    block: Block = loop.regions[0].block  # type: ignore[assignment]
    order = block.index_map()
    last = max(order[dot] for dot in dots)
    for op in list(block.ops):
        if not isinstance(op, IfOp) or order[op] > last or not _pure_if(op):
            continue
        readers = [top_op(user, block) for r in op.results for user in r.users]
        if not readers or any(order[r] <= last for r in readers):  # type: ignore[index]
            continue
        first = min(readers, key=order.__getitem__)  # type: ignore[arg-type]
        op.detach()
        block.insert_before(op, first)  # type: ignore[arg-type]


def issue_anchor(block: Block, dots: list[Operation]) -> Operation:
    """Where a loop whose asynchronous `dots` stay in flight issues the copies of a later
    iteration: before the yield, or before the epilogue `scf.if` a dot's result goes through
    (module doc), as Triton's fused loops issue them: at a tile's last iteration the copies
    then do not wait for the epilogue's wait, conversion and stores (they overwrite the slot
    the previous iteration's dots read, which the dots' wait and the barrier before the copies
    have retired; the epilogue's scratch lies above the rings)."""
    branches = [branch[0] for dot in dots if (branch := _epilogue(dot)) is not None]
    if not branches:
        return block.last_op  # type: ignore[return-value]
    order = block.index_map()
    return min(branches, key=order.__getitem__)


__all__ = [
    "address_anchor",
    "carried_index",
    "defer_prologue",
    "issue_anchor",
    "operands",
    "pure",
    "top_op",
    "updates_left",
    "wait_in_branches",
]
