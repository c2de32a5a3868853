"""The shrinker: greedily reduces a failing program while `fails(program)` stays true.

Each step tries, in order: one program with a smaller grid or BLOCK; the program without one
statement; an `if` replaced by one of its branches; a loop replaced by one trip of its body; an
expression replaced by an operand of its dtype and shape, or by `tl.full(..., 1, ...)`. A
candidate that uses a variable it no longer defines is skipped. Only replacements that keep the
generator's float bounds and exactness are tried, so shrinking cannot make up a new mismatch.
"""

from __future__ import annotations

import copy
import time
from collections.abc import Callable, Iterator

import attrs

from tilec.fuzz.program import (
    Assign,
    For,
    Full,
    If,
    Load,
    Node,
    Program,
    Store,
    Var,
    walk_statements,
)

BUILTIN_NAMES = frozenset({"pid", "n", "m", "offs", "mask"})


def shrink(
    program: Program,
    fails: Callable[[Program], bool],
    *,
    max_tries: int = 300,
    seconds: float = 120.0,
) -> tuple[Program, int]:
    """The smallest program found that still fails, and the number of candidates tried."""
    deadline = time.monotonic() + seconds
    best, tries = program, 0
    improved = True
    while improved and tries < max_tries and time.monotonic() < deadline:
        improved = False
        for candidate in candidates(best):
            if not is_valid(candidate):
                continue
            tries += 1
            if fails(candidate):
                best, improved = candidate, True
                break
            if tries >= max_tries or time.monotonic() >= deadline:
                break
    return best, tries


def candidates(program: Program) -> Iterator[Program]:
    if program.grid > 1:
        yield attrs.evolve(copy.deepcopy(program), grid=1, n=min(program.n, program.block))
    if program.block > 1:
        smaller = copy.deepcopy(program)
        smaller.block //= 2
        smaller.n = min(smaller.n, smaller.grid * smaller.block)
        yield smaller
    if program.rank == 2 and program.cols > 1:
        narrower = copy.deepcopy(program)
        narrower.cols //= 2
        narrower.m = min(narrower.m, narrower.cols)
        yield narrower
    count = len(list(_sites(program)))
    for index in range(count):
        candidate = copy.deepcopy(program)
        edit = next(e for i, e in enumerate(_sites(candidate)) if i == index)
        edit()
        yield candidate


def _sites(program: Program) -> Iterator[Callable[[], None]]:
    """Edits of `program` in place, in the order they are tried."""
    yield from _statement_sites(program.body)
    for stmt in walk_statements(program.body):
        if isinstance(stmt, Assign | Store):
            yield from _node_sites(stmt.value, lambda new, s=stmt: setattr(s, "value", new))
        elif isinstance(stmt, If):
            yield from _node_sites(stmt.cond, lambda new, s=stmt: setattr(s, "cond", new))


def _statement_sites(body: list) -> Iterator[Callable[[], None]]:
    for index in reversed(range(len(body))):
        stmt = body[index]
        yield lambda i=index: body.pop(i)
        if isinstance(stmt, If):
            yield lambda i=index, s=stmt: body.__setitem__(slice(i, i + 1), s.then)
            yield lambda i=index, s=stmt: body.__setitem__(slice(i, i + 1), s.orelse)
        elif isinstance(stmt, For):
            start = Assign(stmt.var, Full("int32", "scalar", float(stmt.start), True, stmt.start))
            yield lambda i=index, s=stmt, a=start: body.__setitem__(slice(i, i + 1), [a, *s.body])
    for stmt in body:
        if isinstance(stmt, If):
            yield from _statement_sites(stmt.then)
            yield from _statement_sites(stmt.orelse)
        elif isinstance(stmt, For):
            yield from _statement_sites(stmt.body)


def _node_sites(node: Node, put: Callable[[Node], None]) -> Iterator[Callable[[], None]]:
    """Replacements of `node` (through `put`) and, recursively, of the nodes below it."""
    for child in node.children():
        if child.dtype == node.dtype and child.shape == node.shape and _keeps(node, child):
            yield lambda c=child: put(c)
    if not isinstance(node, Full | Var):
        yield lambda: put(Full(node.dtype, node.shape, 1.0, True, 1))
    if isinstance(node, Load) and node.cond is not None:
        yield lambda: setattr(node, "cond", None)
    for field in attrs.fields(type(node)):
        value = getattr(node, field.name)
        if isinstance(value, Node):
            yield from _node_sites(value, lambda new, f=field.name: setattr(node, f, new))


def _keeps(node: Node, child: Node) -> bool:
    return child.bound <= node.bound and (child.exact or not node.exact)


def is_valid(program: Program) -> bool:
    """Whether every variable is defined where it is used (after a shrinking edit)."""
    return _defines(program.body, set(BUILTIN_NAMES)) is not None


def _uses(node: Node) -> set[str]:
    return {sub.name for sub in node.walk() if isinstance(sub, Var)}


def _defines(body: list, defined: set[str]) -> set[str] | None:
    defined = set(defined)
    for stmt in body:
        if isinstance(stmt, Assign | Store):
            if not _uses(stmt.value) <= defined:
                return None
            if isinstance(stmt, Assign):
                defined.add(stmt.name)
        elif isinstance(stmt, If):
            if not _uses(stmt.cond) <= defined:
                return None
            then, orelse = _defines(stmt.then, defined), _defines(stmt.orelse, defined)
            if then is None or orelse is None:
                return None
            defined |= then & orelse
        elif _defines(stmt.body, defined | {stmt.var}) is None:
            return None
    return defined
