"""Tuples as kernel arguments, as Triton 3.6 takes them: a tuple argument is its elements.

At a launch, parameter `p` given the tuple `(x, (y, None))` is the runtime arguments `p.0` and
`p.1.0` (each typed and specialized as any argument) and the constexpr `p.1.1` (None); the
compiled kernel takes the elements, and in the kernel `p` is the tuple again (`p[0]`,
`len(p)`, unpacking). An empty tuple is a constexpr. A namedtuple's class is the constexpr
`p.type`, so that the kernel's `p.field` reads its fields.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

SEPARATOR = "."
TYPE = "type"
"""The last part of the name of a namedtuple's class (`p.type`, `p.1.type`)."""


def root(name: str) -> str:
    """The parameter a (flattened) argument name belongs to."""
    return name.split(SEPARATOR, 1)[0]


def _path(name: str) -> tuple[int, ...]:
    return tuple(int(i) for i in name.split(SEPARATOR)[1:] if i != TYPE)


def flatten(name: str, value: Any) -> list[tuple[str, Any]]:
    """`(name, value)` for an argument, `(name.i, element)` for the elements of a tuple (and
    `(name.type, cls)` for a namedtuple's class)."""
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
        value = value[i]
    return type(value) if name.endswith(SEPARATOR + TYPE) else value


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
