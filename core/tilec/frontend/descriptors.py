"""Triton's tensor descriptors (`tl.make_tensor_descriptor`, `desc.load`, `desc.store`,
`tl.load_tensor_descriptor`, `tl.store_tensor_descriptor`), composed from what every backend
has: a descriptor is a value of the frontend (a base pointer, the global shape and strides, the
block shape), and a block access is a masked `tl.load` / `tl.store` of the block's pointers,
elements outside the global shape read as the padding (0, or NaN with `padding_option="nan"`)
and never written, as TMA does. A target that reads descriptors itself (`TENSOR_MAP_LOADS`: TMA
on NVIDIA's sm_90) gets `tile.descriptor_load` / `tile.descriptor_store` where every part of the
descriptor is a kernel parameter or a constant (`claimed_load`), host-side or made in the
kernel: the launch encodes its tensor map from the parameters' values (docs/tma.md). A
descriptor made in the kernel from values it computes gets them too, marked `made` (`_made`):
the target builds its tensor map in the kernel, in global scratch memory from the allocator
given to `tilec.set_allocator`."""

from __future__ import annotations

from typing import Any

from tilec.dialects import arith, tile
from tilec.dialects.func import FuncOp
from tilec.frontend.context import TensorValue
from tilec.frontend.errors import UserError
from tilec.frontend.expressions import TensorMethod
from tilec.ir.attributes import ArrayAttr, IntegerAttr, StringAttr, UnitAttr
from tilec.ir.core import BlockArgument
from tilec.ir.types import PointerType, TensorType, i1, i64, is_power_of_two
from tilec.language import block_type, dtype_of
from tilec.language import tensor_descriptor as tl_tensor_descriptor
from tilec.language.target_info import compile_features
from tilec.tools.tensor_descriptor import DescriptorBlock

PADDINGS = ("zero", "nan")


class TensorDescriptorValue(tl_tensor_descriptor):
    """A tensor descriptor in a kernel: `base` (a pointer), `shape` and `strides` (tuples of one
    value or int a dimension, as Triton's), `block_shape` (ints), `padding` ("zero" or "nan")."""

    def __init__(self, base: TensorValue, shape: tuple, strides: tuple, block_shape: tuple,
                 padding: str):  # fmt: skip
        self.base, self.shape, self.strides = base, shape, strides
        self.block_shape, self.padding = block_shape, padding
        self.host = False
        """Whether a host-side TensorDescriptor argument made it (`from_parameter`)."""

    @property
    def dtype(self) -> Any:
        return dtype_of(self.base.dtype.pointee)  # type: ignore[attr-defined]

    @property
    def block_type(self) -> Any:
        return block_type(self.dtype, list(self.block_shape))

    @property
    def load(self) -> TensorMethod:
        return TensorMethod(self, "load_tensor_descriptor")  # type: ignore[arg-type]

    @property
    def store(self) -> TensorMethod:
        return TensorMethod(self, "store_tensor_descriptor")  # type: ignore[arg-type]

    def __repr__(self) -> str:
        return f"tensor_descriptor<{self.dtype!r}, block {list(self.block_shape)}>"


def make(builtins: Any, base: Any, shape: Any, strides: Any, block_shape: Any,
         padding_option: Any) -> TensorDescriptorValue:  # fmt: skip
    ptr = builtins.value(base)
    if ptr.is_tensor or not ptr.is_pointer:
        raise UserError(
            f"tl.make_tensor_descriptor's base must be a pointer scalar, got {ptr.type}",
            "pass the tensor's pointer argument",
        )
    dims = [_int_list(v, what) for v, what in ((shape, "shape"), (strides, "strides"))]
    block = _int_list(block_shape, "block_shape")
    if not len(dims[0]) == len(dims[1]) == len(block) >= 1:
        raise UserError(
            f"tl.make_tensor_descriptor needs shape, strides and block_shape of one rank, got "
            f"{len(dims[0])}, {len(dims[1])} and {len(block)}"
        )
    if any(not isinstance(b, int) or not is_power_of_two(b) for b in block):
        raise UserError(f"block_shape {list(block)} must be compile-time powers of two")
    pointee = ptr.dtype.pointee  # type: ignore[attr-defined]
    element_bytes = 8 if isinstance(pointee, PointerType) else pointee.width // 8
    if block[-1] * element_bytes < 16:  # Triton's check (TMA moves 16 bytes at least)
        raise UserError(
            "Descriptor block shape must have at least 16 bytes in the last dimension, but got "
            f"{block[-1]} * {element_bytes} = {block[-1] * element_bytes} bytes",
            f"make block_shape[-1] at least {max(16 // max(element_bytes, 1), 1)} elements",
        )
    last = dims[1][-1]
    if not (isinstance(last, int) and last == 1):
        raise UserError(
            "tl.make_tensor_descriptor needs a last stride of 1 (the last dimension "
            f"contiguous), got {last if isinstance(last, int) else 'a runtime value'}",
            "pass 1 as the last stride",
        )
    padding = padding_option.value if hasattr(padding_option, "value") else padding_option
    if padding not in PADDINGS:
        raise UserError(f"padding_option must be 'zero' or 'nan', got {padding!r}")
    return TensorDescriptorValue(ptr, tuple(dims[0]), tuple(dims[1]), tuple(block), padding)


def from_parameter(value: Any) -> Any:
    """A kernel parameter rebuilt from its flattened arguments (`tuple_params.rebuild`), with each
    host-side descriptor's parts `(base, shape, strides, DescriptorBlock)` made the descriptor
    `tl.make_tensor_descriptor` would give."""
    if not isinstance(value, tuple):
        return value
    if len(value) == 4 and isinstance(value[3], DescriptorBlock):
        base, shape, strides, block = value
        desc = TensorDescriptorValue(base, shape, strides, block.block_shape, block.padding)
        desc.host = True
        return desc
    items = [from_parameter(item) for item in value]
    return type(value)(*items) if hasattr(value, "_fields") else tuple(items)


def block_access(builtins: Any, desc: Any, offsets: Any) -> tuple[TensorValue, TensorValue]:
    """The pointers of the block at `offsets` and the mask of its elements inside the shape."""
    if not isinstance(desc, TensorDescriptorValue):
        raise UserError(f"expected a tensor descriptor, got {desc!r}")
    offs = _int_list(offsets, "offsets")
    rank = len(desc.block_shape)
    if len(offs) != rank:
        raise UserError(f"the descriptor has {rank} dimensions, got {len(offs)} offsets")
    sem = builtins.sem
    shape = tuple(desc.block_shape)
    pointers = sem.broadcast_to(desc.base, shape)
    mask = None
    for axis, (offset, size, stride, extent) in enumerate(
        zip(offs, shape, desc.strides, desc.shape, strict=True)
    ):
        index = sem.binary("+", _iota(builtins, size, axis, shape), _scalar(sem, offset))
        inside = sem.binary("&", sem.binary(">=", index, 0),
                            sem.binary("<", index, _scalar(sem, extent)))  # fmt: skip
        mask = inside if mask is None else sem.binary("&", mask, inside)
        step = sem.binary("*", sem.cast(index, i64), sem.cast(_scalar(sem, stride), i64))
        pointers = sem.binary("+", pointers, step)
    assert mask is not None
    return pointers, sem.cast(mask, i1)


def _iota(builtins: Any, size: int, axis: int, shape: tuple[int, ...]) -> TensorValue:
    """0 .. size-1 along `axis`, broadcast to `shape`, made with expand_dims (whose axis info
    keeps the range's contiguity, so that the block's accesses are vectorized)."""
    index = builtins.iota(size, 0, (size,))
    for dim in range(len(shape)):
        if dim != axis:
            index = builtins.sem.expand_dims(index, dim)
    return builtins.sem.broadcast_to(index, shape)


def _scalar(sem: Any, value: Any) -> Any:
    return value if isinstance(value, TensorValue) else sem.constant(value, i64)


def _int_list(value: Any, what: str) -> list:
    value = value.value if hasattr(value, "value") and not isinstance(value, TensorValue) else value
    items = list(value) if isinstance(value, (list, tuple)) else [value]
    out = []
    for item in items:
        item = item.value if hasattr(item, "value") and not isinstance(item, TensorValue) else item
        if isinstance(item, TensorValue) and (item.is_tensor or item.dtype.width == 1):  # type: ignore[attr-defined]
            raise UserError(f"{what} takes integer scalars, got {item.type}")
        if not isinstance(item, (int, TensorValue)) or isinstance(item, bool):
            raise UserError(f"{what} takes integers, got {item!r}")
        out.append(item)
    return out


TENSOR_MAP_LOADS = "tensor_map_loads"
"""The frontend feature (`Backend.frontend_features`) of a target that lowers loads of
descriptors itself (`tile.descriptor_load`: TMA on NVIDIA's sm_90, docs/tma.md)."""


def claimed_load(builtins: Any, desc: Any, offsets: Any, operands: list) -> TensorValue | None:
    """The `tile.descriptor_load` of a descriptor's block where the target claims them
    (`TENSOR_MAP_LOADS`) and every part of the descriptor is a kernel parameter (the last
    stride the constant 1; a constant too in a descriptor made in the kernel: `_claim`); None
    elsewhere (the caller emits the masked `tile.load`).
    `operands` are that load's: pointers, mask, padding."""
    claim = _claim(desc) or _made(builtins.sem, desc)
    if claim is None:
        return None
    attributes, made = claim
    values = [TensorValue(v) for v in operands]
    pointers = values[0]
    result = TensorType(pointers.shape, pointers.dtype.pointee)  # type: ignore[attr-defined]
    coords = _offsets(builtins.sem, offsets)
    return builtins.sem.create(tile.DescriptorLoadOp, [*values, *coords, *made], result,
                               **attributes)  # fmt: skip


def claimed_store(builtins: Any, desc: Any, offsets: Any, pointers: TensorValue, block: Any,
                  mask: TensorValue) -> bool:  # fmt: skip
    """Emit the `tile.descriptor_store` of `block` where the target claims descriptors'
    accesses (as `claimed_load`); whether it did (else the caller emits the masked store)."""
    sem = builtins.sem
    claim = _claim(desc) or _made(sem, desc)
    if claim is None:
        return False
    attributes, made = claim
    pointee = sem.pointee(pointers)
    stored = sem.broadcast_to(sem.cast(sem.to_value(block, pointee), pointee), pointers.shape)
    operands = [pointers, stored, mask, *_offsets(sem, offsets), *made]
    sem.create_op(tile.DescriptorStoreOp, operands, **attributes)
    return True


def _claim(desc: Any) -> tuple[dict[str, Any], list] | None:
    """The attributes of a claimed access of `desc` (module of `claimed_load`) and no extra
    operands, else None: a host descriptor whose parts are kernel parameters, or one made in
    the kernel whose parts are kernel parameters or positive constants (`-c` for the constant
    `c`), marked `in_kernel` (the target proves its alignments from the parameters'
    specialization)."""
    if TENSOR_MAP_LOADS not in compile_features():
        return None
    host = getattr(desc, "host", False)
    base = _parameter(desc.base)
    shape = [_size(size, host) for size in desc.shape]
    strides = [_part(stride, host) for stride in desc.strides[:-1]]
    if base is None or None in shape or None in strides or desc.strides[-1] != 1:
        return None
    attributes = {
        "base_param": IntegerAttr(base, i64),
        "shape_params": ArrayAttr(shape),
        "stride_params": ArrayAttr([IntegerAttr(i, i64) for i in [*strides, -1]]),
        "padding": StringAttr(desc.padding),
    }
    if not host:
        attributes["in_kernel"] = UnitAttr()
    return attributes, []


def _made(sem: Any, desc: Any) -> tuple[dict[str, Any], list] | None:
    """A descriptor made in the kernel whose parts the kernel computes (a base offset by the
    program id, a size minus a parameter, a descriptor made in a loop), where the target
    claims descriptors: marked `made`, with its base, sizes and outer strides (i64) as the
    operands after the offsets, from which the target builds its tensor map in the kernel
    (TMA where the values allow it at run time, else the masked access: docs/tma.md)."""
    if TENSOR_MAP_LOADS not in compile_features() or getattr(desc, "host", False):
        return None
    if desc.strides[-1] != 1:
        return None
    parts = [sem.cast(_scalar(sem, v), i64) for v in (*desc.shape, *desc.strides[:-1])]
    return {"padding": StringAttr(desc.padding), "made": UnitAttr()}, [desc.base, *parts]


def _part(value: Any, host: bool) -> int | None:
    """A size or stride of a claimed descriptor: its parameter index, `-c` for a positive
    constant `c` of an in-kernel descriptor, else None."""
    if isinstance(value, int) and not isinstance(value, bool):
        return None if host or not 0 < value < 2**40 else -value
    index = _parameter(value)
    if index is not None and not host and getattr(value.type, "width", 0) not in (32, 64):
        return None  # an i8 or i16 size: the masked access
    return index


def _size(value: Any, host: bool) -> IntegerAttr | ArrayAttr | None:
    """A size of a claimed descriptor: `_part`'s, or in a descriptor made in the kernel a
    product of parameters and positive constants (the fused-attention tutorial's
    `Z * H * N_CTX`): their `_part`s, each typed as the product (whose width the launch
    wraps it to, as the kernel's multiplication does)."""
    part = _part(value, host)
    if part is not None:
        return IntegerAttr(part, i64)
    factors = None if host else _factors(getattr(value, "value", None))
    if factors is None or len(factors) < 2:
        return None
    return ArrayAttr([IntegerAttr(f, value.type) for f in factors])


def _factors(value: Any) -> list[int] | None:
    """The `_part`s whose product `value` (an i32 or i64 scalar) is: kernel parameters and
    positive constants of its type multiplied together, else None."""
    if value is None or getattr(value.type, "width", 0) not in (32, 64):
        return None
    if isinstance(value, BlockArgument) and isinstance(value.block.parent_op, FuncOp):
        return [value.index]
    op = getattr(value, "op", None)
    if isinstance(op, arith.ConstantOp) and isinstance(op.value, IntegerAttr):
        return [-op.value.value] if 0 < op.value.value < 2 ** (value.type.width - 1) else None
    if isinstance(op, arith.MulIOp) and op.lhs.type == op.rhs.type == value.type:
        lhs, rhs = _factors(op.lhs), _factors(op.rhs)
        return None if lhs is None or rhs is None else lhs + rhs
    return None


def _offsets(sem: Any, offsets: Any) -> list[TensorValue]:
    return [sem.cast(_scalar(sem, o), i64) for o in _int_list(offsets, "offsets")]


def _parameter(value: Any) -> int | None:
    """The kernel parameter index of `value` (an argument of the kernel), else None."""
    ir_value = getattr(value, "value", None)
    if isinstance(ir_value, BlockArgument) and isinstance(ir_value.block.parent_op, FuncOp):
        return ir_value.index
    return None
