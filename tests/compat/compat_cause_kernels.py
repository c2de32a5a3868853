"""Kernels for the Triton 3.6 behaviours of test_compat_dtype_queries.py and its siblings
(issue 20's smaller causes), written here to the pattern Triton's language tests use."""

import tilec
import tilec.language as tl


@tilec.jit
def float_layout_kernel(x_ptr, out_ptr):
    """Stores the dtype's mantissa width, exponent bias and bit width, read in the kernel."""
    x = tl.load(x_ptr)
    dtype = x.dtype
    tl.store(out_ptr, dtype.fp_mantissa_width)
    tl.store(out_ptr + 1, dtype.exponent_bias)
    tl.store(out_ptr + 2, dtype.primitive_bitwidth - dtype.fp_mantissa_width - 1)
    tl.store(out_ptr + 3, dtype.itemsize)


@tilec.jit
def triton_error_texts(x_ptr, WHICH: tl.constexpr):
    """One of the mistakes whose error text Triton's tests read (`__cause__` of the error)."""
    offs = tl.arange(0, 4)
    x = tl.load(x_ptr + offs)
    if WHICH == "program_id":
        x += tl.program_id(20)
    elif WHICH == "axis_low":
        x = tl.sum(tl.expand_dims(x, -3), axis=None)
    elif WHICH == "axis_high":
        x = tl.sum(tl.expand_dims(x, 2), axis=None)
    elif WHICH == "axis_of_scalar":
        x += tl.sum(tl.expand_dims(tl.sum(x), 1))
    elif WHICH == "axes_repeated":
        x = tl.sum(tl.expand_dims(x, (0, -3)), axis=None)
    elif WHICH == "scalar_overflow":
        huge: tl.constexpr = 0xFFFFFFFFFFFFFF
        x = x + huge
    tl.store(x_ptr + offs, x)


@tilec.jit
def full_of_runtime_value(out_ptr, val, SHAPE: tl.constexpr, DTYPE: tl.constexpr):
    """`tl.full(SHAPE, val, DTYPE)` of a runtime scalar `val`, stored to 4 elements."""
    a = tl.full(SHAPE, val, DTYPE)
    tl.static_assert(a.shape == SHAPE)
    tl.store(out_ptr + tl.arange(0, 4), a)


@tilec.jit
def full_of_a_block(out_ptr, x_ptr):
    x = tl.load(x_ptr + tl.arange(0, 4))
    tl.store(out_ptr + tl.arange(0, 4), tl.full([4], x, tl.float32))
