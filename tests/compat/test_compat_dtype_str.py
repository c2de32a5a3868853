"""`str()` of a type is Triton's name of it, which Triton programs use to build other names
(`getattr(torch, str(tl.int8))`, `f"{dtype}"` in test ids); `repr()` stays tilec's."""

import pytest

import tilec.language as tl


@pytest.mark.parametrize(
    ("dtype", "text"),
    [
        (tl.int1, "int1"),
        (tl.int8, "int8"),
        (tl.uint32, "uint32"),
        (tl.float16, "fp16"),
        (tl.bfloat16, "bf16"),
        (tl.float32, "fp32"),
        (tl.float64, "fp64"),
        (tl.float8e4nv, "fp8e4nv"),
        (tl.float8e5, "fp8e5"),
        (tl.pointer_type(tl.float32), "pointer<fp32>"),
        (tl.block_type(tl.float16, [16, 32]), "<(16, 32), fp16>"),
    ],
)
def test_str_of_a_type_is_tritons_name(dtype, text):
    assert str(dtype) == text
    assert f"{dtype}" == text


def test_repr_names_the_tilec_object():
    assert repr(tl.float32) == "tl.float32"
    assert tl.dtype(str(tl.float32)) == tl.float32  # Triton's name reads back
