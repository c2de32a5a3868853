"""Which `scf.while` loops may wait for another program (a spin lock, a flag, a grid barrier).

A loop waits when whether it goes on depends on memory that programs of the launch write while
it runs: its condition depends, through values computed in the loop, on an atomic in the loop,
or on a load in the loop from an argument's memory that some store or atomic of the module
writes (or from a pointer whose argument cannot be told). Programs that run in lockstep never
leave such a loop when the program they wait for is among them, so a kernel with one runs
program by program (`tilec_interp.scheduler`).

    while tl.atomic_cas(lock, 0, 1) == 1:      # waits: the condition reads memory an atomic writes
        pass
    while i < n:                                # does not: no memory in the condition
        i += tl.load(step_ptr)                  # (the loop body reads memory, the exit does not)
"""

from __future__ import annotations

from tilec.dialects import func, scf, tile
from tilec.ir.core import BlockArgument, Operation, OpResult, Value
from tilec.ir.traits import MemoryRead, MemoryWrite

__all__ = ["waiting_loops"]

# Ops through which a pointer keeps the argument it was computed from.
_POINTER_SOURCES = {
    tile.AddPtrOp: "ptr",
    tile.SplatOp: "source",
    tile.BroadcastOp: "source",
    tile.ExpandDimsOp: "source",
    tile.ReshapeOp: "source",
    tile.TransOp: "source",
}
_UNKNOWN = object()  # the base of a pointer whose argument cannot be told


def waiting_loops(module: Operation) -> frozenset[scf.WhileOp]:
    """The `scf.while` ops of `module` whose exit may wait for another program."""
    loops = [op for op in module.walk() if isinstance(op, scf.WhileOp)]
    if not loops:
        return frozenset()
    written = {_pointer_base(op) for op in module.walk() if type(op).has_trait(MemoryWrite)}
    if not written:
        return frozenset()
    return frozenset(loop for loop in loops if _exit_reads_written_memory(loop, written))


def _pointer_base(op: Operation) -> object:
    """The base of the pointer a memory op accesses (its first operand, by the traits' rule)."""
    return _base(op.operands[0]) if op.operands else _UNKNOWN


def _base(pointer: Value) -> object:
    """The function argument `pointer` was computed from, or `_UNKNOWN`."""
    value = pointer
    while isinstance(value, OpResult):
        field = _POINTER_SOURCES.get(type(value.op))
        if field is None:
            return _UNKNOWN
        value = getattr(value.op, field)
    if isinstance(value, BlockArgument) and isinstance(value.block.parent_op, func.FuncOp):
        return value
    return _UNKNOWN


def _reads_written_memory(op: Operation, written: set) -> bool:
    if not type(op).has_trait(MemoryRead):
        return False
    if type(op).has_trait(MemoryWrite):
        return True  # an atomic: other programs' atomics change what it reads
    base = _pointer_base(op)
    return base in written or base is _UNKNOWN or _UNKNOWN in written


def _exit_reads_written_memory(loop: scf.WhileOp, written: set) -> bool:
    """Whether the loop's condition depends on a value read from written memory in the loop."""
    inside = set(loop.walk())
    inside.discard(loop)
    before, after = loop.before.block, loop.after.block
    condition = before.last_op
    after_yield = after.last_op
    pending: list[Value] = [condition.operands[0]]
    seen: set[Value] = set()
    while pending:
        value = pending.pop()
        if value in seen:
            continue
        seen.add(value)
        if isinstance(value, OpResult):
            op = value.op
            if op not in inside:
                continue  # computed before the loop: the same in every iteration
            if any(_reads_written_memory(o, written) or _calls(o) for o in op.walk()):
                return True
            pending.extend(op.operands)
            pending.extend(v for o in op.walk() for v in o.operands)
        elif value.block is before:
            pending.append(after_yield.operands[value.index])  # carried from the last iteration
        elif value.block is after:
            pending.append(condition.operands[value.index + 1])  # forwarded by the condition
        elif value.block.parent_op in inside:
            pending.extend(value.block.parent_op.operands)  # a nested loop's argument
    return False


def _calls(op: Operation) -> bool:
    """A call: what the callee reads is not followed, so it counts as reading written memory."""
    return isinstance(op, tile.CallOp)
