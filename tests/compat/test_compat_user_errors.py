"""Mistakes that ended in internal errors now give located user errors, or work (issue 11)."""

import numpy as np
import pytest
from compat_helpers import compile_error, run_interp
from compat_kernels import expand_dims_tuple, full_rank0, internal_errors


@pytest.mark.parametrize(
    ("which", "message"),
    [
        ("program_id", "tl.program_id axis must be 0, 1, or 2 but got 20"),
        ("num_programs", "tl.num_programs axis must be 0, 1, or 2 but got 3"),
        ("expand_dims", "tl.expand_dims: invalid axis 5"),
        ("expand_dims_type", "tl.expand_dims' axis must be an int or ints, got 'a'"),
    ],
)
def test_mistakes_are_located_user_errors(which, message):
    error = compile_error(internal_errors, {"x_ptr": "*fp32"}, WHICH=which)
    assert message in error.message, error.message


def test_too_large_constant_for_an_int32_tensor_is_a_user_error():
    error = compile_error(internal_errors, {"x_ptr": "*i32"}, WHICH="big_constant")
    assert "the constant 1099511627776 does not fit in i32" in error.message
    assert "x.to(tl.int64)" in error.hint


def test_full_of_rank_zero_is_a_scalar():
    out = np.zeros(1, np.int32)
    run_interp(full_rank0, {"out_ptr": "*i32"}, [out], V=41)
    assert out[0] == 42


def test_expand_dims_takes_a_tuple_of_axes():
    x = np.arange(4, dtype=np.float32)
    out = np.zeros(4, np.float32)
    run_interp(expand_dims_tuple, {"x_ptr": "*fp32", "out_ptr": "*fp32"}, [x, out])
    np.testing.assert_array_equal(out, x)
