"""canonicalize: constant folding (wrap-around, rounding, NaN), exact identities only, constants
hoisted and merged, scf and tile patterns, dead ops, convergence."""

from __future__ import annotations

import random
import textwrap

import numpy as np
import pytest
from pass_runner import run_pass

import tilec.dialects  # noqa: F401  (registers the ops the parser needs)
from tilec.ir import parse_module
from tilec.ir.attributes import format_float
from tilec.ir.rewriting import NoConvergenceError, RewritePattern, apply_patterns_greedily
from tilec.passes.canonicalize import Canonicalize


def canonicalize(text: str, **options: object) -> tuple[str, bool]:
    return run_pass(Canonicalize, text, **options)


def body(text: str) -> str:
    """The ops of the only function, without the `func.func` line and closing brace."""
    lines = text.strip().splitlines()
    return textwrap.dedent("\n".join(lines[1:-1]))


def test_integer_addition_wraps_at_the_type_width():
    out, changed = canonicalize(
        """
        func.func @f() -> i8 {
          %a = arith.constant {value = 127 : i8} : i8
          %b = arith.constant {value = 1 : i8} : i8
          %s = arith.addi %a, %b : i8
          tile.return %s
        }
        """
    )
    assert changed
    assert body(out) == textwrap.dedent(
        """\
        %cn128_i8 = arith.constant {value = -128 : i8} : i8
        tile.return %cn128_i8"""
    )


@pytest.mark.parametrize(
    ("op", "lhs", "rhs"),
    [("divsi", 7, 0), ("divui", 7, 0), ("remsi", 7, 0), ("remui", 7, 0), ("divsi", -128, -1)],
)
def test_division_by_zero_and_signed_overflow_are_not_folded(op, lhs, rhs):
    out, _ = canonicalize(
        f"""
        func.func @f() -> i8 {{
          %a = arith.constant {{value = {lhs} : i8}} : i8
          %b = arith.constant {{value = {rhs} : i8}} : i8
          %q = arith.{op} %a, %b : i8
          tile.return %q
        }}
        """
    )
    assert f"%q = arith.{op} %a, %b : i8" in out


def test_integer_division_folds_toward_zero():
    out, _ = canonicalize(
        """
        func.func @f() -> i32 {
          %a = arith.constant {value = -7 : i32} : i32
          %b = arith.constant {value = 2 : i32} : i32
          %q = arith.divsi %a, %b : i32
          tile.return %q
        }
        """
    )
    assert "%cn3_i32 = arith.constant {value = -3 : i32} : i32" in out


@pytest.mark.parametrize(
    ("type_", "lhs", "rhs", "expected"),
    [
        # 1 + 3 * 2**-11 lies halfway between two f16 values; ties go to the even one.
        ("f16", "1.0", "0.00146484375", "1.001953125"),
        # 1 + 3 * 2**-8 is halfway between 1 + 2**-7 and 1 + 2**-6 in bf16.
        ("bf16", "1.0", "0.01171875", "1.015625"),
        ("f32", "16777216.0", "3.0", "16777220.0"),
    ],
)
def test_float_addition_rounds_to_the_result_type(type_, lhs, rhs, expected):
    out, _ = canonicalize(
        f"""
        func.func @f() -> {type_} {{
          %a = arith.constant {{value = {lhs} : {type_}}} : {type_}
          %b = arith.constant {{value = {rhs} : {type_}}} : {type_}
          %s = arith.addf %a, %b : {type_}
          tile.return %s
        }}
        """
    )
    assert body(out).splitlines()[-2:] == [
        f"%cst = arith.constant {{value = {expected} : {type_}}} : {type_}",
        "tile.return %cst",
    ]


def test_truncf_from_f64_to_bf16_rounds_once():
    # 1 + 2**-8 + 2**-40: rounding to f32 first would land on the tie 1 + 2**-8 and give 1.0.
    out, _ = canonicalize(
        """
        func.func @f() -> bf16 {
          %a = arith.constant {value = 1.0039062500009095 : f64} : f64
          %t = arith.truncf %a : bf16
          tile.return %t
        }
        """
    )
    assert "%cst = arith.constant {value = 1.0078125 : bf16} : bf16" in out


@pytest.mark.parametrize(
    ("predicate", "expected"),
    [("olt", "false"), ("ult", "true"), ("oeq", "false"), ("une", "true"), ("uno", "true")],
)
def test_float_compare_with_nan_folds_by_ordering(predicate, expected):
    out, _ = canonicalize(
        f"""
        func.func @f() -> i1 {{
          %n = arith.constant {{value = nan : f32}} : f32
          %one = arith.constant {{value = 1.0 : f32}} : f32
          %c = arith.cmpf %n, %one {{predicate = "{predicate}"}} : i1
          tile.return %c
        }}
        """
    )
    assert body(out) == textwrap.dedent(
        f"""\
        %{expected} = arith.constant {{value = {expected}}} : i1
        tile.return %{expected}"""
    )


def test_float_identities_that_are_wrong_for_nan_or_signed_zero_are_not_applied():
    out, _ = canonicalize(
        """
        func.func @f(%x: f32, %i: i32) -> (f32, f32, f32, f32, i32) {
          %z = arith.constant {value = 0.0 : f32} : f32
          %nz = arith.constant {value = -0.0 : f32} : f32
          %self = arith.subf %x, %x : f32
          %plus_zero = arith.addf %x, %z : f32
          %plus_neg_zero = arith.addf %x, %nz : f32
          %neg_zero_plus = arith.addf %nz, %x : f32
          %int_self = arith.subi %i, %i : i32
          tile.return %self, %plus_zero, %plus_neg_zero, %neg_zero_plus, %int_self
        }
        """
    )
    assert body(out) == textwrap.dedent(
        """\
        %z = arith.constant {value = 0.0 : f32} : f32
        %c0_i32 = arith.constant {value = 0 : i32} : i32
        %self = arith.subf %x, %x : f32
        %plus_zero = arith.addf %x, %z : f32
        tile.return %self, %plus_zero, %x, %x, %c0_i32"""
    )


def test_commutative_ops_get_constants_on_the_right():
    out, _ = canonicalize(
        """
        func.func @f(%x: i32, %y: f32) -> (i32, f32, i32) {
          %c = arith.constant {value = 5 : i32} : i32
          %h = arith.constant {value = 0.5 : f32} : f32
          %a = arith.addi %c, %x : i32
          %m = arith.mulf %h, %y : f32
          %s = arith.subi %c, %x : i32
          tile.return %a, %m, %s
        }
        """
    )
    assert "%a = arith.addi %x, %c : i32" in out
    assert "%m = arith.mulf %y, %h : f32" in out
    assert "%s = arith.subi %c, %x : i32" in out


def test_constants_are_merged_and_hoisted_to_the_function_entry():
    out, _ = canonicalize(
        """
        func.func @f(%x: i32, %lb: i32, %ub: i32) -> i32 {
          %a = arith.addi %x, %x : i32
          %one = arith.constant {value = 1 : i32} : i32
          %r = scf.for %lb, %ub, %one, %a : i32 {
          ^bb0(%i: i32, %acc: i32):
            %one_again = arith.constant {value = 1 : i32} : i32
            %n = arith.addi %acc, %one_again : i32
            scf.yield %n
          }
          tile.return %r
        }
        """
    )
    assert body(out) == textwrap.dedent(
        """\
        %one = arith.constant {value = 1 : i32} : i32
        %a = arith.addi %x, %x : i32
        %r = scf.for %lb, %ub, %one, %a : i32 {
        ^bb0(%i: i32, %acc: i32):
          %n = arith.addi %acc, %one : i32
          scf.yield %n
        }
        tile.return %r"""
    )


def test_splat_constants_fold_elementwise():
    out, _ = canonicalize(
        """
        func.func @f() -> (tensor<16xi32>, tensor<16xi1>, tensor<16xi32>) {
          %a = arith.constant {value = dense<3> : tensor<16xi32>} : tensor<16xi32>
          %b = arith.constant {value = dense<4> : tensor<16xi32>} : tensor<16xi32>
          %s = arith.addi %a, %b : tensor<16xi32>
          %lt = arith.cmpi %a, %b {predicate = "slt"} : tensor<16xi1>
          %sel = arith.select %lt, %a, %b : tensor<16xi32>
          tile.return %s, %lt, %sel
        }
        """
    )
    assert body(out) == textwrap.dedent(
        """\
        %a = arith.constant {value = dense<3> : tensor<16xi32>} : tensor<16xi32>
        %cst = arith.constant {value = dense<7> : tensor<16xi32>} : tensor<16xi32>
        %cst_1 = arith.constant {value = dense<true> : tensor<16xi1>} : tensor<16xi1>
        tile.return %cst, %cst_1, %a"""
    )


def test_shape_ops_of_splat_constants_and_to_the_same_type_fold():
    out, _ = canonicalize(
        """
        func.func @f(%t: tensor<4x4xf32>) -> (tensor<4x16xf32>, tensor<4x4xf32>, tensor<4x4xf32>) {
          %two = arith.constant {value = 2.0 : f32} : f32
          %s = tile.splat %two : tensor<16xf32>
          %e = tile.expand_dims %s {axis = 0 : i32} : tensor<1x16xf32>
          %b = tile.broadcast %e : tensor<4x16xf32>
          %same = tile.broadcast %t : tensor<4x4xf32>
          %r = tile.reshape %t : tensor<4x4xf32>
          tile.return %b, %same, %r
        }
        """
    )
    assert body(out) == textwrap.dedent(
        """\
        %cst = arith.constant {value = dense<2.0> : tensor<4x16xf32>} : tensor<4x16xf32>
        tile.return %cst, %t, %t"""
    )


def test_if_with_constant_condition_keeps_the_taken_region():
    out, _ = canonicalize(
        """
        func.func @f(%x: i32, %p: !tile.ptr<i32>) -> (i32, i32) {
          %t = arith.constant {value = true} : i1
          %f = arith.constant {value = false} : i1
          %one = arith.constant {value = 1 : i32} : i32
          %a = scf.if %t : i32 {
            tile.store %p, %x
            %n = arith.muli %x, %x : i32
            scf.yield %n
          } {
            scf.yield %one
          }
          %b = scf.if %f : i32 {
            scf.yield %x
          } {
            scf.yield %one
          }
          scf.if %f {
            tile.store %p, %one
            scf.yield
          }
          tile.return %a, %b
        }
        """
    )
    assert body(out) == textwrap.dedent(
        """\
        %one = arith.constant {value = 1 : i32} : i32
        tile.store %p, %x
        %n = arith.muli %x, %x : i32
        tile.return %n, %one"""
    )


def test_for_with_constant_trip_count_zero_or_one():
    out, _ = canonicalize(
        """
        func.func @f(%v: f32, %ub: i32) -> (f32, f32, f32) {
          %c0 = arith.constant {value = 0 : i32} : i32
          %c4 = arith.constant {value = 4 : i32} : i32
          %c8 = arith.constant {value = 8 : i32} : i32
          %zero_trips = scf.for %c4, %c0, %c4, %v : f32 {
          ^bb0(%i: i32, %a: f32):
            %n = arith.addf %a, %a : f32
            scf.yield %n
          }
          %one_trip = scf.for %c0, %c4, %c8, %v : f32 {
          ^bb0(%j: i32, %b: f32):
            %fj = arith.sitofp %j : f32
            %m = arith.mulf %b, %fj : f32
            scf.yield %m
          }
          %unknown = scf.for %c0, %ub, %c4, %v : f32 {
          ^bb0(%k: i32, %c: f32):
            %o = arith.addf %c, %c : f32
            scf.yield %o
          }
          tile.return %zero_trips, %one_trip, %unknown
        }
        """
    )
    assert body(out) == textwrap.dedent(
        """\
        %c0 = arith.constant {value = 0 : i32} : i32
        %c4 = arith.constant {value = 4 : i32} : i32
        %cst = arith.constant {value = 0.0 : f32} : f32
        %m = arith.mulf %v, %cst : f32
        %unknown = scf.for %c0, %ub, %c4, %v : f32 {
        ^bb0(%k: i32, %c: f32):
          %o = arith.addf %c, %c : f32
          scf.yield %o
        }
        tile.return %v, %m, %unknown"""
    )


def test_for_pass_through_loop_carried_values_are_removed():
    out, _ = canonicalize(
        """
        func.func @f(%x: i32, %lb: i32, %ub: i32) -> (i32, i32) {
          %one = arith.constant {value = 1 : i32} : i32
          %same, %sum = scf.for %lb, %ub, %one, %x, %x : i32, i32 {
          ^bb0(%i: i32, %s: i32, %acc: i32):
            %n = arith.addi %acc, %s : i32
            scf.yield %s, %n
          }
          tile.return %same, %sum
        }
        """
    )
    assert body(out) == textwrap.dedent(
        """\
        %one = arith.constant {value = 1 : i32} : i32
        %sum = scf.for %lb, %ub, %one, %x : i32 {
        ^bb0(%i: i32, %acc: i32):
          %n = arith.addi %acc, %x : i32
          scf.yield %n
        }
        tile.return %x, %sum"""
    )


def test_dead_pure_ops_go_but_stores_and_loads_stay():
    out, _ = canonicalize(
        """
        func.func @f(%x: i32, %p: !tile.ptr<i32>) {
          %a = arith.muli %x, %x : i32
          %b = arith.addi %a, %x : i32
          %l = tile.load %p : i32
          tile.store %p, %x
          tile.return
        }
        """
    )
    assert body(out) == textwrap.dedent(
        """\
        %l = tile.load %p : i32
        tile.store %p, %x
        tile.return"""
    )


def test_second_run_changes_nothing():
    text = """
        func.func @f(%x: i32) -> i32 {
          %c = arith.constant {value = 2 : i32} : i32
          %d = arith.constant {value = 3 : i32} : i32
          %s = arith.addi %c, %d : i32
          %m = arith.muli %x, %s : i32
          tile.return %m
        }
        """
    first, changed = canonicalize(text)
    assert changed
    second, changed_again = canonicalize(first)
    assert not changed_again
    assert second == first


class SwapOperands(RewritePattern):
    """Always applies, so rewriting never settles."""

    def match_and_rewrite(self, op, rewriter):
        if op.name != "arith.subi":
            return False
        rewriter.set_operands(op, list(reversed(op.operands)))
        return True


def test_patterns_that_undo_each_other_raise_a_clear_error():
    module = parse_module(
        "func.func @f(%x: i32, %y: i32) -> i32 {\n"
        "  %s = arith.subi %x, %y : i32\n  tile.return %s\n}\n"
    )
    with pytest.raises(
        NoConvergenceError, match=r"more than 50 rewrites.*SwapOperands on 'arith.subi'"
    ):
        apply_patterns_greedily(module, [SwapOperands()], max_rewrites=50)


def test_changes_in_every_sweep_exhaust_max_iterations():
    module = parse_module("func.func @f() {\n  tile.return\n}\n")

    def always_change(root, rewriter):
        rewriter.modified(root)

    with pytest.raises(NoConvergenceError, match="still changed the IR after 3 sweeps"):
        apply_patterns_greedily(module, [], before_sweep=always_change, max_iterations=3)


def test_compare_against_a_nan_constant_folds_whatever_the_other_operand():
    out, _ = canonicalize(
        """
        func.func @f(%x: f32) -> (i1, i1) {
          %n = arith.constant {value = nan : f32} : f32
          %ordered = arith.cmpf %x, %n {predicate = "oge"} : i1
          %unordered = arith.cmpf %n, %x {predicate = "ule"} : i1
          tile.return %ordered, %unordered
        }
        """
    )
    assert body(out) == textwrap.dedent(
        """\
        %false = arith.constant {value = false} : i1
        %true = arith.constant {value = true} : i1
        tile.return %false, %true"""
    )


@pytest.mark.parametrize(
    ("op", "lhs", "rhs", "expected"),
    [
        ("minimumf", "0.0", "-0.0", "-0.0"),
        ("maximumf", "-0.0", "0.0", "0.0"),
        ("minnumf", "nan", "2.0", "2.0"),
        ("maximumf", "nan", "2.0", "nan"),
    ],
)
def test_min_max_order_signed_zeros_and_treat_nan_as_llvm_does(op, lhs, rhs, expected):
    out, _ = canonicalize(
        f"""
        func.func @f() -> f32 {{
          %a = arith.constant {{value = {lhs} : f32}} : f32
          %b = arith.constant {{value = {rhs} : f32}} : f32
          %m = arith.{op} %a, %b : f32
          tile.return %m
        }}
        """
    )
    assert f"arith.constant {{value = {expected} : f32}} : f32\ntile.return" in body(out)


_NUMPY_OPS = {
    "addi": np.add,
    "subi": np.subtract,
    "muli": np.multiply,
    "andi": np.bitwise_and,
    "xori": np.bitwise_xor,
    "addf": np.add,
    "subf": np.subtract,
    "mulf": np.multiply,
    "divf": np.divide,
}


@pytest.mark.parametrize("seed", range(20))
def test_folding_random_expressions_agrees_with_numpy(seed):
    """Chains of constant-only ops fold to what NumPy computes in the same type."""
    rnd = random.Random(seed)
    type_name, dtype = rnd.choice(
        [("i8", np.int8), ("i32", np.int32), ("f16", np.float16), ("f32", np.float32)]
    )
    names = [n for n in _NUMPY_OPS if (n[-1] == "i") == (type_name[0] == "i")]
    lines, values = [], []
    for index in range(3):
        if type_name[0] == "i":
            value = dtype(np.array(rnd.randint(-(2**31), 2**31 - 1)).astype(dtype))
            literal = str(int(value))
        else:
            value = dtype(rnd.choice([0.1, -0.0, 3.0, 1e4, float("inf"), rnd.uniform(-8, 8)]))
            literal = format_float(float(value))
        lines.append(
            f"%c{index} = arith.constant {{value = {literal} : {type_name}}} : {type_name}"
        )
        values.append(value)
    with np.errstate(all="ignore"):
        for index in range(8):
            name, a, b = rnd.choice(names), rnd.randrange(len(values)), rnd.randrange(len(values))
            values.append(dtype(_NUMPY_OPS[name](values[a], values[b])))
            operands = [f"%{'c' if i < 3 else 'v'}{i if i < 3 else i - 3}" for i in (a, b)]
            lines.append(f"%v{index} = arith.{name} {', '.join(operands)} : {type_name}")
    text = f"func.func @f() -> {type_name} {{\n" + "\n".join(lines) + "\ntile.return %v7\n}\n"
    out, _ = canonicalize(text)
    returned = parse_module(out).regions[0].block.first_op.regions[0].block.last_op.operands[0]
    assert returned.op.name == "arith.constant", out
    expected = values[-1].item()
    expected_text = str(expected) if type_name[0] == "i" else format_float(expected)
    assert str(returned.op.attributes["value"]) == f"{expected_text} : {type_name}", text


def test_constants_stay_inside_reduce_combiners() -> None:
    out, _ = canonicalize(
        """
        func.func @f(%x: tensor<8xf32>) -> f32 {
          %r = tile.reduce %x {axis = 0 : i32} : f32 {
          ^bb0(%a: f32, %b: f32):
            %two = arith.constant {value = 2.0 : f32} : f32
            %s = arith.addf %a, %b : f32
            %t = arith.mulf %s, %two : f32
            tile.reduce.return %t
          }
          %two_outer = arith.constant {value = 2.0 : f32} : f32
          %u = arith.mulf %r, %two_outer : f32
          tile.return %u
        }
        """
    )
    combiner = out.split("^bb0")[1].split("tile.reduce.return")[0]
    assert "arith.constant {value = 2.0 : f32}" in combiner
    assert out.count("arith.constant") == 2
