"""`a if c else b` as Triton 3.6 compiles it (its `visit_IfExp`): on a runtime scalar `c` an
`scf.if` with one region per branch, so only the taken branch runs (a load at a bad offset or an
atomic on the other path does not happen); the branches' values must have one type (Python
numbers take their literal types: int i32, float f32); on a compile-time `c` only the chosen
branch is compiled; a tensor `c` is an error (use tl.where), except per element in a mapped
function."""

import numpy as np
import pytest
from compat_helpers import compile_error, run_interp

import tilec
import tilec.language as tl
from tilec.frontend.generator import compile_to_tir
from tilec.ir.verifier import verify


@tilec.jit
def previous_or_zero(g, out, H, BT: tl.constexpr):
    # flash-linear-attention's pattern: the false path would load at g - H
    i_s = tl.program_id(0)
    b = tl.load(g + (i_s - 1) * H) if i_s % BT > 0 else 0.0
    tl.store(out + i_s, b)


def test_untaken_branch_does_not_load_out_of_bounds():
    g = np.arange(1, 9, dtype=np.float32)
    out = np.full(8, -1.0, np.float32)
    sig = {"g": "*fp32", "out": "*fp32", "H": "i32"}
    run_interp(previous_or_zero, sig, [g, out, 1], grid=(8,), BT=4)
    np.testing.assert_array_equal(out, [0, 1, 2, 3, 0, 5, 6, 7])


def test_scf_if_is_emitted_with_the_load_inside():
    sig = {"g": "*fp32", "out": "*fp32", "H": "i32"}
    module = compile_to_tir(previous_or_zero, sig, {"BT": 4})
    verify(module)
    if_op = next(op for op in module.walk() if op.name == "scf.if")
    assert [str(r.type) for r in if_op.results] == ["f32"]
    then_ops = [op.name for op in if_op.regions[0].blocks[0].ops]
    else_ops = [op.name for op in if_op.regions[1].blocks[0].ops]
    assert "tile.load" in then_ops and "tile.load" not in else_ops, (then_ops, else_ops)
    assert "arith.select" not in [op.name for op in module.walk()]


@tilec.jit
def counted_atomic(counter, out):
    pid = tl.program_id(0)
    old = tl.atomic_add(counter, 1) if pid % 2 == 0 else -1
    tl.store(out + pid, old)


def test_untaken_branch_has_no_side_effect():
    counter = np.zeros(1, np.int32)
    out = np.zeros(6, np.int32)
    run_interp(counted_atomic, {"counter": "*i32", "out": "*i32"}, [counter, out], grid=(6,))
    assert counter[0] == 3  # programs 0, 2 and 4 only
    assert sorted(out[0::2]) == [0, 1, 2] and list(out[1::2]) == [-1, -1, -1]


@tilec.jit
def stores_as_branches(x, out):
    pid = tl.program_id(0)
    tl.store(out + pid, tl.load(x)) if pid % 2 == 0 else tl.store(out + pid, tl.load(x + 1))


def test_branches_without_value_run_as_statements():
    x = np.array([3.5, 1.5], np.float32)
    out = np.zeros(4, np.float32)
    run_interp(stores_as_branches, {"x": "*fp32", "out": "*fp32"}, [x, out], grid=(4,))
    np.testing.assert_array_equal(out, [3.5, 1.5, 3.5, 1.5])


@tilec.jit
def mixed_branches(x, out, WHICH: tl.constexpr):
    pid = tl.program_id(0)
    if WHICH == "float_literal":
        v = tl.load(x + pid) if pid > 0 else 2.5  # fp32 and a float literal (f32): one type
    elif WHICH == "int_literal":
        v = (tl.load(x + pid) if pid > 0 else 7).to(tl.float32)  # loads i32 here
    elif WHICH == "int_and_float":
        v = 1 if pid > 0 else 2.0
    else:
        v = tl.load(x + pid) if pid > 0 else 0.0  # fp16 and f32: Triton does not promote
    tl.store(out + pid, v)


def test_mixed_branch_types_follow_triton():
    x = np.array([9.0, 4.0, 6.0], np.float32)
    out = np.zeros(3, np.float32)
    sig = {"x": "*fp32", "out": "*fp32"}
    run_interp(mixed_branches, sig, [x, out], grid=(3,), WHICH="float_literal")
    np.testing.assert_array_equal(out, [2.5, 4.0, 6.0])
    xi = np.array([9, 4, 6], np.int32)
    run_interp(mixed_branches, {"x": "*i32", "out": "*fp32"}, [xi, out], grid=(3,),
               WHICH="int_literal")  # fmt: skip
    np.testing.assert_array_equal(out, [7.0, 4.0, 6.0])


@pytest.mark.parametrize(
    ("which", "x", "types"),
    [("int_and_float", "*fp32", "i32 and f32"), ("fp16_and_float", "*fp16", "f16 and f32")],
)
def test_inconsistent_branch_types_are_triton_s_error(which, x, types):
    error = compile_error(mixed_branches, {"x": x, "out": "*fp32"}, WHICH=which)
    assert "Ternary expression with dynamic condition has inconsistent types" in str(error)
    assert types in str(error)


@tilec.jit
def constexpr_choice(x, out, FAST: tl.constexpr):
    v = tl.load(x) * 2 if FAST else tl.this_does_not_exist(x)
    tl.store(out, v)


def test_constexpr_condition_compiles_only_the_chosen_branch():
    x = np.array([1.5], np.float32)
    out = np.zeros(1, np.float32)
    run_interp(constexpr_choice, {"x": "*fp32", "out": "*fp32"}, [x, out], FAST=True)
    assert out[0] == 3.0


@tilec.jit
def tensor_condition(x, out, N: tl.constexpr):
    offs = tl.arange(0, N)
    v = tl.load(x + offs)
    tl.store(out + offs, v if v > 0 else -v)


def test_tensor_condition_is_an_error_naming_tl_where():
    error = compile_error(tensor_condition, {"x": "*fp32", "out": "*fp32"}, N=4)
    assert "must be a scalar" in str(error) and "tl.where" in str(error)


@tilec.jit
def pick_block_pointer(x, out, N: tl.constexpr):
    pid = tl.program_id(0)
    first = tl.make_block_ptr(x, (2 * N,), (1,), (0,), (N,), (0,))
    p = first if pid == 0 else tl.advance(first, (N,))
    tl.store(out + pid * N + tl.arange(0, N), tl.load(p))


def test_block_pointer_branches():
    x = np.arange(8, dtype=np.float32)
    out = np.zeros(8, np.float32)
    run_interp(pick_block_pointer, {"x": "*fp32", "out": "*fp32"}, [x, out], grid=(2,), N=4)
    np.testing.assert_array_equal(out, x)


@tilec.jit
def quotient_or_zero(a, b):
    return a // b if b != 0 else 0  # per element: no lane divides by zero


@tilec.jit
def load_or_value(v, x):
    return v if v > 0 else tl.load(x + v)


@tilec.jit
def mapped_if_expression(x, y, out, N: tl.constexpr, LOAD: tl.constexpr):
    offs = tl.arange(0, N)
    a = tl.load(x + offs)
    if LOAD:
        tl.store(out + offs, tl.map_elementwise(load_or_value, a, x))
    else:
        tl.store(out + offs, tl.map_elementwise(quotient_or_zero, a, tl.load(y + offs)))


def test_tensor_condition_in_a_mapped_function_is_per_element():
    x = np.array([7, 9, -8, 5], np.int32)
    y = np.array([2, 0, 3, 0], np.int32)
    out = np.zeros(4, np.int32)
    sig = {"x": "*i32", "y": "*i32", "out": "*i32"}
    run_interp(mapped_if_expression, sig, [x, y, out], N=4, LOAD=False)
    np.testing.assert_array_equal(out, [3, 0, -2, 0])  # // truncates, as in Triton


def test_load_under_a_per_element_condition_is_rejected():
    sig = {"x": "*i32", "y": "*i32", "out": "*i32"}
    error = compile_error(mapped_if_expression, sig, N=4, LOAD=True)
    assert "tl.load under a per-element condition" in str(error)


@pytest.mark.parametrize(("backend", "target"), [("nvidia", "sm_90a"), ("amd", "gfx942")])
def test_vendor_backends_compile_it(backend, target):
    for kernel, sig, constexprs in [
        (previous_or_zero, {"g": "*fp32", "out": "*fp32", "H": "i32"}, {"BT": 4}),
        (counted_atomic, {"counter": "*i32", "out": "*i32"}, {}),
        (stores_as_branches, {"x": "*fp32", "out": "*fp32"}, {}),
    ]:
        tilec.compile(kernel, signature=sig, constexprs=constexprs, backend=backend, target=target)
