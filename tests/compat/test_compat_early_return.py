"""`return` inside an `if` on a runtime value (issue 11), as Python runs it: the statements
after the `if` run only on the paths that do not return; in @jit helpers the branches' returned
values become the `scf.if`'s results."""

import numpy as np
import pytest
from compat_helpers import compile_error, run_interp

import tilec
import tilec.language as tl


@tilec.jit
def guarded_store(x_ptr, n, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    if pid >= n:  # the usual early exit of surplus programs
        return
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    tl.store(x_ptr + offs, tl.load(x_ptr + offs) + 1)


def test_early_exit_of_a_kernel():
    x = np.zeros(8 * 4, np.int32)
    run_interp(guarded_store, {"x_ptr": "*i32", "n": "i32"}, [x, 3], grid=(8,), BLOCK=4)
    np.testing.assert_array_equal(x, [1] * 12 + [0] * 20)


@tilec.jit
def classify(v, limit):
    if v < 0:
        return v * 0 - 1, 0.5
    if v > limit:
        if v > 2 * limit:
            return v * 0 + 3, 2.5
        return v * 0 + 2, 1.5
    return v, 0.5


@tilec.jit
def classify_kernel(x_ptr, out_ptr, half_ptr, limit):
    i = tl.program_id(0)
    kind, half = classify(tl.load(x_ptr + i), limit)
    tl.store(out_ptr + i, kind)
    tl.store(half_ptr + i, half)


def test_helpers_return_from_nested_runtime_ifs():
    x = np.array([-5, 0, 4, 11, 30, 10], np.int32)
    out, half = np.zeros(6, np.int32), np.zeros(6, np.float32)
    sig = {"x_ptr": "*i32", "out_ptr": "*i32", "half_ptr": "*fp32", "limit": "i32"}
    run_interp(classify_kernel, sig, [x, out, half, 10], grid=(6,))
    np.testing.assert_array_equal(out, [-1, 0, 4, 2, 3, 10])
    np.testing.assert_array_equal(half, [0.5, 0.5, 0.5, 1.5, 2.5, 0.5])


@tilec.jit
def mixed(v, WHICH: tl.constexpr):
    if v > 0:
        if WHICH == "none":
            return
        return v
    if WHICH == "count":
        return v, v
    if WHICH == "type":
        return v.to(tl.float32)
    if WHICH == "none":
        return v


@tilec.jit
def mixed_kernel(x_ptr, WHICH: tl.constexpr):
    tl.store(x_ptr, mixed(tl.load(x_ptr), WHICH))


@tilec.jit
def returns_in_loop(x_ptr, n):
    for i in range(n):
        if tl.load(x_ptr + i) > 0:
            return
        tl.store(x_ptr + i, 1)


@pytest.mark.parametrize(
    ("kernel", "which", "message"),
    [
        (mixed_kernel, "count", "the branches of this 'if' return different numbers of values"),
        (mixed_kernel, "type", "this 'if' returns i32 from one branch and f32 from the other"),
        (mixed_kernel, "falls", "one path through this 'if' returns a value and another returns"),
        (mixed_kernel, "none", "one path through this 'if' returns a value and another returns"),
        (returns_in_loop, None, "'return' inside a loop is not supported yet"),
    ],
)
def test_returns_that_do_not_agree_are_located_errors(kernel, which, message):
    constexprs = {} if which is None else {"WHICH": which}
    sig = {"x_ptr": "*i32"} if which is not None else {"x_ptr": "*i32", "n": "i32"}
    error = compile_error(kernel, sig, **constexprs)
    assert message in error.message, error.message


@tilec.jit
def branch_types(x_ptr, n, WHICH: tl.constexpr):
    x = tl.load(x_ptr)  # i32
    if n > 0:
        if WHICH == "tensor":
            x = x.to(tl.float32) * 2
        else:
            x = x * 2
    tl.store(x_ptr, x)


def test_a_variable_of_two_tensor_types_after_a_runtime_if_is_an_error():
    """As Triton ('Mismatched type ... between then block and else block'), rather than
    converting the then branch's float32 to the else branch's int32."""
    error = compile_error(branch_types, {"x_ptr": "*i32", "n": "i32"}, WHICH="tensor")
    assert "'x' has type f32 in the then branch and i32 in the else branch" in error.message
    x = np.array([21], np.int32)
    run_interp(branch_types, {"x_ptr": "*i32", "n": "i32"}, [x, 1], WHICH="same")
    assert x[0] == 42
