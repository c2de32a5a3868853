"""Triton's block pointers (`tl.make_block_ptr`, `tl.advance`, `tl.load` / `tl.store` of a block
pointer with `boundary_check` and `padding_option`), composed from what every backend has, as
Triton's own `RewriteTensorPointer` pass does for targets without TMA.

A block pointer is a value of the frontend: a base pointer, the parent tensor's shape and strides
(i64 values or Python ints), the block's offsets (i32 values or Python ints), the block shape and
the order (compile-time). `tl.advance` adds to the offsets; a load or store of it is a
`tl.load` / `tl.store` of the block's pointers
`base + sum_d (offset_d + i_d) * stride_d`, computed as the scalar `base + sum_d offset_d *
stride_d` plus the loop-invariant block `sum_d i_d * stride_d` (as the tutorial's
`a_ptrs += BLOCK_K` loops do), masked by `0 <= offset_d + i_d < shape_d` for the dimensions in
`boundary_check`. `order` is checked and describes the memory layout only, as in Triton.

Loops and `if`s carry a block pointer as its parts (`parts`, `with_parts`): `control_flow`
flattens it into scalar loop-carried values and yields, and rebuilds it after."""

from __future__ import annotations

from typing import Any

from tilec.dialects import tile
from tilec.frontend.context import TensorValue
from tilec.frontend.errors import UserError
from tilec.ir.attributes import IntegerAttr
from tilec.ir.types import FloatType, IntegerType, TensorType, Type, i1, i32, i64, is_power_of_two
from tilec.language import constexpr, dtype_of
from tilec.language import tensor as tl_tensor

PADDINGS = ("", "zero", "nan")
"""Triton's `padding_option`s: "" leaves the elements outside the shape undefined (a masked load
without `other`), "zero" and "nan" fill them."""


class BlockPointerValue:
    """A block pointer in a kernel (module doc). Immutable: `tl.advance` makes a new one."""

    def __init__(self, base: TensorValue, shape: tuple, strides: tuple, offsets: tuple,
                 block_shape: tuple[int, ...], order: tuple[int, ...]):  # fmt: skip
        self.base, self.shape, self.strides, self.offsets = base, shape, strides, offsets
        self.block_shape, self.order = block_shape, order

    @property
    def rank(self) -> int:
        return len(self.block_shape)

    @property
    def element_type(self) -> Type:
        return self.base.dtype.pointee  # type: ignore[attr-defined]

    def parts(self) -> list[Any]:
        """Base, shape, strides and offsets: what a loop carries (values or Python ints)."""
        return [self.base, *self.shape, *self.strides, *self.offsets]

    def part_types(self) -> list[Type]:
        return [self.base.type, *[i64] * (2 * self.rank), *[i32] * self.rank]

    def with_parts(self, parts: list[Any]) -> BlockPointerValue:
        n = self.rank
        base, shape = parts[0], tuple(parts[1 : 1 + n])
        strides, offsets = tuple(parts[1 + n : 1 + 2 * n]), tuple(parts[1 + 2 * n :])
        return BlockPointerValue(base, shape, strides, offsets, self.block_shape, self.order)

    def same_kind(self, other: Any) -> bool:
        """Whether `other` is a block pointer a loop or an `if` can carry in the same values."""
        return (
            isinstance(other, BlockPointerValue)
            and other.base.type == self.base.type
            and (other.block_shape, other.order) == (self.block_shape, self.order)
        )

    def _refuse(self, *_: Any) -> Any:
        raise UserError(
            f"a block pointer ({self!r}) has no truth value, number, length or elements",
            "load its block with tl.load(p, boundary_check=...) and compute with that",
        )

    __bool__ = __float__ = __int__ = __index__ = __len__ = __getitem__ = __iter__ = _refuse

    def __repr__(self) -> str:
        element = dtype_of(self.element_type)
        return (
            f"block pointer<{element!r}, block {list(self.block_shape)}, order {list(self.order)}>"
        )


tl_tensor.register(BlockPointerValue)  # Triton's block pointers are `tl.tensor`s too


def materialize(sem: Any, pointer: BlockPointerValue) -> list[TensorValue]:
    """The parts of `pointer` as IR values of `part_types` (Python ints become constants)."""
    return [
        sem.cast(sem.to_value(part, type_), type_)
        for part, type_ in zip(pointer.parts(), pointer.part_types(), strict=True)
    ]


def make(builtins: Any, base: Any, shape: Any, strides: Any, offsets: Any, block_shape: Any,
         order: Any) -> BlockPointerValue:  # fmt: skip
    if isinstance(base, BlockPointerValue):
        raise UserError(
            "tl.make_block_ptr's base must be a pointer, got a block pointer",
            "pass the tensor's pointer argument, or move the block pointer with tl.advance",
        )
    ptr = builtins.value(base)
    if ptr.is_tensor or not ptr.is_pointer:
        raise UserError(
            f"tl.make_block_ptr's base must be a pointer scalar, got {ptr.type}",
            "pass the tensor's pointer argument",
        )
    block = tuple(_constant_list(block_shape, "block_shape"))
    if any(not isinstance(b, int) or isinstance(b, bool) or not is_power_of_two(b) for b in block):
        raise UserError(
            f"tl.make_block_ptr's block_shape {list(block)} must be compile-time powers of two",
            "use power-of-two block sizes; boundary_check masks what lies outside the shape",
        )
    permutation = tuple(_constant_list(order, "order"))
    if sorted(permutation) != list(range(len(permutation))):
        raise UserError(
            f"tl.make_block_ptr's order {list(permutation)} is not a permutation of "
            f"{list(range(len(permutation)))}",
            "give the dimensions from the fastest-varying in memory to the slowest, "
            "e.g. (1, 0) for row-major",
        )
    lists = {
        "shape": _scalar_list(builtins, shape, "shape", i64),
        "strides": _scalar_list(builtins, strides, "strides", i64),
        "offsets": _scalar_list(builtins, offsets, "offsets", i32),
    }
    ranks = {name: len(values) for name, values in lists.items()}
    ranks |= {"block_shape": len(block), "order": len(permutation)}
    if len(set(ranks.values())) != 1 or not block:
        given = ", ".join(f"{name} {rank}" for name, rank in ranks.items())
        raise UserError(
            f"tl.make_block_ptr needs shape, strides, offsets, block_shape and order of one "
            f"rank (at least 1), got {given}"
        )
    return BlockPointerValue(ptr, *(tuple(v) for v in lists.values()), block, permutation)


def advance(builtins: Any, pointer: Any, offsets: Any) -> BlockPointerValue:
    if not isinstance(pointer, BlockPointerValue):
        raise UserError(
            f"tl.advance takes a block pointer (tl.make_block_ptr), got {_describe(pointer)}",
            "add the step to a pointer tensor instead: ptrs += step",
        )
    steps = _scalar_list(builtins, offsets, "tl.advance's offsets", i32)
    if len(steps) != pointer.rank:
        raise UserError(
            f"the block pointer has {pointer.rank} dimensions, tl.advance got {len(steps)} offsets"
        )
    moved = tuple(
        _add(builtins.sem, offset, step)
        for offset, step in zip(pointer.offsets, steps, strict=True)
    )
    return BlockPointerValue(pointer.base, pointer.shape, pointer.strides, moved,
                             pointer.block_shape, pointer.order)  # fmt: skip


def load(builtins: Any, pointer: BlockPointerValue, mask: Any, other: Any, boundary_check: Any,
         padding_option: Any, hints: dict[str, Any]) -> TensorValue:  # fmt: skip
    if mask is not None or other is not None:
        raise UserError(
            "mask and other cannot be given for loading through a block pointer",
            "name the dimensions to check with boundary_check=(0, 1), and what to read outside "
            "the shape with padding_option='zero' or 'nan'",
        )
    padding = _constant(padding_option, "padding_option")
    if padding is None:
        padding = ""
    if padding not in PADDINGS:
        raise UserError(
            f"padding_option {padding!r} is not supported",
            "use '' (undefined), 'zero' or 'nan'",
        )
    if padding == "nan" and not isinstance(pointer.element_type, FloatType):
        raise UserError(
            f"padding_option 'nan' is not supported for integer block pointers "
            f"({pointer.element_type})",
            "use padding_option='zero'",
        )
    checked = _boundary_check(boundary_check, pointer.rank)
    pointers, inside = _access(builtins.sem, pointer, checked)
    fill = None
    if inside is not None and padding:
        fill = float("nan") if padding == "nan" else 0
    return builtins.tl_load(pointers, inside, fill, **hints)


def store(builtins: Any, pointer: BlockPointerValue, value: Any, mask: Any,
          boundary_check: Any, hints: dict[str, Any]) -> None:  # fmt: skip
    if mask is not None:
        raise UserError(
            "mask cannot be given for storing through a block pointer",
            "name the dimensions to check with boundary_check=(0, 1)",
        )
    if isinstance(value, BlockPointerValue):
        raise UserError("a block pointer cannot be stored", "store the block it loads")
    element = pointer.element_type
    stored = builtins.value(value)
    if not isinstance(value, TensorValue) and _kind(stored.dtype) <= _kind(element):
        # a Python number takes the block's element type (an int a float type too)
        stored = builtins.sem.cast(stored, element)
    if not stored.is_tensor:
        stored = builtins.sem.splat(stored, pointer.block_shape)
    if tuple(stored.shape) != pointer.block_shape:
        raise UserError(
            f"the block pointer's block is {list(pointer.block_shape)}, the value stored is "
            f"{list(stored.shape)}"
        )
    if stored.dtype != element:
        raise UserError(
            f"the block pointer's element type is {element}, the value stored is {stored.dtype}",
            f"convert the value first, e.g. with .to({dtype_of(element)!r})",
        )
    checked = _boundary_check(boundary_check, pointer.rank)
    pointers, inside = _access(builtins.sem, pointer, checked)
    builtins.tl_store(pointers, stored, inside, **hints)


def _access(sem: Any, pointer: BlockPointerValue, checked: list[int]) -> tuple[Any, Any]:
    """The block's pointers and, with `checked` dimensions, the mask of its elements inside
    the shape along them (None without)."""
    scalar = pointer.base
    for offset, stride in zip(pointer.offsets, pointer.strides, strict=True):
        if isinstance(offset, int) and isinstance(stride, int):
            if offset * stride:
                scalar = sem.binary("+", scalar, sem.constant(offset * stride, i64))
            continue
        scalar = sem.binary("+", scalar, sem.binary("*", _i64(sem, offset), _i64(sem, stride)))
    block = pointer.block_shape
    steps, mask = None, None
    for axis, (size, stride) in enumerate(zip(block, pointer.strides, strict=True)):
        index = _i64(sem, _placed_range(sem, size, axis, pointer.rank))
        step = index if isinstance(stride, int) and stride == 1 else sem.binary("*", index, stride)
        steps = step if steps is None else sem.binary("+", steps, step)
        if axis in checked:
            inside = _inside(sem, index, size, pointer.offsets[axis], pointer.shape[axis])
            if inside is not None:
                mask = inside if mask is None else sem.binary("&", mask, inside)
    pointers = sem.binary("+", sem.splat(scalar, block), sem.broadcast_to(steps, block))
    if mask is not None:
        mask = sem.broadcast_to(sem.cast(mask, i1), block)
    return pointers, mask


def _inside(sem: Any, index: TensorValue, size: int, offset: Any, extent: Any) -> Any:
    """`0 <= offset + index < extent`, as `-offset <= index < extent - offset` (the block's own
    `index`, 0..size-1, stays loop-invariant); None where it holds at compile time."""
    static = isinstance(offset, int) and isinstance(extent, int)
    if static and offset >= 0 and offset + size <= extent:
        return None
    below = None
    if not (isinstance(offset, int) and offset >= 0):
        negated = -offset if isinstance(offset, int) else sem.negate(_i64(sem, offset))
        below = sem.binary(">=", index, _i64(sem, negated))
    if static:
        limit = _i64(sem, extent - offset)
    else:
        limit = sem.binary("-", _i64(sem, extent), _i64(sem, offset))
    above = sem.binary("<", index, limit)
    return above if below is None else sem.binary("&", below, above)


def _placed_range(sem: Any, size: int, axis: int, rank: int) -> TensorValue:
    """0 .. size-1 along `axis` of a rank-`rank` block (1 along the other dimensions)."""
    attributes = {"start": IntegerAttr(0, i32), "end": IntegerAttr(size, i32)}
    index = sem.create(tile.MakeRangeOp, [], TensorType((size,), i32), **attributes)
    for d in range(rank):
        if d != axis:
            index = sem.expand_dims(index, d)
    return index


def _kind(t: Type) -> int:
    """0 for integers (bool included), 1 for floats: a Python number converts upwards only."""
    return 0 if isinstance(t, IntegerType) else 1


def _add(sem: Any, offset: Any, step: Any) -> Any:
    if isinstance(offset, int) and isinstance(step, int):
        total = offset + step
        if not -(2**31) <= total < 2**31:
            raise UserError(f"the block pointer's offset {total} does not fit in 32 bits")
        return total
    return sem.binary("+", _i32(sem, offset), _i32(sem, step))


def _i64(sem: Any, value: Any) -> TensorValue:
    return sem.cast(sem.to_value(value, i64), i64)


def _i32(sem: Any, value: Any) -> TensorValue:
    return sem.cast(sem.to_value(value, i32), i32)


def _boundary_check(value: Any, rank: int) -> list[int]:
    """Triton's `boundary_check`: dimensions (one int or several), each once, sorted."""
    value = _constant(value, "boundary_check")
    if value is None or (isinstance(value, (tuple, list)) and not value):
        return []
    dims = (
        [_constant(d, "boundary_check") for d in value]
        if isinstance(value, (tuple, list))
        else [value]
    )
    for d in dims:
        if not isinstance(d, int) or isinstance(d, bool) or not 0 <= d < rank:
            raise UserError(
                f"boundary_check {value!r} names a dimension that is not in 0..{rank - 1}",
                "name the block's dimensions to check, e.g. boundary_check=(0, 1)",
            )
    if len(set(dims)) != len(dims):
        raise UserError(f"boundary_check {value!r} names a dimension twice")
    return sorted(dims)


def _constant(value: Any, what: str) -> Any:
    value = value.value if isinstance(value, constexpr) else value
    if isinstance(value, TensorValue):
        raise UserError(f"{what} must be a compile-time constant", "pass it as a tl.constexpr")
    return value


def _constant_list(value: Any, what: str) -> list[Any]:
    value = _constant(value, what)
    items = list(value) if isinstance(value, (tuple, list)) else [value]
    return [_constant(item, what) for item in items]


def _scalar_list(builtins: Any, value: Any, what: str, type_: Type) -> list[Any]:
    """Integers or integer scalars; values converted to `type_` (i64 for shape and strides, i32
    for offsets, as Triton: an i64 offset is rejected), Python ints checked to fit it."""
    value = value.value if isinstance(value, constexpr) else value
    items = list(value) if isinstance(value, (tuple, list)) else [value]
    out = []
    for item in items:
        item = item.value if isinstance(item, constexpr) else item
        if isinstance(item, BlockPointerValue):
            raise UserError(f"{what} takes integers, got a block pointer")
        if isinstance(item, bool) or not isinstance(item, (int, TensorValue)):
            raise UserError(f"{what} takes integers, got {item!r}")
        if isinstance(item, int):
            bits = type_.width  # type: ignore[attr-defined]
            if not -(2 ** (bits - 1)) <= item < 2 ** (bits - 1):
                raise UserError(f"{what}: {item} does not fit in {bits} bits")
            out.append(item)
            continue
        element = item.dtype
        if item.is_tensor or not isinstance(element, IntegerType) or element.width == 1:
            raise UserError(f"{what} takes integer scalars, got {item.type}")
        if type_ == i32 and element.width > 32:
            raise UserError(
                f"block pointers take 32-bit offsets, {what} has a {element} value",
                "convert it with .to(tl.int32), or use pointer arithmetic for 64-bit offsets",
            )
        out.append(builtins.sem.cast(item, type_))
    return out


def _describe(value: Any) -> str:
    if isinstance(value, TensorValue):
        return str(value.type)
    return repr(value)
