"""dce: unused pure ops and loads go, effects stay, and unused results of scf ops are dropped."""

from __future__ import annotations

import textwrap

from pass_runner import run_pass

import tilec.dialects  # noqa: F401  (registers the ops the parser needs)
from tilec.passes.dead_code_elimination import DeadCodeElimination


def dce(text: str) -> tuple[str, bool]:
    return run_pass(DeadCodeElimination, text)


def test_unused_pure_chains_and_loads_go_but_effects_stay():
    out, changed = dce(
        """
        func.func @f(%x: i32, %p: !tile.ptr<i32>) {
          %l = tile.load %p : i32
          %a = arith.addi %l, %x : i32
          %b = arith.muli %a, %a : i32
          %v = tile.load %p {volatile = unit} : i32
          %old = tile.atomic_rmw %p, %x {kind = "add", sem = "relaxed", scope = "gpu"} : i32
          tile.store %p, %x
          tile.print %x {prefix = "x: "}
          tile.return
        }
        """
    )
    assert changed
    assert out == textwrap.dedent(
        """\
        func.func @f(%x: i32, %p: !tile.ptr<i32>) {
          %v = tile.load %p {volatile = unit} : i32
          %old = tile.atomic_rmw %p, %x {kind = "add", sem = "relaxed", scope = "gpu"} : i32
          tile.store %p, %x
          tile.print %x {prefix = "x: "}
          tile.return
        }
        """
    )


def test_loops_without_effects_go_and_loops_with_stores_stay():
    out, _ = dce(
        """
        func.func @f(%x: i32, %p: !tile.ptr<i32>, %lb: i32, %ub: i32) {
          %one = arith.constant {value = 1 : i32} : i32
          %reads = scf.for %lb, %ub, %one, %x : i32 {
          ^bb0(%i: i32, %acc: i32):
            %l = tile.load %p : i32
            %n = arith.addi %acc, %l : i32
            scf.yield %n
          }
          scf.for %lb, %ub, %one {
          ^bb0(%j: i32):
            tile.store %p, %j
            scf.yield
          }
          tile.return
        }
        """
    )
    assert out == textwrap.dedent(
        """\
        func.func @f(%x: i32, %p: !tile.ptr<i32>, %lb: i32, %ub: i32) {
          %one = arith.constant {value = 1 : i32} : i32
          scf.for %lb, %ub, %one {
          ^bb0(%j: i32):
            tile.store %p, %j
            scf.yield
          }
          tile.return
        }
        """
    )


def test_unused_if_results_are_dropped():
    out, _ = dce(
        """
        func.func @f(%x: i32, %c: i1, %p: !tile.ptr<i32>) -> i32 {
          %unused, %used = scf.if %c : i32, i32 {
            %m = arith.muli %x, %x : i32
            tile.store %p, %x
            scf.yield %m, %x
          } {
            scf.yield %x, %x
          }
          tile.return %used
        }
        """
    )
    assert out == textwrap.dedent(
        """\
        func.func @f(%x: i32, %c: i1, %p: !tile.ptr<i32>) -> i32 {
          %used = scf.if %c : i32 {
            tile.store %p, %x
            scf.yield %x
          } {
            scf.yield %x
          }
          tile.return %used
        }
        """
    )


def test_unused_loop_carried_accumulators_are_dropped():
    out, _ = dce(
        """
        func.func @f(%x: i32, %lb: i32, %ub: i32) -> i32 {
          %one = arith.constant {value = 1 : i32} : i32
          %dead, %kept, %unused_arg = scf.for %lb, %ub, %one, %x, %x, %x : i32, i32, i32 {
          ^bb0(%i: i32, %acc: i32, %k: i32, %u: i32):
            %a1 = arith.addi %acc, %i : i32
            %a2 = arith.muli %a1, %a1 : i32
            %k1 = arith.addi %k, %i : i32
            scf.yield %a2, %k1, %u
          }
          tile.return %kept
        }
        """
    )
    assert out == textwrap.dedent(
        """\
        func.func @f(%x: i32, %lb: i32, %ub: i32) -> i32 {
          %one = arith.constant {value = 1 : i32} : i32
          %kept = scf.for %lb, %ub, %one, %x : i32 {
          ^bb0(%i: i32, %k: i32):
            %k1 = arith.addi %k, %i : i32
            scf.yield %k1
          }
          tile.return %kept
        }
        """
    )


def test_loop_carried_values_that_feed_another_one_stay():
    text = """\
        func.func @f(%x: i32, %lb: i32, %ub: i32) -> i32 {
          %one = arith.constant {value = 1 : i32} : i32
          %a, %b = scf.for %lb, %ub, %one, %x, %x : i32, i32 {
          ^bb0(%i: i32, %s: i32, %t: i32):
            %n = arith.addi %t, %s : i32
            scf.yield %i, %n
          }
          tile.return %b
        }
        """
    out, changed = dce(text)
    assert not changed
    assert out == textwrap.dedent(text)


def test_unused_while_results_with_unused_after_arguments_are_dropped():
    out, _ = dce(
        """
        func.func @f(%x: i32, %n: i32) -> i32 {
          %one = arith.constant {value = 1 : i32} : i32
          %r, %s = scf.while %x : i32, i32 {
          ^bb0(%a: i32):
            %c = arith.cmpi %a, %n {predicate = "slt"} : i1
            %sq = arith.muli %a, %a : i32
            scf.condition %c, %a, %sq
          } {
          ^bb0(%b: i32, %unused: i32):
            %next = arith.addi %b, %one : i32
            scf.yield %next
          }
          tile.return %r
        }
        """
    )
    assert out == textwrap.dedent(
        """\
        func.func @f(%x: i32, %n: i32) -> i32 {
          %one = arith.constant {value = 1 : i32} : i32
          %r = scf.while %x : i32 {
          ^bb0(%a: i32):
            %c = arith.cmpi %a, %n {predicate = "slt"} : i1
            scf.condition %c, %a
          } {
          ^bb0(%b: i32):
            %next = arith.addi %b, %one : i32
            scf.yield %next
          }
          tile.return %r
        }
        """
    )
