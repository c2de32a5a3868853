"""Triton's tensor indexing (`x[None, :]`) and `x.item()`, exactly the set Triton 3.6 accepts.

Triton's `tensor.__getitem__` takes one index or a tuple of them; each is `None` (a new axis of
size 1 at that position) or a slice whose start, stop and step are all None (`:`, the axis kept).
Anything else (an integer, `1:`, `...`) is refused with Triton's words, "unsupported tensor
index". `x.item()` turns a one-element tensor into a scalar (Triton's `_unsplat`); here it is a
reduction of that element, which every backend has.
"""

from __future__ import annotations

from typing import Any

from tilec.dialects import tile
from tilec.frontend.context import TensorValue
from tilec.frontend.errors import UserError
from tilec.language import constexpr
from tilec.language import slice as tl_slice


def _unwrap(value: Any) -> Any:
    return value.value if isinstance(value, constexpr) else value


def _is_full_slice(index: Any) -> bool:
    if not isinstance(index, (slice, tl_slice)):
        return False
    return all(_unwrap(part) is None for part in (index.start, index.stop, index.step))


def _shown(index: Any) -> str:
    if isinstance(index, TensorValue):
        return f"a runtime value of type {index.type}"
    if isinstance(index, tl_slice):
        return f"slice({index.start!r}, {index.stop!r}, {index.step!r})"
    return repr(index)


def subscript(sem: Any, base: TensorValue, index: Any) -> TensorValue:
    """`base[index]`: a None adds an axis of size 1 at its position, a `:` keeps the axis."""
    items = list(index) if isinstance(index, (tuple, list)) else [index]
    result = base
    for position, item in enumerate(items):
        item = _unwrap(item)
        if item is None and position <= len(result.shape):
            result = sem.expand_dims(result, position)
        elif not _is_full_slice(item):
            raise UserError(
                f"unsupported tensor index: {_shown(item)} (as in Triton, tensors take only "
                "None and ':' as indices)",
                "pick elements with tl.where and a reduction, tl.gather, or tl.load of computed "
                "offsets; add axes with x[None, :] or x[:, None]",
            )
    return result


def python_subscript(base: Any, index: Any) -> Any:
    """`base[index]` of a compile-time value (a tuple, a constexpr list or string)."""
    index = _unwrap(index)
    if isinstance(index, tl_slice):
        index = slice(index.start, index.stop, index.step)
    if isinstance(index, TensorValue) or (
        isinstance(index, slice)
        and any(isinstance(p, TensorValue) for p in (index.start, index.stop, index.step))
    ):
        raise UserError(
            f"cannot index {type(base).__name__} with a runtime value",
            "index tuples with compile-time constants (tl.constexpr or literals)",
        )
    try:
        return base[index]
    except (TypeError, IndexError, KeyError) as error:
        raise UserError(f"cannot index {type(base).__name__} with {index!r}: {error}") from None


def item(builtins: Any, x: Any, *args: Any, **kwargs: Any) -> TensorValue:
    """`x.item()`: the one element of `x` as a scalar (a scalar stays as it is)."""
    if args or kwargs:
        raise UserError("tensor.item() takes no arguments")
    value = builtins.value(x)
    if not value.is_tensor:
        return value
    numel = value.type.numel  # type: ignore[attr-defined]
    if numel != 1:
        raise UserError(
            f"tensor.item() needs a single-element tensor, got shape {list(value.shape)} "
            f"(Triton: can only unsplat single-element tensors)",
            "reduce it first, e.g. tl.sum(x) or tl.max(x)",
        )
    bits, restore = builtins.as_bits(value) if value.is_pointer else (value, lambda b: b)
    flat = builtins.sem.reshape(bits, (1,))
    (element,) = builtins._combiner_op(tile.ReduceOp, [flat], 0, lambda lhs, rhs: lhs)
    return restore(element)
