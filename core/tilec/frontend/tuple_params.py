"""Tuples as kernel arguments, as Triton 3.6 takes them: a tuple argument is its elements.

At a launch, parameter `p` given the tuple `(x, (y, None))` is the runtime arguments `p.0` and
`p.1.0` (each typed and specialized as any argument) and the constexpr `p.1.1` (None); the
compiled kernel takes the elements, and in the kernel `p` is the tuple again (`p[0]`,
`len(p)`, unpacking). An empty tuple is a constexpr. A namedtuple's class is the constexpr
`p.type`, so that the kernel's `p.field` reads its fields.

A host-side tensor descriptor (`tilec.tools.tensor_descriptor.TensorDescriptor`) is flattened as
the tuple `(base, shape, strides, DescriptorBlock)`: `d.0` the base pointer, `d.1.i` the shape,
`d.2.i` the strides (i64, the last one the constant 1) and the constexpr `d.3`; the frontend
makes the descriptor again from them (`tilec.frontend.descriptors.from_parameter`).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from tilec.tools.tensor_descriptor import DescriptorBlock, TensorDescriptor

SEPARATOR = "."


@dataclass(frozen=True)
class Constant:
    """An element that is a compile-time constant of every launch (a descriptor's last stride, 1,
    and its `DescriptorBlock`)."""

    value: Any


class Int64(int):
    """An integer element passed as i64 whatever its value (a descriptor's strides, as Triton's)."""


TYPE = "type"
"""The last part of the name of a namedtuple's class (`p.type`, `p.1.type`)."""


def root(name: str) -> str:
    """The parameter a (flattened) argument name belongs to."""
    return name.split(SEPARATOR, 1)[0]


def _path(name: str) -> tuple[int, ...]:
    return tuple(int(i) for i in name.split(SEPARATOR)[1:] if i != TYPE)


def flatten(name: str, value: Any) -> list[tuple[str, Any]]:
    """`(name, value)` for an argument, `(name.i, element)` for the elements of a tuple (and
    `(name.type, cls)` for a namedtuple's class; a tensor descriptor's parts, checked again: a
    pre_hook may have changed it)."""
    if isinstance(value, TensorDescriptor):
        value.__post_init__()
        *strides, _ = value.strides
        return [
            (f"{name}{SEPARATOR}0", value.base),
            *((f"{name}{SEPARATOR}1{SEPARATOR}{i}", size) for i, size in enumerate(value.shape)),
            *((f"{name}{SEPARATOR}2{SEPARATOR}{i}", Int64(s)) for i, s in enumerate(strides)),
            (f"{name}{SEPARATOR}2{SEPARATOR}{len(strides)}", Constant(1)),
            (f"{name}{SEPARATOR}3", Constant(value.kernel_block())),
        ]
    if not isinstance(value, tuple) or not value:
        return [(name, value)]
    pairs = [(f"{name}{SEPARATOR}{TYPE}", type(value))] if hasattr(value, "_fields") else []
    for i, item in enumerate(value):
        pairs.extend(flatten(f"{name}{SEPARATOR}{i}", item))
    return pairs


def element(bound: dict[str, Any], name: str) -> Any:
    """The argument `name` (`p` or `p.0.1`) of the arguments `bound` by parameter."""
    value = bound[root(name)]
    for i in _path(name):
        if isinstance(value, TensorDescriptor):
            value = _descriptor_parts(value)
        value = value[i]
    return type(value) if name.endswith(SEPARATOR + TYPE) else value


DESCRIPTOR_TYPE = re.compile(r"tensordesc<(\w+)\[([\d,\s]+)\]>")
"""Triton's signature type of a descriptor parameter: `tensordesc<fp16[64, 64]>`."""


def expand_descriptors(signature: dict[str, Any], constexprs: dict[str, Any]) -> None:
    """Replace each `tensordesc<dtype[block]>` of `signature` (`tilec.compile`'s, as Triton's
    ASTSource takes it) by the descriptor's elements, as a launch flattens one (zero padding)."""
    for name, text in list(signature.items()):
        match = DESCRIPTOR_TYPE.fullmatch(text) if isinstance(text, str) else None
        if match is None:
            continue
        del signature[name]
        block = tuple(int(size) for size in match[2].split(","))
        signature[f"{name}{SEPARATOR}0"] = f"*{match[1]}"
        for i in range(len(block)):
            signature[f"{name}{SEPARATOR}1{SEPARATOR}{i}"] = "i32"
        for i in range(len(block) - 1):
            signature[f"{name}{SEPARATOR}2{SEPARATOR}{i}"] = "i64"
        constexprs[f"{name}{SEPARATOR}2{SEPARATOR}{len(block) - 1}"] = 1
        constexprs[f"{name}{SEPARATOR}3"] = DescriptorBlock(block, "zero")


def _descriptor_parts(desc: TensorDescriptor) -> tuple:
    return (desc.base, tuple(desc.shape), tuple(desc.strides), desc.kernel_block())


def expand(params: Iterable[str], names: Iterable[str]) -> list[str]:
    """The argument `names` (flattened or not) in the order of `params`, a tuple's elements in
    their order; names of no parameter are left out."""
    by_root: dict[str, list[str]] = {}
    for name in names:
        by_root.setdefault(root(name), []).append(name)
    ordered = []
    for param in params:
        ordered.extend(sorted(by_root.get(param, ()), key=_path))
    return ordered


def rebuild(values: dict[str, Any]) -> Any:
    """The tuple whose flattened elements are `values` (`{"p.0": a, "p.1.0": b}`)."""
    classes = {_path(n): v for n, v in values.items() if n.endswith(SEPARATOR + TYPE)}
    paths = {_path(n): v for n, v in values.items() if not n.endswith(SEPARATOR + TYPE)}

    def build(prefix: tuple[int, ...]) -> tuple:
        size = 1 + max(p[len(prefix)] for p in paths if p[: len(prefix)] == prefix)
        items = []
        for i in range(size):
            path = (*prefix, i)
            items.append(paths[path] if path in paths else build(path))
        return classes[prefix](*items) if prefix in classes else tuple(items)

    return build(())
