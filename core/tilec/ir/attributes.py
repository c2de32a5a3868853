"""IR attributes: compile-time constants attached to operations, and source locations.

Attributes are frozen value objects. Dialects add parametrized attributes (for example GPU layouts,
`#gpu.blocked<{...}>`) by subclassing `DialectAttr` and registering with `register_attribute`; the
parser finds them by name, so `ir/` never imports a dialect.
"""

from __future__ import annotations

import math
import re
from typing import ClassVar

import attrs

from tilec.ir.types import FloatType, IntegerType, TensorType, Type, f32, i1, i64


class Attribute:
    """Base class of every attribute."""

    def __str__(self) -> str:
        raise NotImplementedError


def format_float(value: float) -> str:
    """Print a float so that parsing gives back the same value, always with a `.` or exponent."""
    if math.isnan(value):
        return "nan"
    if math.isinf(value):
        return "inf" if value > 0 else "-inf"
    text = repr(float(value))
    return text if any(c in text for c in ".en") else text + ".0"


def integer_bounds(type_: IntegerType) -> tuple[int, int]:
    """The values an integer attribute of `type_` may hold: whatever fits its bits read as signed
    or unsigned (`-128` to `255` for `i8`, `-1` to `1` for `i1`), as MLIR's signless integers."""
    return -(1 << (type_.width - 1)), (1 << type_.width) - 1


def format_integer(value: int, type_: IntegerType) -> str:
    if type_ == i1:
        return "true" if value else "false"
    return str(value)


@attrs.frozen(repr=False)
class IntegerAttr(Attribute):
    """An integer constant with its type: `16` (i64, the default), `3 : i32`, `true`/`false` (i1)."""

    value: int
    type: IntegerType = i64

    def __attrs_post_init__(self) -> None:
        low, high = integer_bounds(self.type)
        if not low <= self.value <= high:
            raise ValueError(
                f"integer {self.value} is out of range for {self.type} ({low} to {high})"
            )

    def __str__(self) -> str:
        if self.type in (i64, i1):
            return format_integer(self.value, self.type)
        return f"{self.value} : {self.type}"

    __repr__ = __str__


@attrs.frozen(repr=False)
class FloatAttr(Attribute):
    """A float constant with its type: `1.5 : f32`."""

    value: float
    type: FloatType = f32

    def __eq__(self, other: object) -> bool:
        # NaN attributes compare equal to themselves, so CSE and round-trips treat them as one.
        if not isinstance(other, FloatAttr) or other.type != self.type:
            return False
        return math.copysign(1, self.value) == math.copysign(1, other.value) and (
            self.value == other.value or (math.isnan(self.value) and math.isnan(other.value))
        )

    def __hash__(self) -> int:
        return hash(("float", format_float(self.value), self.type))

    def __str__(self) -> str:
        return f"{format_float(self.value)} : {self.type}"

    __repr__ = __str__


def quote(text: str) -> str:
    escaped = (
        text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n").replace("\t", "\\t")
    )
    return f'"{escaped}"'


@attrs.frozen(repr=False)
class StringAttr(Attribute):
    value: str

    def __str__(self) -> str:
        return quote(self.value)

    __repr__ = __str__


@attrs.frozen(repr=False)
class UnitAttr(Attribute):
    """A flag: present or absent. Printed as `unit` (or as a bare key in attribute dictionaries)."""

    def __str__(self) -> str:
        return "unit"

    __repr__ = __str__


@attrs.frozen(repr=False)
class SymbolRefAttr(Attribute):
    """A reference to a function by name: `@kernel`."""

    name: str

    def __str__(self) -> str:
        return f"@{self.name}"

    __repr__ = __str__


@attrs.frozen(repr=False)
class TypeAttr(Attribute):
    """A type used as an attribute value, e.g. a function signature."""

    type: Type

    def __str__(self) -> str:
        return str(self.type)

    __repr__ = __str__


@attrs.frozen(repr=False)
class ArrayAttr(Attribute):
    elements: tuple[Attribute, ...] = attrs.field(converter=tuple)

    def __str__(self) -> str:
        return "[" + ", ".join(map(str, self.elements)) + "]"

    __repr__ = __str__

    def ints(self) -> list[int]:
        return [e.value for e in self.elements]  # type: ignore[attr-defined]


@attrs.frozen(repr=False)
class DictAttr(Attribute):
    """An ordered dictionary of attributes: `{a = 1, b = "x"}`."""

    items: tuple[tuple[str, Attribute], ...] = attrs.field(converter=tuple)

    def __getitem__(self, key: str) -> Attribute:
        return dict(self.items)[key]

    def get(self, key: str, default: Attribute | None = None) -> Attribute | None:
        return dict(self.items).get(key, default)

    def __str__(self) -> str:
        return format_attr_dict(dict(self.items)) or "{}"

    __repr__ = __str__


@attrs.frozen(repr=False)
class DenseAttr(Attribute):
    """A splat tensor constant: every element equals `value` (`dense<1.0> : tensor<128xf32>`)."""

    value: IntegerAttr | FloatAttr
    type: TensorType

    def __str__(self) -> str:
        inner = str(self.value).split(" : ")[0]
        return f"dense<{inner}> : {self.type}"

    __repr__ = __str__


class DialectAttr(Attribute):
    """A dialect attribute with named parameters, printed `#dialect.name<{key = value, ...}>`.

    Subclasses set `name` (e.g. `"gpu.blocked"`) and are registered with `register_attribute`.
    `from_parameters` builds one from the parsed dictionary and raises `ValueError` with a message
    naming the bad parameter.
    """

    name: ClassVar[str] = ""

    def parameters(self) -> dict[str, Attribute]:
        raise NotImplementedError

    @classmethod
    def from_parameters(cls, params: dict[str, Attribute]) -> DialectAttr:
        raise NotImplementedError

    def __str__(self) -> str:
        return f"#{self.name}<{format_attr_dict(self.parameters()) or '{}'}>"


ATTRIBUTE_REGISTRY: dict[str, type[DialectAttr]] = {}


def register_attribute(cls: type[DialectAttr]) -> type[DialectAttr]:
    if cls.name in ATTRIBUTE_REGISTRY and ATTRIBUTE_REGISTRY[cls.name] is not cls:
        raise ValueError(f"attribute '#{cls.name}' is registered twice")
    ATTRIBUTE_REGISTRY[cls.name] = cls
    return cls


def format_attr_dict(attributes: dict[str, Attribute]) -> str:
    """`{a = 1, flag = unit}`; an empty dictionary prints as the empty string."""
    if not attributes:
        return ""
    return "{" + ", ".join(f"{format_key(k)} = {v}" for k, v in attributes.items()) + "}"


_KEY_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_$.]*")


def format_key(key: str) -> str:
    """An attribute-dictionary key: bare if it reads as an identifier, else quoted."""
    return key if _KEY_RE.fullmatch(key) else quote(key)


# Locations -------------------------------------------------------------------------------------


class Location:
    """Where an operation came from."""


@attrs.frozen(repr=False)
class UnknownLoc(Location):
    def __str__(self) -> str:
        return "loc(unknown)"

    __repr__ = __str__


@attrs.frozen(repr=False)
class FileLineColLoc(Location):
    """`loc("kernel.py":12:5)`: 1-based line and column in a source file."""

    file: str
    line: int
    col: int

    def __str__(self) -> str:
        return f"loc({quote(self.file)}:{self.line}:{self.col})"

    def short(self) -> str:
        return f"{self.file}:{self.line}:{self.col}"

    __repr__ = __str__


UNKNOWN_LOC = UnknownLoc()


def int_attr(value: int, type_: IntegerType = i64) -> IntegerAttr:
    return IntegerAttr(int(value), type_)


def int_array(values: list[int] | tuple[int, ...]) -> ArrayAttr:
    return ArrayAttr(tuple(IntegerAttr(int(v)) for v in values))
