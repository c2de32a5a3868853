"""`and` / `or` on runtime values (issue 11), as Triton compiles them: on booleans (int1) only,
all runtime operands evaluated, scalars in `if` and `while` conditions and boolean tensors
elementwise, chains of three or more combined pairwise; a compile-time operand that decides the
result is the result (the operands after it are not compiled); non-boolean runtime operands are
located errors."""

import numpy as np
import pytest
from compat_helpers import compile_error, run_interp

import tilec
import tilec.language as tl


@tilec.jit
def scalar_conditions(out_ptr, lo, hi, OP: tl.constexpr):
    i = 0
    count = 0
    while i >= lo and i < hi:  # the grouped-GEMM tutorial's loop condition
        count += 1
        i += 1
    if OP == "and":
        hit = (lo < 5) and (hi > 5)
    else:
        hit = (lo > 5) or (hi < 5)
    flag = 0
    if hit:
        flag = 1
    tl.store(out_ptr, count)
    tl.store(out_ptr + 1, flag)


@pytest.mark.parametrize(("lo", "hi"), [(0, 7), (3, 9), (0, 0), (6, 2)])
@pytest.mark.parametrize("op", ["and", "or"])
def test_and_or_on_runtime_scalars(lo, hi, op):
    out = np.zeros(2, np.int32)
    run_interp(scalar_conditions, {"out_ptr": "*i32", "lo": "i32", "hi": "i32"}, [out, lo, hi],
               OP=op)  # fmt: skip
    count = sum(1 for _ in range(0, hi)) if lo <= 0 else 0
    hit = (lo < 5 and hi > 5) if op == "and" else (lo > 5 or hi < 5)
    assert list(out) == [count, int(hit)]


@tilec.jit
def tensor_bools(x_ptr, out_ptr, FLAG: tl.constexpr, OP: tl.constexpr):
    offs = tl.arange(0, 16)
    x = tl.load(x_ptr + offs)
    if OP == "and":
        keep = (x > 2) and (x < 9)
    elif OP == "or":
        keep = (x < 2) or (x > 12)
    else:
        keep = FLAG and (x > 7)
    tl.store(out_ptr + offs, keep.to(tl.int32))


@pytest.mark.parametrize(
    ("op", "flag", "expected"),
    [
        ("and", True, lambda x: (x > 2) & (x < 9)),
        ("or", True, lambda x: (x < 2) | (x > 12)),
        ("const", True, lambda x: x > 7),
        ("const", False, lambda x: np.zeros_like(x, bool)),
    ],
)
def test_and_or_on_boolean_tensors_are_elementwise(op, flag, expected):
    x = np.arange(16, dtype=np.int32)
    out = np.full(16, -1, np.int32)
    run_interp(tensor_bools, {"x_ptr": "*i32", "out_ptr": "*i32"}, [x, out], FLAG=flag, OP=op)
    np.testing.assert_array_equal(out, expected(x).astype(np.int32))


@tilec.jit
def bad_bools(x_ptr, n, WHICH: tl.constexpr):
    x = tl.load(x_ptr)
    if WHICH == "chain":
        ok = (x > 0) and (n > 1) and (x < n)
    elif WHICH == "int":
        ok = x and (n > 1)
    else:
        ok = (x > 0) or 3
    tl.store(x_ptr, ok.to(tl.int32))


def test_and_on_a_runtime_integer_is_a_located_error():
    error = compile_error(bad_bools, {"x_ptr": "*i32", "n": "i32"}, WHICH="int")
    assert "'and' on runtime values needs booleans (int1), got i32" in error.message


@pytest.mark.parametrize(
    ("which", "x", "n", "expected"),
    [("chain", 3, 5, 1), ("chain", 3, 2, 0), ("chain", 0, 5, 0), ("or_int", -1, 5, 3)],
)
def test_chains_and_a_deciding_constant_as_in_triton(which, x, n, expected):
    """A chain of runtime booleans combines pairwise; `(x > 0) or 3` is 3, as Triton's
    `or` returns the first true compile-time operand."""
    out = np.array([x], np.int32)
    run_interp(bad_bools, {"x_ptr": "*i32", "n": "i32"}, [out, n], WHICH=which)
    assert out[0] == expected


@tilec.jit
def deciding_constants(out_ptr, n, K: tl.constexpr):
    """`K is None or n < K` with K None: the right side (None compared) is not compiled, as
    Triton's tl.sort(descending=None) and its `k is None or ...` conditions need."""
    if K is None or n < K:
        tl.store(out_ptr, 1)
    else:
        tl.store(out_ptr, 2)
    if K is not None and n < K:
        tl.store(out_ptr + 1, 3)
    tl.store(out_ptr + 2, (K is None) or (n > K))


@pytest.mark.parametrize(("k", "expected"), [(None, [1, 0, 1]), (8, [1, 3, 0]), (4, [2, 0, 1])])
def test_a_deciding_constant_skips_the_rest(k, expected):
    out = np.zeros(3, np.int32)
    run_interp(deciding_constants, {"out_ptr": "*i32", "n": "i32"}, [out, 5], K=k)
    assert list(out) == expected
