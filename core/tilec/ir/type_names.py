"""The one table of kernel-argument type names: Triton signature spelling, IR type, NumPy dtype,
`tl` dtype name, `struct` code and DLPack code of every scalar type.

A kernel argument's type travels as text: `tilec.compile(signature={"x": "*fp32"})` and the
launcher's argument inference give Triton's spelling (`*fp32`, `i32`, `bf16`); the frontend turns it
into an IR type (`!tile.ptr<f32>`); the lowering reports parameters back in Triton's spelling; the
GPU drivers pack scalars with a `struct` code. Every such fact lives in `SCALARS` below.

NumPy names are dtype names (`np.dtype(name)`), kept as text so this module needs no NumPy. bf16 and
the float8 types have no NumPy dtype (`numpy` is None): arrays hold their bits (`storage`: uint16,
uint8). torch calls bf16 `bfloat16`, as `tl` does, and the float8 types `float8_e4m3fn` etc.
(`torch_name`); `float8e4b15` has no torch dtype. The float8 formats: `tilec.ir.float8`.
"""

from __future__ import annotations

import attrs

from tilec.ir.types import (
    PointerType,
    Type,
    bf16,
    f8e4m3b15,
    f8e4m3fn,
    f8e4m3fnuz,
    f8e5m2,
    f8e5m2fnuz,
    f16,
    f32,
    f64,
    i1,
    i8,
    i16,
    i32,
    i64,
    u8,
    u16,
    u32,
    u64,
)


@attrs.frozen
class ScalarName:
    """The names of one scalar type."""

    signature: str
    """Triton's signature spelling: `fp32`, `i32`, `bf16`."""
    ir_type: Type
    """The tile IR type."""
    language: str
    """The `tl` dtype's name (`tl.float32`), also torch's dtype name (`torch.float32`) except i1."""
    numpy: str | None
    """The NumPy dtype name (`float32`, `bool`); None for bf16, which NumPy lacks."""
    struct_code: str
    """The `struct` code of a scalar kernel parameter (i1 travels as one byte, bf16 as its bits)."""
    dlpack: tuple[int, int] | None
    """DLPack's (type code, bits): code 0 int, 1 uint, 2 float, 4 bfloat, 6 bool, 10 float8_e4m3fn,
    11 float8_e4m3fnuz, 12 float8_e5m2, 13 float8_e5m2fnuz; None for e4b15, which DLPack lacks."""
    storage: str | None = None
    """The NumPy dtype of an array holding the type's bits, where NumPy lacks the type."""
    torch_name: str | None = None
    """torch's dtype name where it differs from `language` (`float8_e4m3fn`)."""

    @property
    def torch(self) -> str:
        """torch's dtype name (`torch.bool` for i1)."""
        if self.torch_name is not None:
            return self.torch_name
        return "bool" if self.numpy == "bool" else self.language


SCALARS: tuple[ScalarName, ...] = (
    ScalarName("i1", i1, "int1", "bool", "?", (6, 8)),
    ScalarName("i8", i8, "int8", "int8", "b", (0, 8)),
    ScalarName("i16", i16, "int16", "int16", "h", (0, 16)),
    ScalarName("i32", i32, "int32", "int32", "i", (0, 32)),
    ScalarName("i64", i64, "int64", "int64", "q", (0, 64)),
    ScalarName("u8", u8, "uint8", "uint8", "B", (1, 8)),
    ScalarName("u16", u16, "uint16", "uint16", "H", (1, 16)),
    ScalarName("u32", u32, "uint32", "uint32", "I", (1, 32)),
    ScalarName("u64", u64, "uint64", "uint64", "Q", (1, 64)),
    ScalarName("fp16", f16, "float16", "float16", "e", (2, 16)),
    ScalarName("bf16", bf16, "bfloat16", None, "H", (4, 16), storage="uint16"),
    ScalarName("fp32", f32, "float32", "float32", "f", (2, 32)),
    ScalarName("fp64", f64, "float64", "float64", "d", (2, 64)),
    ScalarName("fp8e4nv", f8e4m3fn, "float8e4nv", None, "B", (10, 8), "uint8", "float8_e4m3fn"),
    ScalarName("fp8e5", f8e5m2, "float8e5", None, "B", (12, 8), "uint8", "float8_e5m2"),
    ScalarName("fp8e4b8", f8e4m3fnuz, "float8e4b8", None, "B", (11, 8), "uint8", "float8_e4m3fnuz"),
    ScalarName(
        "fp8e5b16", f8e5m2fnuz, "float8e5b16", None, "B", (13, 8), "uint8", "float8_e5m2fnuz"
    ),
    ScalarName("fp8e4b15", f8e4m3b15, "float8e4b15", None, "B", None, "uint8"),
)

BY_SIGNATURE: dict[str, ScalarName] = {s.signature: s for s in SCALARS}
BY_IR_TYPE: dict[Type, ScalarName] = {s.ir_type: s for s in SCALARS}
SIGNATURE_BY_NUMPY: dict[str, str] = {s.numpy: s.signature for s in SCALARS if s.numpy}
"""NumPy dtype name -> signature spelling (`float32` -> `fp32`)."""
SIGNATURE_BY_TORCH: dict[str, str] = {s.torch: s.signature for s in SCALARS}
"""torch dtype name (without `torch.`) -> signature spelling (`bfloat16` -> `bf16`)."""
SIGNATURE_BY_DLPACK: dict[tuple[int, int], str] = {
    s.dlpack: s.signature for s in SCALARS if s.dlpack is not None
}
"""DLPack (type code, bits) -> signature spelling."""
STRUCT_CODES: dict[str, str] = {s.signature: s.struct_code for s in SCALARS} | {
    str(s.ir_type): s.struct_code for s in SCALARS
}
"""Signature spelling (and IR spelling: `f32`) -> `struct` code of a scalar parameter."""


def parse_signature_type(text: str) -> Type:
    """`*fp32` -> `!tile.ptr<f32>`, `i32` -> `i32`: Triton's signature strings."""
    if text.startswith("*"):
        return PointerType(parse_signature_type(text[1:]))
    scalar = BY_SIGNATURE.get(text)
    if scalar is None:
        raise ValueError(f"unknown signature type {text!r}; expected one of {sorted(BY_SIGNATURE)}")
    return scalar.ir_type


def signature_type(t: Type) -> str:
    """The Triton signature spelling of a parameter type: `*fp32`, `i32`, `u8`, `bf16`, `i1`.

    Raises ValueError for a type no kernel parameter can have.
    """
    if isinstance(t, PointerType):
        return "*" + signature_type(t.pointee)
    scalar = BY_IR_TYPE.get(t)
    if scalar is None:
        raise ValueError(f"kernel parameters cannot have type {t}")
    return scalar.signature


def is_signature_type(text: str) -> bool:
    """Whether `text` is a scalar or pointer type in Triton's spelling (`*fp32`, `i32`, `**i8`)."""
    return text.lstrip("*") in BY_SIGNATURE
