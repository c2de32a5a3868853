"""Pattern rewriting: `RewritePattern`, a `Rewriter` that records changes, and a greedy driver.

A pattern matches one op and rewrites it through the rewriter, so the driver hears about every
insertion, replacement and erasure and revisits what they may have made foldable or dead::

    class DropDoubleNegation(RewritePattern):
        def match_and_rewrite(self, op, rewriter):
            inner = defining_op(op.operands[0])
            if op.name != "arith.negf" or inner is None or inner.name != "arith.negf":
                return False
            rewriter.replace_op(op, [inner.operands[0]])
            return True

`apply_patterns_greedily` applies patterns (and an optional fold hook) to every op under a root
until nothing changes, and raises `NoConvergenceError` if that takes too long.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Sequence

from tilec.ir.core import Block, Operation, OpResult, Value
from tilec.ir.traits import IsTerminator, is_pure


class RewritePattern:
    """Rewrites one op. Subclasses implement `match_and_rewrite`."""

    def match_and_rewrite(self, op: Operation, rewriter: Rewriter) -> bool:
        """Rewrite `op` through `rewriter` and return True, or return False and change nothing."""
        raise NotImplementedError

    @property
    def label(self) -> str:
        return type(self).__name__


class RewriteListener:
    """Hears about the changes a `Rewriter` makes (the greedy driver keeps its worklist with it)."""

    def op_inserted(self, op: Operation) -> None:
        pass

    def op_modified(self, op: Operation) -> None:
        pass

    def op_erased(self, op: Operation) -> None:
        pass

    def value_replaced(self, old: Value, new: Value) -> None:
        """Called before the uses of `old` are redirected to `new`."""

    def use_dropped(self, value: Value) -> None:
        """Called when an op stops using `value` (its definition may now be dead)."""


class Rewriter:
    """Changes IR and records that something changed (`changed`), telling its listener."""

    def __init__(self, listener: RewriteListener | None = None):
        self.listener = listener or RewriteListener()
        self.changed = False

    def insert_before(self, op: Operation, anchor: Operation) -> Operation:
        assert anchor.parent is not None
        anchor.parent.insert_before(op, anchor)
        return self._inserted(op)

    def insert_after(self, op: Operation, anchor: Operation) -> Operation:
        assert anchor.parent is not None
        anchor.parent.insert_after(op, anchor)
        return self._inserted(op)

    def insert_at_start(self, op: Operation, block: Block) -> Operation:
        first = block.first_op
        if first is None:
            block.append(op)
        else:
            block.insert_before(op, first)
        return self._inserted(op)

    def move_before(self, op: Operation, anchor: Operation) -> None:
        """Move `op` (already in some block) to just before `anchor`."""
        op.detach()
        self.insert_before(op, anchor)

    def move_after(self, op: Operation, anchor: Operation) -> None:
        op.detach()
        self.insert_after(op, anchor)

    def _inserted(self, op: Operation) -> Operation:
        self.changed = True
        self.listener.op_inserted(op)
        return op

    def modified(self, op: Operation) -> None:
        """Report an in-place change of `op` (attributes, operand order)."""
        self.changed = True
        self.listener.op_modified(op)

    def set_operands(self, op: Operation, values: Sequence[Value]) -> None:
        for old in op.operands:
            self.listener.use_dropped(old)
        op.set_operands(values)
        self.modified(op)

    def replace_all_uses_with(self, old: Value, new: Value) -> None:
        if old is new:
            return
        self.listener.value_replaced(old, new)
        if old.has_uses():
            self.changed = True
        old.replace_all_uses_with(new)

    def replace_op(self, op: Operation, new_values: Sequence[Value]) -> None:
        """Replace every result of `op` with the matching value, then erase `op`."""
        if len(new_values) != len(op.results):
            raise ValueError(
                f"'{op.name}' has {len(op.results)} results but {len(new_values)} replacements"
            )
        for result, new in zip(op.results, new_values, strict=True):
            self.replace_all_uses_with(result, new)
        self.erase_op(op)

    def erase_op(self, op: Operation) -> None:
        """Erase `op` and everything nested in it; its results must be unused."""
        if any(result.has_uses() for result in op.results):
            raise ValueError(f"cannot erase '{op.name}': its results are still used")
        for inner in op.walk(post_order=True):
            self.listener.op_erased(inner)
        op.erase()
        self.changed = True

    def erase_result(self, op: Operation, index: int) -> None:
        """Remove the unused result `index` of `op` (the op's own checks must then hold again)."""
        result = op.results[index]
        if result.has_uses():
            raise ValueError(f"cannot erase result #{index} of '{op.name}': it is still used")
        del op.results[index]
        for position, remaining in enumerate(op.results):
            remaining.index = position
        self.modified(op)

    def inline_block_before(
        self, block: Block, anchor: Operation, arg_values: Sequence[Value]
    ) -> list[Value]:
        """Move the ops of `block` before `anchor`, with its arguments replaced by `arg_values`.

        The block's terminator (if any) stays behind and is erased; the values it passed on are
        returned, so the caller can use them to replace the results of the op it is inlining.
        """
        for arg, value in zip(block.args, arg_values, strict=True):
            self.replace_all_uses_with(arg, value)
        terminator = block.last_op
        if terminator is not None and not terminator.has_trait(IsTerminator):
            terminator = None
        for op in list(block.ops):
            if op is not terminator:
                self.move_before(op, anchor)
        if terminator is None:
            return []
        values = list(terminator.operands)
        self.erase_op(terminator)
        return values


def defining_op(value: Value) -> Operation | None:
    """The op that defines `value`, or None for a block argument."""
    return value.op if isinstance(value, OpResult) else None


def is_trivially_dead(op: Operation) -> bool:
    """A side-effect-free op whose results are all unused (terminators are never dead)."""
    if op.has_trait(IsTerminator) or any(r.has_uses() for r in op.results):
        return False
    return is_pure(op)


# The greedy driver -----------------------------------------------------------------------------


class NoConvergenceError(RuntimeError):
    """Greedy rewriting did not reach a fixed point within its bounds."""


FoldHook = Callable[[Operation, Rewriter], bool]
SweepHook = Callable[[Operation, Rewriter], None]


class _Worklist(RewriteListener):
    """A first-in first-out worklist of ops without duplicates that forgets erased ops."""

    def __init__(self) -> None:
        self.queue: deque[Operation] = deque()
        self.queued: set[Operation] = set()
        self.erased: set[Operation] = set()

    def push(self, op: Operation | None) -> None:
        if op is not None and op not in self.queued and op not in self.erased:
            self.queued.add(op)
            self.queue.append(op)

    def pop(self) -> Operation | None:
        while self.queue:
            op = self.queue.popleft()
            self.queued.discard(op)
            if op not in self.erased:
                return op
        return None

    def op_inserted(self, op: Operation) -> None:
        for inner in op.walk():
            self.push(inner)

    def op_modified(self, op: Operation) -> None:
        self.push(op)
        for result in op.results:
            for user in result.users:
                self.push(user)

    def op_erased(self, op: Operation) -> None:
        self.erased.add(op)
        for operand in op.operands:
            self.push(defining_op(operand))

    def value_replaced(self, old: Value, new: Value) -> None:
        for user in old.users:
            self.push(user)
        self.push(defining_op(old))

    def use_dropped(self, value: Value) -> None:
        self.push(defining_op(value))


def apply_patterns_greedily(
    root: Operation,
    patterns: Callable[[Operation], Sequence[RewritePattern]] | Sequence[RewritePattern],
    *,
    fold: FoldHook | None = None,
    before_sweep: SweepHook | None = None,
    max_iterations: int = 10,
    max_rewrites: int | None = None,
) -> bool:
    """Fold, erase dead ops and apply patterns to every op nested in `root` until nothing changes.

    Each sweep calls `before_sweep(root, rewriter)`, then visits every op (parents before children)
    and, as a worklist, every op a change may affect. On each op it tries, in order: erasing it if
    trivially dead, `fold(op, rewriter)`, then the patterns (a list, or a function from op to
    list) until one applies. Sweeps repeat until one changes nothing; at most `max_iterations`
    of them may change something. One sweep applies at most `max_rewrites` changes (default: 20
    per op, at least 10,000). Returns whether anything changed.
    """
    patterns_for = patterns if callable(patterns) else (lambda op, fixed=tuple(patterns): fixed)
    changed_any = False
    for _ in range(max_iterations + 1):
        if not _sweep(root, patterns_for, fold, before_sweep, max_rewrites):
            return changed_any
        changed_any = True
    raise NoConvergenceError(
        f"rewriting '{root.name}' did not converge: it still changed the IR after "
        f"{max_iterations} sweeps; a pattern or fold probably undoes another's change (raise the "
        "limit with max-iterations=N if the IR just needs more sweeps)"
    )


def _sweep(
    root: Operation,
    patterns_for: Callable[[Operation], Sequence[RewritePattern]],
    fold: FoldHook | None,
    before_sweep: SweepHook | None,
    max_rewrites: int | None,
) -> bool:
    worklist = _Worklist()
    rewriter = Rewriter(worklist)
    if before_sweep is not None:
        before_sweep(root, rewriter)
    for op in root.walk():
        if op is not root:
            worklist.push(op)
    budget = max_rewrites if max_rewrites is not None else max(10_000, 20 * len(worklist.queue))
    recent: deque[str] = deque(maxlen=5)
    rewrites = 0
    while (op := worklist.pop()) is not None:
        applied = _visit(op, rewriter, worklist, patterns_for, fold)
        if applied is None:
            continue
        rewrites += 1
        recent.append(f"{applied} on '{op.name}'")
        if rewrites > budget:
            raise NoConvergenceError(
                f"rewriting '{root.name}' applied more than {budget} rewrites in one sweep without "
                f"reaching a fixed point; the last ones: {'; '.join(recent)}"
            )
    return rewriter.changed


def _visit(
    op: Operation,
    rewriter: Rewriter,
    worklist: _Worklist,
    patterns_for: Callable[[Operation], Sequence[RewritePattern]],
    fold: FoldHook | None,
) -> str | None:
    """Rewrite `op` once; return what applied ("dead-op erasure", "fold", a pattern), or None."""
    if is_trivially_dead(op):
        rewriter.erase_op(op)
        return "dead-op erasure"
    if fold is not None and fold(op, rewriter):
        return "fold"
    for pattern in patterns_for(op):
        if pattern.match_and_rewrite(op, rewriter):
            worklist.push(op)
            return pattern.label
    return None
