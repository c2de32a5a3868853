"""IR types: scalar dtypes, tile pointers, ranked tensors and function types.

Types are frozen `attrs` classes, so they compare and hash by value and can be used as dictionary
keys (the compile cache and CSE rely on that). Each prints itself in the MLIR-like text form that
`tilec.ir.parser` reads back.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import attrs

if TYPE_CHECKING:
    from tilec.ir.attributes import Attribute


class Type:
    """Base class of every IR type."""

    def __str__(self) -> str:
        raise NotImplementedError


@attrs.frozen(repr=False)
class IntegerType(Type):
    """A fixed-width integer: `i1`, `i8`..`i64` (signless/signed) and `u8`..`u64` (unsigned)."""

    width: int
    unsigned: bool = False

    def __str__(self) -> str:
        return f"{'u' if self.unsigned else 'i'}{self.width}"

    __repr__ = __str__


@attrs.frozen(repr=False)
class FloatType(Type):
    """An IEEE-style float: `f16`, `bf16`, `f32`, `f64`."""

    name: str

    @property
    def width(self) -> int:
        return FLOAT_WIDTHS[self.name]

    @property
    def mantissa_bits(self) -> int:
        return {"f16": 10, "bf16": 7, "f32": 23, "f64": 52}[self.name]

    def __str__(self) -> str:
        return self.name

    __repr__ = __str__


FLOAT_WIDTHS = {"f16": 16, "bf16": 16, "f32": 32, "f64": 64}


@attrs.frozen(repr=False)
class Float8Type(Type):
    """An 8-bit float, named as MLIR names them: `f8E4M3FN` (Triton's `float8e4nv`), `f8E5M2`
    (`float8e5`), `f8E4M3FNUZ` (`float8e4b8`), `f8E5M2FNUZ` (`float8e5b16`) and `f8E4M3B15`
    (Triton's own `float8e4b15`). Not a `FloatType`: no arithmetic takes it; values are converted
    with `tile.fp_to_fp` (formats and rounding: `tilec.ir.float8`) and stored as bytes."""

    name: str

    @property
    def width(self) -> int:
        return 8

    def __str__(self) -> str:
        return self.name

    __repr__ = __str__


@attrs.frozen(repr=False)
class PointerType(Type):
    """A pointer to global memory holding `pointee` values: `!tile.ptr<f32>`.

    `address_space` 1 (global) is the default and is not printed.
    """

    pointee: Type
    address_space: int = 1

    def __str__(self) -> str:
        if self.address_space == 1:
            return f"!tile.ptr<{self.pointee}>"
        return f"!tile.ptr<{self.pointee}, {self.address_space}>"

    __repr__ = __str__


@attrs.frozen(repr=False)
class TensorType(Type):
    """A ranked tensor `tensor<AxBxT>`; in gir it carries a layout `tensor<AxBxT, #blocked>`."""

    shape: tuple[int, ...] = attrs.field(converter=tuple)
    element_type: Type
    encoding: Attribute | None = None

    @property
    def rank(self) -> int:
        return len(self.shape)

    @property
    def numel(self) -> int:
        n = 1
        for d in self.shape:
            n *= d
        return n

    def with_element_type(self, element_type: Type) -> TensorType:
        return TensorType(self.shape, element_type, self.encoding)

    def with_shape(self, shape: tuple[int, ...]) -> TensorType:
        return TensorType(shape, self.element_type, None)

    def __str__(self) -> str:
        dims = "".join(f"{d}x" for d in self.shape)
        if self.encoding is None:
            return f"tensor<{dims}{self.element_type}>"
        return f"tensor<{dims}{self.element_type}, {self.encoding}>"

    __repr__ = __str__


@attrs.frozen(repr=False)
class MemDescType(Type):
    """A buffer in shared memory: `!gpu.memdesc<3x64x32xf16>`, a ring of `shape[0]` slots, each
    a `shape[1:]` tile stored as `tilec.lowering.swizzle.SwizzledTile` lays it out, or as its
    `encoding` says (`!gpu.memdesc<3x64x64xf16, #gpu.nvmma_shared<...>>`: wgmma's layout) (gir
    only)."""

    shape: tuple[int, ...] = attrs.field(converter=tuple)
    element_type: Type
    encoding: Any = None

    @property
    def slots(self) -> int:
        return self.shape[0]

    @property
    def tile_shape(self) -> tuple[int, ...]:
        return self.shape[1:]

    def __str__(self) -> str:
        dims = "".join(f"{d}x" for d in self.shape)
        encoding = "" if self.encoding is None else f", {self.encoding}"
        return f"!gpu.memdesc<{dims}{self.element_type}{encoding}>"

    __repr__ = __str__


@attrs.frozen(repr=False)
class FunctionType(Type):
    """The signature of a function: `(i32, !tile.ptr<f32>) -> f32`."""

    inputs: tuple[Type, ...] = attrs.field(converter=tuple)
    results: tuple[Type, ...] = attrs.field(converter=tuple)

    def __str__(self) -> str:
        ins = ", ".join(map(str, self.inputs))
        if len(self.results) == 1 and not isinstance(self.results[0], FunctionType):
            return f"({ins}) -> {self.results[0]}"
        return f"({ins}) -> ({', '.join(map(str, self.results))})"

    __repr__ = __str__


i1 = IntegerType(1)
i8 = IntegerType(8)
i16 = IntegerType(16)
i32 = IntegerType(32)
i64 = IntegerType(64)
u8 = IntegerType(8, unsigned=True)
u16 = IntegerType(16, unsigned=True)
u32 = IntegerType(32, unsigned=True)
u64 = IntegerType(64, unsigned=True)
f16 = FloatType("f16")
bf16 = FloatType("bf16")
f32 = FloatType("f32")
f64 = FloatType("f64")
f8e4m3fn = Float8Type("f8E4M3FN")
f8e5m2 = Float8Type("f8E5M2")
f8e4m3fnuz = Float8Type("f8E4M3FNUZ")
f8e5m2fnuz = Float8Type("f8E5M2FNUZ")
f8e4m3b15 = Float8Type("f8E4M3B15")
FLOAT8_TYPES = (f8e4m3fn, f8e5m2, f8e4m3fnuz, f8e5m2fnuz, f8e4m3b15)

SCALAR_TYPES: dict[str, Type] = {
    str(t): t
    for t in (i1, i8, i16, i32, i64, u8, u16, u32, u64, f16, bf16, f32, f64, *FLOAT8_TYPES)
}


def element_type(t: Type) -> Type:
    """The scalar type of a tensor's elements, or `t` itself for a scalar."""
    return t.element_type if isinstance(t, TensorType) else t


def shape_of(t: Type) -> tuple[int, ...]:
    """The shape of a tensor type, `()` for a scalar."""
    return t.shape if isinstance(t, TensorType) else ()


def like(t: Type, new_element: Type) -> Type:
    """`t` with its element type replaced: a scalar becomes `new_element`, a tensor keeps its shape."""
    if isinstance(t, TensorType):
        return t.with_element_type(new_element)
    return new_element


def is_integer(t: Type) -> bool:
    return isinstance(element_type(t), IntegerType)


def is_float(t: Type) -> bool:
    return isinstance(element_type(t), FloatType)


def is_float8(t: Type) -> bool:
    return isinstance(element_type(t), Float8Type)


def is_pointer(t: Type) -> bool:
    return isinstance(element_type(t), PointerType)


def is_bool(t: Type) -> bool:
    return element_type(t) == i1


def is_power_of_two(n: int) -> bool:
    return n > 0 and n & (n - 1) == 0
