"""Int arguments as Triton 3.6 specializes them (test_value_specialization): i32, then i64,
then u64 from 2**63 to 2**64 - 1; beyond 64 bits an `OverflowError` (Triton's) that is also
tilec's LaunchArgumentError."""

import numpy as np
import pytest
from compat_cause_kernels import store_int_kernel

import tilec
from tilec.errors import LaunchArgumentError


@pytest.mark.parametrize(
    ("value", "kind"),
    [(7, "i32"), (-(2**63), "i64"), (2**63 - 1, "i64"), (2**63, "u64"), (2**64 - 1, "u64")],
)
def test_int_arguments_take_tritons_types(value, kind):
    out = np.zeros(1, np.uint64)
    compiled = store_int_kernel.warmup(out, value, grid=(1,), backend="interp")
    assert compiled.signature["value"] == kind
    for _ in range(2):  # the second launch takes the fast path
        out[0] = 0
        store_int_kernel[(1,)](out, value, backend="interp")
        assert int(out[0]) == value % 2**64


@pytest.mark.parametrize("value", [2**64, -(2**63) - 1])
def test_ints_beyond_64_bits_overflow(value):
    out = np.zeros(1, np.uint64)
    with pytest.raises(OverflowError, match="does not fit in 64 bits") as info:
        store_int_kernel[(1,)](out, value, backend="interp")
    assert isinstance(info.value, LaunchArgumentError) and isinstance(info.value, tilec.TilecError)
