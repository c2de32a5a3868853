"""The Triton 3.6 behaviours of issue 20's smaller causes launched on a GPU backend (nvidia;
amd with `TILEC_TEST_BACKEND=amd`), against NumPy: a kernel renamed by `@jit(repr=...)` loads
and runs under its name, a chunked `tl.gather`, dots of rank 4, `getattr`, names bound to
numbers, `tl.full` of a runtime scalar, `tl.random` and u64 int arguments."""

import numpy as np
import pytest
from compat_cause_kernels import (
    full_of_runtime_value,
    gather_kernel,
    getattr_kernel,
    named_kernel,
    number_names_kernel,
    random_module_kernel,
    store_int_kernel,
)
from compat_helpers import GPU_BACKEND as BACKEND
from test_compat_batched_dot import many_batches

import tilec
import tilec.language as tl

pytestmark = [pytest.mark.gpu, pytest.mark.usefixtures("gpu_backend")]


def launch(kernel, signature, args, **constexprs):
    compiled = tilec.compile(kernel, signature, constexprs, backend=BACKEND)
    compiled.run((1,), args)
    return compiled


def test_a_kernel_named_by_repr_runs_under_that_name():
    x = np.zeros(1, np.int64)
    named_kernel[(1,)](5, 1, x, backend=BACKEND)
    assert x[0] == 6
    assert named_kernel.warmup(5, 1, x, grid=(1,), backend=BACKEND).name == "kernel_i32_is_one"


@pytest.mark.parametrize(
    ("src_shape", "idx_shape", "axis"), [((64, 32), (64, 64), 1), ((64, 32), (128, 32), 0)]
)
def test_chunked_gather(src_shape, idx_shape, axis):
    rng = np.random.default_rng(axis)
    src = rng.standard_normal(src_shape).astype(np.float32)
    idx = rng.integers(0, src_shape[axis], idx_shape).astype(np.int64)
    out = np.zeros(idx_shape, np.float32)
    launch(gather_kernel, {"src_ptr": "*fp32", "idx_ptr": "*i64", "out_ptr": "*fp32"},
           [src, idx, out], AXIS=axis, S0=src_shape[0], S1=src_shape[1], I0=idx_shape[0],
           I1=idx_shape[1])  # fmt: skip
    np.testing.assert_array_equal(out, np.take_along_axis(src, idx, axis))


def test_dot_of_rank_4_with_a_transpose():
    rng = np.random.default_rng(4)
    shape = (2, 2, 16, 16)
    a = rng.integers(-4, 5, shape).astype(np.float16)
    b = rng.integers(-4, 5, shape).astype(np.float16)
    c = np.zeros(shape, np.float32)
    launch(many_batches, {"a_ptr": "*fp16", "b_ptr": "*fp16", "c_ptr": "*fp32"}, [a, b, c],
           RANK=4, TRANS_A=True, TRANS_B=False, ACC=True)  # fmt: skip
    expected = np.swapaxes(a, -1, -2).astype(np.float32) @ b.astype(np.float32) + 1.0
    np.testing.assert_array_equal(c, expected)


def test_python_values_full_and_random():
    out = np.zeros(1, np.float32)
    args = [np.float32([np.nan]), np.float32([2.0]), out]
    launch(getattr_kernel, {"a_ptr": "*fp32", "b_ptr": "*fp32", "out_ptr": "*fp32"}, args,
           FUNC="clamp", NAN="NONE")  # fmt: skip
    assert out[0] == -2.0
    sums = np.zeros(2, np.int64)
    lo = 2**35
    launch(number_names_kernel, {"out_ptr": "*i64", "lo": "i64", "hi": "i64"}, [sums, lo, lo + 20])
    assert list(sums) == [sum(range(lo, lo + 20, 3)), 4]
    full = np.zeros(4, np.float16)
    launch(full_of_runtime_value, {"out_ptr": "*fp16", "val": "i32"}, [full, 2], SHAPE=(),
           DTYPE=tl.float16)  # fmt: skip
    assert list(full) == [2, 2, 2, 2]
    extremes = np.array([np.iinfo(np.int64).min, np.iinfo(np.int64).max], np.int64)
    uniform = np.zeros(2, np.float32)
    launch(random_module_kernel, {"x_ptr": "*i64", "out_ptr": "*fp32"}, [extremes, uniform], N=2)
    assert uniform[0] == uniform[1] and 1.0 - np.finfo(np.float32).eps <= uniform[0] < 1.0


@pytest.mark.parametrize("value", [2**63, 2**64 - 1, -5])
def test_int_arguments_of_tritons_types(value):
    out = np.zeros(1, np.uint64)
    for _ in range(2):  # the second launch takes the fast path
        out[0] = 0
        store_int_kernel[(1,)](out, value, backend=BACKEND)
        assert int(out[0]) == value % 2**64
    with pytest.raises(OverflowError):
        store_int_kernel[(1,)](out, 2**64, backend=BACKEND)
