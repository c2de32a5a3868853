"""Python's names and values in kernels as Triton 3.6 compiles them: `getattr` and `hasattr`,
names a plain assignment binds to a number (scalar tensors: `x.dtype`, `x.to(...)`), the
constexpr type of compile-time values (`x.type`, `tl.constexpr_type(...)`) and the enclosing
function's variables (the kernel's closure)."""

import numpy as np
import pytest
from compat_cause_kernels import (
    constexpr_types_kernel,
    getattr_kernel,
    make_closure_kernel,
    number_names_kernel,
)
from compat_helpers import run_interp

import tilec.language as tl

NAN = float("nan")


@pytest.mark.parametrize(
    ("func", "nan", "expected"),
    [("minimum", "ALL", NAN), ("minimum", "NONE", 2.0), ("maximum", "ALL", NAN),
     ("clamp", "ALL", NAN), ("clamp", "NONE", -2.0)],
)  # fmt: skip
def test_getattr_in_a_kernel(func, nan, expected):
    out = np.zeros(1, np.float32)
    signature = {"a_ptr": "*fp32", "b_ptr": "*fp32", "out_ptr": "*fp32"}
    args = [np.float32([NAN]), np.float32([2.0]), out]
    run_interp(getattr_kernel, signature, args, FUNC=func, NAN=nan)
    np.testing.assert_equal(out[0], np.float32(expected))


def test_numbers_bound_by_plain_assignment_are_scalar_tensors():
    out = np.zeros(2, np.int64)
    lo = 2**35
    run_interp(number_names_kernel, {"out_ptr": "*i64", "lo": "i64", "hi": "i64"},
               [out, lo, lo + 20])  # fmt: skip
    assert list(out) == [sum(range(lo, lo + 20, 3)), 4]


@pytest.mark.parametrize(
    ("literal", "tensor_type"), [(10, tl.int32), (32.5, tl.float32), ((5, 6, 7), None)]
)
def test_constexpr_and_assigned_types(literal, tensor_type):
    out = np.zeros(1, np.int32)
    run_interp(constexpr_types_kernel, {"out_ptr": "*i32"}, [out], LITERAL=literal,
               TENSOR_TYPE=tensor_type)  # fmt: skip
    assert out[0] == 1


def test_a_kernel_reads_its_enclosing_functions_variables():
    for value in (5, 9):
        out = np.zeros(1, np.int32)
        run_interp(make_closure_kernel(value), {"out_ptr": "*i32"}, [out])
        assert out[0] == value
