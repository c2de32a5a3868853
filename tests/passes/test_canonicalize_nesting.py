"""canonicalize runs in time linear in the nesting depth (issue 14): `is_pure` once recursed
into `walk()` at every level, so 20 nested `scf.if` took 9-26 s."""

from __future__ import annotations

import time

from pass_runner import run_pass

import tilec.dialects  # noqa: F401  (registers the ops the parser needs)
from tilec.dialects.scf import IfOp
from tilec.ir import parse_module
from tilec.ir.traits import is_pure
from tilec.passes.canonicalize import Canonicalize


def nested_ifs(depth: int, innermost: str, returned: str = "%v0") -> str:
    """`depth` nested value-yielding `scf.if` on a runtime condition, `innermost` at the core;
    the function returns `returned` (`%x`: the outer if's result is unused)."""
    lines = ["func.func @f(%c: i1, %x: i32, %p: !tile.ptr<i32>) -> i32 {"]
    for level in range(depth):
        lines.append(f"%v{level} = scf.if %c : i32 {{")
    lines.append(innermost)
    lines.append("%n = arith.addi %x, %x : i32")
    lines.append("scf.yield %n")
    for level in reversed(range(depth)):
        lines.append("} {")
        lines.append("scf.yield %x")
        lines.append("}")
        if level:
            lines.append(f"scf.yield %v{level}")
    lines.append(f"tile.return {returned}")
    lines.append("}")
    return "\n".join(lines)


def canonicalize_timed(text: str) -> str:
    start = time.perf_counter()
    out, _ = run_pass(Canonicalize, text)
    elapsed = time.perf_counter() - start
    assert elapsed < 1.0, f"canonicalize took {elapsed:.2f} s on {text.count('scf.if')} nested ifs"
    return out


def test_22_nested_unused_pure_ifs_canonicalize_in_well_under_a_second():
    """Deep enough to fail (in ~15 s) rather than hang where the time doubles per level."""
    assert "scf.if" not in canonicalize_timed(nested_ifs(22, "", returned="%x"))


def test_200_nested_unused_pure_ifs_canonicalize_in_well_under_a_second():
    """The outer if is unused: canonicalize asks whether it is pure (to erase it); before the
    fix, that question alone took 2^depth steps (0.5 s at depth 16)."""
    out = canonicalize_timed(nested_ifs(200, "", returned="%x"))
    assert "scf.if" not in out


def test_200_nested_impure_ifs_canonicalize_in_well_under_a_second():
    out = canonicalize_timed(nested_ifs(200, "tile.store %p, %x", returned="%x"))
    assert out.count("scf.if") == 200  # the store keeps every if


def test_is_pure_is_linear_and_still_sees_a_deep_side_effect():
    impure = parse_module(nested_ifs(210, "tile.store %p, %x"))
    pure = parse_module(nested_ifs(210, ""))  # before the fix: 2^210 steps
    outer_impure = next(op for op in impure.walk() if isinstance(op, IfOp))
    outer_pure = next(op for op in pure.walk() if isinstance(op, IfOp))
    start = time.perf_counter()
    assert not is_pure(outer_impure)
    assert is_pure(outer_pure)
    assert time.perf_counter() - start < 0.5
