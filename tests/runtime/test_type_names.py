"""`tilec.ir.type_names`: the one table of kernel-argument type names."""

import struct

import numpy as np
import pytest

from tilec.ir import type_names
from tilec.ir.type_names import SCALARS, parse_signature_type, signature_type
from tilec.ir.types import FloatType, IntegerType, PointerType
from tilec.language import DTYPES
from tilec.runtime import packing, specialization


@pytest.mark.parametrize("scalar", SCALARS, ids=lambda s: s.signature)
def test_spellings_round_trip(scalar):
    assert parse_signature_type(scalar.signature) == scalar.ir_type
    assert signature_type(scalar.ir_type) == scalar.signature
    assert signature_type(PointerType(scalar.ir_type)) == "*" + scalar.signature
    assert parse_signature_type("*" + scalar.signature) == PointerType(scalar.ir_type)


@pytest.mark.parametrize("scalar", SCALARS, ids=lambda s: s.signature)
def test_widths_agree(scalar):
    width = scalar.ir_type.width
    assert struct.calcsize("<" + scalar.struct_code) * 8 == max(width, 8)
    if scalar.dlpack is not None:  # None: float8e4b15, which DLPack lacks
        assert scalar.dlpack[1] == max(width, 8)
    if scalar.numpy is not None:
        assert np.dtype(scalar.numpy).itemsize * 8 == max(width, 8)
    else:  # bf16 and the float8 types: arrays hold their bits
        assert np.dtype(scalar.storage).itemsize * 8 == width


def test_language_dtypes_are_the_table():
    assert [(d.name, d.ir_type) for d in DTYPES] == [(s.language, s.ir_type) for s in SCALARS]


def test_runtime_tables_come_from_it():
    assert specialization.DTYPES["float32"] == "fp32" and "bfloat16" not in specialization.DTYPES
    assert specialization.TORCH_DTYPES["bfloat16"] == "bf16"
    assert specialization.TORCH_DTYPES["bool"] == "i1"
    assert packing.SCALAR_FORMATS["fp32"] == packing.SCALAR_FORMATS["f32"] == "f"
    assert packing.SCALAR_FORMATS["bf16"] == "H"


def test_unknown_names_are_errors():
    with pytest.raises(ValueError, match="unknown signature type 'f32'"):
        parse_signature_type("*f32")
    with pytest.raises(ValueError, match="cannot have type i3"):
        signature_type(IntegerType(3))
    assert type_names.is_signature_type("**bf16") and not type_names.is_signature_type("f32")
    assert FloatType("f32") in type_names.BY_IR_TYPE
