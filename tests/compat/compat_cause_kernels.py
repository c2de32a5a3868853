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
