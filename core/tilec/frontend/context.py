"""Values with types as the frontend sees them, and the symbol table."""

from __future__ import annotations

from typing import Any

import attrs

from tilec.ir.core import Value
from tilec.ir.types import PointerType, TensorType, Type, element_type, shape_of


@attrs.define(eq=False)
class TensorValue:
    """An IR value (a scalar or a tensor) in the kernel; constexprs stay plain Python values."""

    value: Value

    @property
    def type(self) -> Type:
        return self.value.type

    @property
    def dtype(self) -> Type:
        """The element type (the type itself for scalars)."""
        return element_type(self.value.type)

    @property
    def shape(self) -> tuple[int, ...]:
        return shape_of(self.value.type)

    @property
    def is_tensor(self) -> bool:
        return isinstance(self.value.type, TensorType)

    @property
    def is_pointer(self) -> bool:
        return isinstance(self.dtype, PointerType)


def is_constexpr(value: Any) -> bool:
    return not isinstance(value, TensorValue)


class Scope:
    """Names bound in the kernel body: `TensorValue`s and constexpr Python values."""

    def __init__(self, names: dict[str, Any] | None = None):
        self.names: dict[str, Any] = dict(names or {})

    def copy(self) -> Scope:
        return Scope(self.names)

    def __contains__(self, name: str) -> bool:
        return name in self.names

    def __getitem__(self, name: str) -> Any:
        return self.names[name]

    def __setitem__(self, name: str, value: Any) -> None:
        self.names[name] = value
