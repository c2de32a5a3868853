"""Triton 3.6's queries of a `tl.dtype` (`language/core.py`'s `dtype` class), answered for
tilec's dtypes: the attributes (`primitive_bitwidth`, `itemsize`, `int_bitwidth`,
`int_signedness`, `fp_mantissa_width`, `exponent_bias`), the predicates (`is_floating()`,
`is_int8()`, ...), `kind()`, the integer limits and the names (`codegen_name()`, `mangle()`).
They work on the host and inside kernels (`x.dtype.fp_mantissa_width`).

As in Triton, a query reads the type's Triton name (`fp16`, `int1`, `fp8e4nv`), and the
attributes of one kind of type are missing on the others: `tl.int8.fp_mantissa_width` is an
`AttributeError`, so `hasattr` tells floats from integers as it does there.
"""

from __future__ import annotations

import enum
from typing import ClassVar

from tilec.ir.types import PointerType, Type

_MANTISSA_AND_BIAS = {
    "fp8e4b15": (3, 15), "fp8e4nv": (3, 7), "fp8e4b8": (3, 8), "fp8e5": (2, 15),
    "fp8e5b16": (2, 16), "fp16": (10, 15), "bf16": (7, 127), "fp32": (23, 127),
    "fp64": (52, 1023),
}  # fmt: skip
"""Triton's `fp_mantissa_width` and `exponent_bias` of each float type."""


class DtypeQueries:
    """The query methods of `tl.dtype`; a subclass gives `name` (tilec's), `ir_type` and
    `triton_name` (Triton's spelling, by which Triton's predicates test)."""

    name: str
    ir_type: Type

    SINT_TYPES: ClassVar[list[str]] = ["int8", "int16", "int32", "int64"]
    UINT_TYPES: ClassVar[list[str]] = ["int1", "uint8", "uint16", "uint32", "uint64"]
    FP_TYPES: ClassVar[list[str]] = ["fp8e4b15", "fp8e4nv", "fp8e4b8", "fp8e5", "fp8e5b16",
                                     "fp16", "bf16", "fp32", "fp64"]  # fmt: skip
    STANDARD_FP_TYPES: ClassVar[list[str]] = ["fp16", "bf16", "fp32", "fp64"]
    OTHER_TYPES: ClassVar[list[str]] = ["void"]

    class SIGNEDNESS(enum.Enum):
        SIGNED = 0
        UNSIGNED = 1

    class KIND(enum.Enum):
        BOOLEAN = 0
        INTEGRAL = 1
        FLOATING = 2

    @property
    def triton_name(self) -> str:
        raise NotImplementedError

    @staticmethod
    def is_dtype(type_str: str) -> bool:
        known = DtypeQueries
        return type_str in known.SINT_TYPES + known.UINT_TYPES + known.FP_TYPES + known.OTHER_TYPES

    # Sizes and the attributes of one kind of type.

    @property
    def primitive_bitwidth(self) -> int:
        if isinstance(self.ir_type, PointerType):
            return 64
        if self.ir_type is None:
            raise AttributeError("tl.void has no primitive_bitwidth")
        return self.ir_type.width  # type: ignore[attr-defined]

    @property
    def itemsize(self) -> int:
        return self.primitive_bitwidth // 8

    @property
    def int_bitwidth(self) -> int:
        if not self.is_int():
            raise AttributeError(f"{self.triton_name} is not an integer type: no int_bitwidth")
        return self.primitive_bitwidth

    @property
    def int_signedness(self) -> DtypeQueries.SIGNEDNESS:
        if not self.is_int():
            raise AttributeError(f"{self.triton_name} is not an integer type: no int_signedness")
        if self.is_int_signed():
            return DtypeQueries.SIGNEDNESS.SIGNED
        return DtypeQueries.SIGNEDNESS.UNSIGNED

    @property
    def fp_mantissa_width(self) -> int:
        return self._float_parameters("fp_mantissa_width")[0]

    @property
    def exponent_bias(self) -> int:
        return self._float_parameters("exponent_bias")[1]

    def _float_parameters(self, what: str) -> tuple[int, int]:
        found = _MANTISSA_AND_BIAS.get(self.triton_name)
        if found is None:
            raise AttributeError(f"{self.triton_name} is not a floating-point type: no {what}")
        return found

    # Predicates, by Triton's name of the type.

    def is_floating(self) -> bool:
        return self.triton_name in self.FP_TYPES

    def is_standard_floating(self) -> bool:
        return self.triton_name in self.STANDARD_FP_TYPES

    def is_int_signed(self) -> bool:
        return self.triton_name in self.SINT_TYPES

    def is_int_unsigned(self) -> bool:
        return self.triton_name in self.UINT_TYPES

    def is_int(self) -> bool:
        return self.is_int_signed() or self.is_int_unsigned()

    def is_bool(self) -> bool:
        return self.triton_name == "int1"

    def is_fp8(self) -> bool:
        return "fp8" in self.triton_name

    def is_ptr(self) -> bool:
        return isinstance(self.ir_type, PointerType)

    def is_block(self) -> bool:
        return False

    def is_const(self) -> bool:
        return False

    def is_void(self) -> bool:
        return self.triton_name == "void"

    def kind(self) -> DtypeQueries.KIND:
        """bool < integer < float, as Triton orders them."""
        if self.is_bool():
            return DtypeQueries.KIND.BOOLEAN
        if self.is_int():
            return DtypeQueries.KIND.INTEGRAL
        if not self.is_floating():
            raise TypeError(f"{self.triton_name} is not a bool, integer or float type: no kind()")
        return DtypeQueries.KIND.FLOATING

    def get_int_max_value(self) -> int:
        if self.is_int_signed():
            return 2 ** (self.int_bitwidth - 1) - 1
        if self.is_int_unsigned():
            return 2**self.int_bitwidth - 1
        raise TypeError(f"{self.triton_name} is not an integer type: no get_int_max_value()")

    def get_int_min_value(self) -> int:
        if self.is_int_signed():
            return -(2 ** (self.int_bitwidth - 1))
        if self.is_int_unsigned():
            return 0
        raise TypeError(f"{self.triton_name} is not an integer type: no get_int_min_value()")

    # Names.

    def codegen_name(self) -> str:
        """Triton's spelling in generated code: `float16`, `bfloat16`, `int8`."""
        name = self.triton_name
        if name.startswith("fp"):
            return "float" + name[2:]
        if name.startswith("bf"):
            return "bfloat" + name[2:]
        return name

    @property
    def cache_key_part(self) -> str:
        return self.triton_name

    def mangle(self) -> str:
        """Triton's short name of the type in mangled function names (`i32`, `u8`, `fp16`)."""
        if self.is_int():
            prefix = "i" if self.is_int_signed() else "u"
            return f"{prefix}{self.int_bitwidth}"
        if self.is_floating():
            return self.triton_name
        if self.is_void():
            return "V"
        raise TypeError(f"tilec cannot mangle the type {self.triton_name}")


def _add_name_predicates() -> None:
    """`is_int8()` ... `is_uint64()`, `is_fp16()` ... `is_fp8e5b16()`: one for each of
    Triton's type names, true for that type alone."""
    for name in DtypeQueries.SINT_TYPES + DtypeQueries.UINT_TYPES + DtypeQueries.FP_TYPES:

        def predicate(self: DtypeQueries, _name: str = name) -> bool:
            return self.triton_name == _name

        predicate.__name__ = f"is_{name}"
        predicate.__doc__ = f"Whether this is Triton's {name}."
        setattr(DtypeQueries, predicate.__name__, predicate)


_add_name_predicates()
