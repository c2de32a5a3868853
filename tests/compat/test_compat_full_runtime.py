"""`tl.full(shape, value, dtype)` of a runtime scalar `value` (a kernel argument), of every rank
as in Triton 3.6 (`test_full`'s dynamic kernel), cast to `dtype`."""

import numpy as np
import pytest
from compat_cause_kernels import full_of_a_block, full_of_runtime_value
from compat_helpers import compile_error, run_interp

import tilec.language as tl


@pytest.mark.parametrize("shape", [(), (1,), (4,)])
@pytest.mark.parametrize(("dtype", "out_type"), [(tl.int8, np.int8), (tl.float16, np.float16)])
def test_full_of_a_runtime_scalar(shape, dtype, out_type):
    out = np.zeros(4, out_type)
    signature = {"out_ptr": f"*{str(dtype).replace('int', 'i')}", "val": "i32"}
    run_interp(full_of_runtime_value, signature, [out, 2], SHAPE=shape, DTYPE=dtype)
    assert list(out) == [2, 2, 2, 2]


def test_full_of_a_block_is_a_located_error():
    error = compile_error(full_of_a_block, {"out_ptr": "*fp32", "x_ptr": "*fp32"})
    assert "tl.full" in error.message, error.message
