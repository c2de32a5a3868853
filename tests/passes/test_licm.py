"""licm: invariant pure ops leave loops (chains and nested loops too); loads, effects, ops on the
induction variable or loop-carried values, and divisions that might trap stay."""

from __future__ import annotations

import textwrap

from pass_runner import run_pass

import tilec.dialects  # noqa: F401  (registers the ops the parser needs)
from tilec.passes.loop_invariant_code_motion import LoopInvariantCodeMotion


def licm(text: str) -> tuple[str, bool]:
    return run_pass(LoopInvariantCodeMotion, text)


def test_invariant_chains_are_hoisted_and_dependent_ops_stay():
    out, changed = licm(
        """
        func.func @f(%x: i32, %y: i32, %p: !tile.ptr<i32>, %lb: i32, %ub: i32) -> i32 {
          %one = arith.constant {value = 1 : i32} : i32
          %r = scf.for %lb, %ub, %one, %x : i32 {
          ^bb0(%i: i32, %acc: i32):
            %inv = arith.muli %x, %y : i32
            %inv2 = arith.addi %inv, %one : i32
            %on_iv = arith.addi %i, %inv2 : i32
            %on_acc = arith.addi %acc, %inv2 : i32
            %ld = tile.load %p : i32
            tile.store %p, %inv2
            %s = arith.addi %on_iv, %on_acc : i32
            %t = arith.addi %s, %ld : i32
            scf.yield %t
          }
          tile.return %r
        }
        """
    )
    assert changed
    assert out == textwrap.dedent(
        """\
        func.func @f(%x: i32, %y: i32, %p: !tile.ptr<i32>, %lb: i32, %ub: i32) -> i32 {
          %one = arith.constant {value = 1 : i32} : i32
          %inv = arith.muli %x, %y : i32
          %inv2 = arith.addi %inv, %one : i32
          %r = scf.for %lb, %ub, %one, %x : i32 {
          ^bb0(%i: i32, %acc: i32):
            %on_iv = arith.addi %i, %inv2 : i32
            %on_acc = arith.addi %acc, %inv2 : i32
            %ld = tile.load %p : i32
            tile.store %p, %inv2
            %s = arith.addi %on_iv, %on_acc : i32
            %t = arith.addi %s, %ld : i32
            scf.yield %t
          }
          tile.return %r
        }
        """
    )


def test_divisions_move_only_with_a_safe_constant_divisor():
    out, _ = licm(
        """
        func.func @f(%x: i32, %y: i32, %lb: i32, %ub: i32) -> i32 {
          %one = arith.constant {value = 1 : i32} : i32
          %three = arith.constant {value = 3 : i32} : i32
          %minus_one = arith.constant {value = -1 : i32} : i32
          %r = scf.for %lb, %ub, %one, %x : i32 {
          ^bb0(%i: i32, %acc: i32):
            %by_y = arith.divsi %x, %y : i32
            %by_three = arith.divsi %x, %three : i32
            %by_minus_one = arith.remsi %x, %minus_one : i32
            %unsigned = arith.divui %x, %minus_one : i32
            %a = arith.addi %by_y, %by_three : i32
            %b = arith.addi %a, %by_minus_one : i32
            %c = arith.addi %b, %unsigned : i32
            scf.yield %c
          }
          tile.return %r
        }
        """
    )
    before_loop = out.split("scf.for")[0]
    in_loop = out.split("scf.for")[1]
    assert "%by_three = arith.divsi %x, %three" in before_loop
    assert "%unsigned = arith.divui %x, %minus_one" in before_loop
    assert "%by_y = arith.divsi %x, %y" in in_loop
    assert "%by_minus_one = arith.remsi %x, %minus_one" in in_loop


def test_nested_loops_hoist_through_every_level_they_do_not_depend_on():
    out, _ = licm(
        """
        func.func @f(%x: i32, %lb: i32, %ub: i32) -> i32 {
          %one = arith.constant {value = 1 : i32} : i32
          %r = scf.for %lb, %ub, %one, %x : i32 {
          ^bb0(%i: i32, %acc: i32):
            %inner = scf.for %lb, %ub, %one, %acc : i32 {
            ^bb0(%j: i32, %acc2: i32):
              %everywhere = arith.muli %x, %x : i32
              %outer_only = arith.muli %i, %everywhere : i32
              %inner_only = arith.addi %j, %outer_only : i32
              %n = arith.addi %acc2, %inner_only : i32
              scf.yield %n
            }
            scf.yield %inner
          }
          tile.return %r
        }
        """
    )
    assert out == textwrap.dedent(
        """\
        func.func @f(%x: i32, %lb: i32, %ub: i32) -> i32 {
          %one = arith.constant {value = 1 : i32} : i32
          %everywhere = arith.muli %x, %x : i32
          %r = scf.for %lb, %ub, %one, %x : i32 {
          ^bb0(%i: i32, %acc: i32):
            %outer_only = arith.muli %i, %everywhere : i32
            %inner = scf.for %lb, %ub, %one, %acc : i32 {
            ^bb0(%j: i32, %acc2: i32):
              %inner_only = arith.addi %j, %outer_only : i32
              %n = arith.addi %acc2, %inner_only : i32
              scf.yield %n
            }
            scf.yield %inner
          }
          tile.return %r
        }
        """
    )


def test_reductions_of_invariant_tensors_leave_the_loop():
    out, _ = licm(
        """
        func.func @f(%t: tensor<16xf32>, %v: f32, %lb: i32, %ub: i32) -> f32 {
          %one = arith.constant {value = 1 : i32} : i32
          %r = scf.for %lb, %ub, %one, %v : f32 {
          ^bb0(%i: i32, %acc: f32):
            %sum = tile.reduce %t {axis = 0 : i32} : f32 {
            ^bb0(%a: f32, %b: f32):
              %s = arith.addf %a, %b : f32
              tile.reduce.return %s
            }
            %n = arith.addf %acc, %sum : f32
            scf.yield %n
          }
          tile.return %r
        }
        """
    )
    assert out.index("%sum = tile.reduce") < out.index("%r = scf.for")


def test_while_loops_hoist_from_both_regions():
    out, _ = licm(
        """
        func.func @f(%x: i32, %n: i32) -> i32 {
          %r = scf.while %x : i32 {
          ^bb0(%a: i32):
            %limit = arith.muli %n, %n : i32
            %c = arith.cmpi %a, %limit {predicate = "slt"} : i1
            scf.condition %c, %a
          } {
          ^bb0(%b: i32):
            %step = arith.addi %x, %n : i32
            %next = arith.addi %b, %step : i32
            scf.yield %next
          }
          tile.return %r
        }
        """
    )
    assert out == textwrap.dedent(
        """\
        func.func @f(%x: i32, %n: i32) -> i32 {
          %limit = arith.muli %n, %n : i32
          %step = arith.addi %x, %n : i32
          %r = scf.while %x : i32 {
          ^bb0(%a: i32):
            %c = arith.cmpi %a, %limit {predicate = "slt"} : i1
            scf.condition %c, %a
          } {
          ^bb0(%b: i32):
            %next = arith.addi %b, %step : i32
            scf.yield %next
          }
          tile.return %r
        }
        """
    )


def test_nothing_to_hoist_reports_no_change():
    text = """\
        func.func @f(%p: !tile.ptr<i32>, %lb: i32, %ub: i32) {
          %one = arith.constant {value = 1 : i32} : i32
          scf.for %lb, %ub, %one {
          ^bb0(%i: i32):
            %l = tile.load %p : i32
            %s = arith.addi %l, %i : i32
            tile.store %p, %s
            scf.yield
          }
          tile.return
        }
        """
    out, changed = licm(text)
    assert not changed
    assert out == textwrap.dedent(text)
