"""cse: identical pure ops merge (commutative operands in either order), loads and effects never
do, and scopes only let an outer op replace an inner one."""

from __future__ import annotations

import textwrap

from pass_runner import run_pass

import tilec.dialects  # noqa: F401  (registers the ops the parser needs)
from tilec.passes.common_subexpression_elimination import CommonSubexpressionElimination


def cse(text: str) -> tuple[str, bool]:
    return run_pass(CommonSubexpressionElimination, text)


def test_identical_pure_ops_merge_and_commutative_operands_match_in_either_order():
    out, changed = cse(
        """
        func.func @f(%x: i32, %y: i32) -> (i32, i32, i32, i32, i1, i1) {
          %a = arith.addi %x, %y : i32
          %b = arith.addi %y, %x : i32
          %s = arith.subi %x, %y : i32
          %t = arith.subi %y, %x : i32
          %lt = arith.cmpi %x, %y {predicate = "slt"} : i1
          %le = arith.cmpi %x, %y {predicate = "sle"} : i1
          tile.return %a, %b, %s, %t, %lt, %le
        }
        """
    )
    assert changed
    assert out == textwrap.dedent(
        """\
        func.func @f(%x: i32, %y: i32) -> (i32, i32, i32, i32, i1, i1) {
          %a = arith.addi %x, %y : i32
          %s = arith.subi %x, %y : i32
          %t = arith.subi %y, %x : i32
          %lt = arith.cmpi %x, %y {predicate = "slt"} : i1
          %le = arith.cmpi %x, %y {predicate = "sle"} : i1
          tile.return %a, %a, %s, %t, %lt, %le
        }
        """
    )


def test_loads_and_ops_with_effects_are_never_merged():
    text = """\
        func.func @f(%p: !tile.ptr<i32>, %v: i32) -> (i32, i32, i32, i32) {
          %l1 = tile.load %p : i32
          tile.store %p, %v
          %l2 = tile.load %p : i32
          %a1 = tile.atomic_rmw %p, %v {kind = "add", sem = "relaxed", scope = "gpu"} : i32
          %a2 = tile.atomic_rmw %p, %v {kind = "add", sem = "relaxed", scope = "gpu"} : i32
          tile.return %l1, %l2, %a1, %a2
        }
        """
    out, changed = cse(text)
    assert not changed
    assert out == textwrap.dedent(text)


def test_outer_ops_replace_inner_ones_but_not_the_reverse_nor_across_siblings():
    out, _ = cse(
        """
        func.func @f(%x: i32, %y: i32, %c: i1) -> (i32, i32) {
          %outer = arith.addi %x, %y : i32
          %r = scf.if %c : i32 {
            %inner = arith.addi %x, %y : i32
            %then_only = arith.muli %x, %y : i32
            %s = arith.addi %inner, %then_only : i32
            scf.yield %s
          } {
            %else_only = arith.muli %x, %y : i32
            scf.yield %else_only
          }
          %after = arith.muli %x, %y : i32
          %sum = arith.addi %r, %outer : i32
          tile.return %sum, %after
        }
        """
    )
    assert out == textwrap.dedent(
        """\
        func.func @f(%x: i32, %y: i32, %c: i1) -> (i32, i32) {
          %outer = arith.addi %x, %y : i32
          %r = scf.if %c : i32 {
            %then_only = arith.muli %x, %y : i32
            %s = arith.addi %outer, %then_only : i32
            scf.yield %s
          } {
            %else_only = arith.muli %x, %y : i32
            scf.yield %else_only
          }
          %after = arith.muli %x, %y : i32
          %sum = arith.addi %r, %outer : i32
          tile.return %sum, %after
        }
        """
    )


def test_loop_bodies_reuse_values_from_before_the_loop():
    out, _ = cse(
        """
        func.func @f(%x: i32, %lb: i32, %ub: i32) -> i32 {
          %one = arith.constant {value = 1 : i32} : i32
          %sq = arith.muli %x, %x : i32
          %r = scf.for %lb, %ub, %one, %x : i32 {
          ^bb0(%i: i32, %acc: i32):
            %one_again = arith.constant {value = 1 : i32} : i32
            %sq_again = arith.muli %x, %x : i32
            %n = arith.addi %acc, %sq_again : i32
            %m = arith.addi %n, %one_again : i32
            scf.yield %m
          }
          tile.return %r
        }
        """
    )
    assert "%n = arith.addi %acc, %sq : i32" in out
    assert "%m = arith.addi %n, %one : i32" in out
    assert "again" not in out


def test_functions_do_not_share_values():
    text = """\
        func.func @f(%x: i32) -> i32 {
          %c = arith.constant {value = 1 : i32} : i32
          tile.return %c
        }

        func.func @g(%x: i32) -> i32 {
          %c = arith.constant {value = 1 : i32} : i32
          tile.return %c
        }
        """
    out, changed = cse(text)
    assert not changed
    assert out == textwrap.dedent(text)


def test_reductions_merge_only_with_the_same_combiner():
    out, _ = cse(
        """
        func.func @f(%t: tensor<16xf32>) -> (f32, f32, f32) {
          %r1 = tile.reduce %t {axis = 0 : i32} : f32 {
          ^bb0(%a1: f32, %b1: f32):
            %s1 = arith.addf %a1, %b1 : f32
            tile.reduce.return %s1
          }
          %r2 = tile.reduce %t {axis = 0 : i32} : f32 {
          ^bb0(%a2: f32, %b2: f32):
            %s2 = arith.addf %a2, %b2 : f32
            tile.reduce.return %s2
          }
          %r3 = tile.reduce %t {axis = 0 : i32} : f32 {
          ^bb0(%a3: f32, %b3: f32):
            %s3 = arith.mulf %a3, %b3 : f32
            tile.reduce.return %s3
          }
          tile.return %r1, %r2, %r3
        }
        """
    )
    assert "%r2" not in out
    assert "%r3 = tile.reduce" in out
    assert "tile.return %r1, %r1, %r3" in out
