"""Triton 3.6's `tl.dtype` queries (its `language/core.py` `dtype`): attributes of one kind of
type (`fp_mantissa_width`, `exponent_bias`, `int_bitwidth`, `int_signedness`), the predicates,
`kind()`, the integer limits and the names, on the host and inside kernels."""

import numpy as np
import pytest
from compat_cause_kernels import float_layout_kernel
from compat_helpers import run_interp

import tilec.language as tl

FLOATS = [
    (tl.float8e4b15, 3, 15), (tl.float8e4nv, 3, 7), (tl.float8e4b8, 3, 8), (tl.float8e5, 2, 15),
    (tl.float8e5b16, 2, 16), (tl.float16, 10, 15), (tl.bfloat16, 7, 127), (tl.float32, 23, 127),
    (tl.float64, 52, 1023),
]  # fmt: skip


@pytest.mark.parametrize(("dtype", "mantissa", "bias"), FLOATS)
def test_float_layout_as_triton_gives_it(dtype, mantissa, bias):
    assert (dtype.fp_mantissa_width, dtype.exponent_bias) == (mantissa, bias)
    assert dtype.itemsize * 8 == dtype.primitive_bitwidth
    assert dtype.kind() == tl.dtype.KIND.FLOATING
    assert not hasattr(dtype, "int_bitwidth")


def test_integer_queries_as_triton():
    assert tl.int8.int_bitwidth == 8 and tl.int8.int_signedness == tl.dtype.SIGNEDNESS.SIGNED
    assert tl.uint16.int_signedness == tl.dtype.SIGNEDNESS.UNSIGNED
    assert (tl.int32.get_int_min_value(), tl.int32.get_int_max_value()) == (-(2**31), 2**31 - 1)
    assert (tl.uint8.get_int_min_value(), tl.uint8.get_int_max_value()) == (0, 255)
    assert not hasattr(tl.int64, "fp_mantissa_width")
    # Triton lists int1 with the unsigned types
    assert tl.int1.is_int_unsigned() and tl.int1.is_bool() and tl.int1.is_int1()
    assert tl.int1.kind() == tl.dtype.KIND.BOOLEAN and tl.int16.kind() == tl.dtype.KIND.INTEGRAL


def test_predicates_and_names():
    assert tl.int8.is_int8() and not tl.int8.is_uint8() and tl.uint64.is_uint64()
    assert tl.float16.is_fp16() and tl.float8e4nv.is_fp8e4nv() and tl.float8e4nv.is_fp8()
    assert tl.bfloat16.is_standard_floating() and not tl.float8e5.is_standard_floating()
    assert tl.dtype.is_dtype("fp8e5b16") and not tl.dtype.is_dtype("float16")
    assert [t.mangle() for t in (tl.int8, tl.uint32, tl.float16, tl.void)] == [
        "i8",
        "u32",
        "fp16",
        "V",
    ]
    assert tl.bfloat16.codegen_name() == "bfloat16" and tl.float32.codegen_name() == "float32"
    assert tl.float64.cache_key_part == "fp64" and not tl.float32.is_const()


@pytest.mark.parametrize(
    ("dtype", "signature", "expected"),
    [(np.float16, "*fp16", [10, 15, 5, 2]), (np.float32, "*fp32", [23, 127, 8, 4])],
)
def test_queries_in_a_kernel(dtype, signature, expected):
    out = np.zeros(4, np.int32)
    run_interp(
        float_layout_kernel, {"x_ptr": signature, "out_ptr": "*i32"}, [np.ones(1, dtype), out]
    )
    assert list(out) == expected
