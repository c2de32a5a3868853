"""`tl.random` is Triton's `triton.language.random`: its functions are the `tl` ones, and the
extremes of int32 and int64 map below 1.0 (Triton's test_rand_limits)."""

import numpy as np
import pytest
from compat_cause_kernels import random_module_kernel
from compat_helpers import run_interp

import tilec.language as tl


def test_random_module_names_the_tl_functions():
    assert tl.random.rand is tl.rand and tl.random.philox is tl.philox
    assert tl.random.uint_to_uniform_float is tl.uint_to_uniform_float
    assert tl.random.N_ROUNDS_DEFAULT.value == 10


@pytest.mark.parametrize(("dtype", "signature"), [(np.int32, "*i32"), (np.int64, "*i64")])
def test_uint_to_uniform_float_of_the_extremes(dtype, signature):
    info = np.iinfo(dtype)
    x = np.array([info.min, info.max], dtype)
    out = np.zeros(2, np.float32)
    run_interp(random_module_kernel, {"x_ptr": signature, "out_ptr": "*fp32"}, [x, out], N=2)
    assert out[0] == out[1]
    assert 1.0 - np.finfo(np.float32).eps <= out[0] < 1.0
