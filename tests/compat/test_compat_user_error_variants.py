"""Neighbours of issue 11's internal errors (tests/compat/test_compat_user_errors.py): each is a
located user error or works."""

import numpy as np
import pytest
from compat_error_kernels import mistake_variants
from compat_helpers import compile_error, run_interp

SIGNATURE = {"x_ptr": "*i32", "n": "i32"}


@pytest.mark.parametrize(
    ("which", "message"),
    [
        ("program_id_negative", "tl.program_id axis must be 0, 1, or 2 but got -1"),
        ("big_constant_on_a_scalar", "the constant 1099511627776 does not fit in i32"),
        ("big_constant_in_a_compare", "the constant 1099511627776 does not fit in i32"),
        ("expand_dims_negative", "tl.expand_dims: invalid axis -5. Expected -2 <= axis < 2"),
        ("expand_dims_repeated", "tl.expand_dims received duplicate axes, normalized axes = [0, 0]"),
    ],
)
def test_variants_are_located_user_errors(which, message):
    error = compile_error(mistake_variants, SIGNATURE, WHICH=which)
    assert message in error.message, error.message


@pytest.mark.parametrize(
    ("which", "added"),
    [("zeros_rank0", 1), ("full_rank0_list", 2), ("expand_dims_of_a_scalar", 5)],
)
def test_rank_zero_and_scalar_variants_work(which, added):
    x = np.arange(4, dtype=np.int32)
    run_interp(mistake_variants, SIGNATURE, [x, 5], WHICH=which)
    np.testing.assert_array_equal(x, np.arange(4) + added)
