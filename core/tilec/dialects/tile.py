"""`tile.*`: the target-neutral block-level ops (Triton's `tt` dialect).

Tensors here carry no layout; backends assign layouts when lowering to gir. Shape rules are checked
by each op's `verify_()` with messages that give both shapes.
"""

from __future__ import annotations

from tilec.dialects.func import FuncOp
from tilec.dialects.gpu import LayoutEncodingAttr, SliceEncodingAttr
from tilec.ir.attributes import (
    ArrayAttr,
    DenseAttr,
    FloatAttr,
    IntegerAttr,
    StringAttr,
    SymbolRefAttr,
    UnitAttr,
)
from tilec.ir.core import (
    Operation,
    Value,
    VerifyError,
    attr_def,
    operand_def,
    region_def,
    register_op,
    result_def,
)
from tilec.ir.module import ModuleOp
from tilec.ir.traits import (
    BOOL_LIKE,
    INT_LIKE,
    INT_TENSOR,
    NUMERIC_LIKE,
    PTR_LIKE,
    SCALAR,
    TENSOR,
    Elementwise,
    HasParent,
    IsolatedFromAbove,
    IsTerminator,
    MemoryRead,
    MemoryWrite,
    Pure,
    ReadOnly,
)
from tilec.ir.types import (
    Float8Type,
    IntegerType,
    PointerType,
    TensorType,
    Type,
    element_type,
    i32,
    like,
    shape_of,
)


def _shape(t: Type) -> str:
    return "x".join(map(str, shape_of(t))) if isinstance(t, TensorType) else "scalar"


def _bare(t: Type) -> Type:
    """`t` without its layout (gir tensors carry one; shape rules ignore it)."""
    return TensorType(t.shape, t.element_type) if isinstance(t, TensorType) else t


def _encoding(t: Type) -> object:
    return t.encoding if isinstance(t, TensorType) else None


def _check_same_layout(op: Operation, values: list[Value], what: str) -> None:
    """In gir, `values` (the tensors among them) must share one layout."""
    layouts = {_encoding(v.type) for v in values if isinstance(v.type, TensorType)}
    if len(layouts) > 1:
        listed = ", ".join(str(v.type) for v in values if isinstance(v.type, TensorType))
        raise VerifyError(f"{what} must have one layout, got {listed}", op)


def _int(op: Operation, name: str) -> int:
    attr = op.attributes[name]
    assert isinstance(attr, IntegerAttr)
    return attr.value


def _str(op: Operation, name: str) -> str:
    attr = op.attributes[name]
    assert isinstance(attr, StringAttr)
    return attr.value


def _fold_shape_op(op: Operation, constants, *, identity: bool) -> list | None:
    """Shape ops: a splat constant stays a splat of the result type; with `identity`, an op
    whose result type is its source's type folds to the source."""
    if isinstance(constants[0], DenseAttr):
        return [DenseAttr(constants[0].value, op.results[0].type)]
    if identity and op.operands[0].type == op.results[0].type:
        return [op.operands[0]]
    return None


# Program identity ------------------------------------------------------------------------------


class _GridQueryOp(Operation):
    axis = attr_def(IntegerAttr)
    result = result_def()
    traits = (Pure(),)

    def __init__(self, axis: int):
        super().__init__(result_types=[i32], attributes={"axis": IntegerAttr(axis, i32)})

    @property
    def axis_int(self) -> int:
        return _int(self, "axis")

    def verify_(self) -> None:
        if self.axis_int not in (0, 1, 2):
            raise VerifyError(f"axis must be 0, 1 or 2, got {self.axis_int}", self)
        if self.result.type != i32:
            raise VerifyError(f"result must be i32, got {self.result.type}", self)


@register_op
class ProgramIdOp(_GridQueryOp):
    """`%pid = tile.program_id {axis = 0 : i32} : i32`: this program's index along an axis."""

    name = "tile.program_id"


@register_op
class NumProgramsOp(_GridQueryOp):
    """The number of programs launched along an axis."""

    name = "tile.num_programs"


# Tensor creation and shape manipulation --------------------------------------------------------


@register_op
class MakeRangeOp(Operation):
    """`tile.make_range {start = 0 : i32, end = 1024 : i32} : tensor<1024xi32>`: start..end-1."""

    name = "tile.make_range"
    start = attr_def(IntegerAttr)
    end = attr_def(IntegerAttr)
    result = result_def(INT_TENSOR)
    traits = (Pure(),)

    def __init__(self, start: int, end: int):
        super().__init__(
            result_types=[TensorType((end - start,), i32)],
            attributes={"start": IntegerAttr(start, i32), "end": IntegerAttr(end, i32)},
        )

    @property
    def start_int(self) -> int:
        return _int(self, "start")

    @property
    def end_int(self) -> int:
        return _int(self, "end")

    def verify_(self) -> None:
        start, end = self.start_int, self.end_int
        expected = TensorType((end - start,), i32)
        if end <= start:
            raise VerifyError(f"end ({end}) must be greater than start ({start})", self)
        if _bare(self.result.type) != expected:
            raise VerifyError(f"result must be {expected}, got {self.result.type}", self)


@register_op
class SplatOp(Operation):
    """`tile.splat %x : tensor<128xf32>`: a tensor whose every element is the scalar `%x`."""

    name = "tile.splat"
    source = operand_def(SCALAR)
    result = result_def(TENSOR)
    traits = (Pure(),)

    def fold(self, constants):
        if isinstance(constants[0], (IntegerAttr, FloatAttr)):
            return [DenseAttr(constants[0], self.result.type)]
        return None

    def verify_(self) -> None:
        if self.result.type.element_type != self.source.type:  # type: ignore[attr-defined]
            raise VerifyError(
                f"result element type must be {self.source.type}, got {self.result.type}", self
            )


@register_op
class BroadcastOp(Operation):
    """Broadcast dimensions of size 1 to a larger size (same rank)."""

    name = "tile.broadcast"
    source = operand_def(TENSOR)
    result = result_def(TENSOR)
    traits = (Pure(),)

    def fold(self, constants):
        return _fold_shape_op(self, constants, identity=True)

    def verify_(self) -> None:
        src, dst = self.source.type, self.result.type
        if src.element_type != dst.element_type or src.rank != dst.rank:  # type: ignore[attr-defined]
            raise VerifyError(
                f"cannot broadcast {src} to {dst}: element type and rank must match", self
            )
        for a, b in zip(src.shape, dst.shape, strict=True):  # type: ignore[attr-defined]
            if a not in (1, b):
                raise VerifyError(
                    f"cannot broadcast shape {_shape(src)} to {_shape(dst)}: only dimensions of "
                    "size 1 broadcast",
                    self,
                )
        _check_same_layout(self, [self.source, self.result], "source and result")


@register_op
class ExpandDimsOp(Operation):
    """Insert a dimension of size 1 at `axis` (`x[:, None]`)."""

    name = "tile.expand_dims"
    source = operand_def(TENSOR)
    axis = attr_def(IntegerAttr)
    result = result_def(TENSOR)
    traits = (Pure(),)

    @property
    def axis_int(self) -> int:
        return _int(self, "axis")

    def fold(self, constants):
        return _fold_shape_op(self, constants, identity=False)

    def verify_(self) -> None:
        src = self.source.type
        axis = self.axis_int
        if not 0 <= axis <= src.rank:  # type: ignore[attr-defined]
            raise VerifyError(f"axis {axis} is out of range for {src}", self)
        shape = list(src.shape)  # type: ignore[attr-defined]
        shape.insert(axis, 1)
        expected = TensorType(tuple(shape), src.element_type)  # type: ignore[attr-defined]
        if _bare(self.result.type) != expected:
            raise VerifyError(f"result must be {expected}, got {self.result.type}", self)
        src_layout, layout = _encoding(src), _encoding(self.result.type)
        if src_layout is None and layout is None:
            return
        if getattr(src_layout, "dim", None) != axis or getattr(src_layout, "parent", 0) != layout:
            raise VerifyError(
                f"source layout must be the slice along dimension {axis} of the result's layout, "
                f"got {src} and {self.result.type}",
                self,
            )


@register_op
class ReshapeOp(Operation):
    """Reshape to another shape with the same number of elements (row-major order)."""

    name = "tile.reshape"
    source = operand_def(TENSOR)
    result = result_def(TENSOR)
    traits = (Pure(),)

    def fold(self, constants):
        return _fold_shape_op(self, constants, identity=True)

    def verify_(self) -> None:
        src, dst = self.source.type, self.result.type
        if src.element_type != dst.element_type or src.numel != dst.numel:  # type: ignore[attr-defined]
            raise VerifyError(
                f"cannot reshape {src} to {dst}: element type and number of elements must match",
                self,
            )


@register_op
class TransOp(Operation):
    """Permute dimensions: result dimension i is source dimension `order[i]`."""

    name = "tile.trans"
    source = operand_def(TENSOR)
    order = attr_def(ArrayAttr)
    result = result_def(TENSOR)
    traits = (Pure(),)

    @property
    def order_ints(self) -> list[int]:
        attr = self.attributes["order"]
        assert isinstance(attr, ArrayAttr)
        return attr.ints()

    def fold(self, constants):
        order = self.order_ints
        return _fold_shape_op(self, constants, identity=order == sorted(order))

    def verify_(self) -> None:
        src = self.source.type
        order = self.order_ints
        if sorted(order) != list(range(src.rank)):  # type: ignore[attr-defined]
            raise VerifyError(
                f"order {order} is not a permutation of the dimensions of {src}", self
            )
        expected = TensorType(tuple(src.shape[i] for i in order), src.element_type)  # type: ignore[attr-defined]
        if _bare(self.result.type) != expected:
            raise VerifyError(f"result must be {expected}, got {self.result.type}", self)


# Pointers and memory ---------------------------------------------------------------------------


@register_op
class AddPtrOp(Operation):
    """`%q = tile.addptr %p, %offsets : tensor<1024x!tile.ptr<f32>>`: offsets count elements."""

    name = "tile.addptr"
    ptr = operand_def(PTR_LIKE)
    offset = operand_def(INT_LIKE)
    result = result_def(PTR_LIKE)
    traits = (Pure(), Elementwise())

    def verify_(self) -> None:
        if self.result.type != self.ptr.type:
            raise VerifyError(
                f"result type {self.result.type} must be the pointer type {self.ptr.type}", self
            )


@register_op
class IntToPtrOp(Operation):
    """An integer address as a pointer (`tl.int64` to `tl.pointer_type`)."""

    name = "tile.int_to_ptr"
    source = operand_def(INT_LIKE)
    result = result_def(PTR_LIKE)
    traits = (Pure(), Elementwise())


@register_op
class PtrToIntOp(Operation):
    """A pointer's address as an i64."""

    name = "tile.ptr_to_int"
    source = operand_def(PTR_LIKE)
    result = result_def(INT_LIKE)
    traits = (Pure(), Elementwise())


def _check_memory_operands(op: Operation, ptr: Value, value_type: Type, mask: Value | None) -> None:
    expected = like(ptr.type, element_type(ptr.type).pointee)  # type: ignore[attr-defined]
    if value_type != expected:
        raise VerifyError(f"value type {value_type} does not match the pointer type {ptr.type}", op)
    if mask is not None and shape_of(mask.type) != shape_of(ptr.type):
        raise VerifyError(
            f"mask shape {_shape(mask.type)} does not match the pointer shape {_shape(ptr.type)}",
            op,
        )
    if mask is not None:
        _check_same_layout(op, [ptr, mask], "pointer and mask")


LOAD_CACHE_MODIFIERS = ("", ".ca", ".cg", ".cs", ".cv")
STORE_CACHE_MODIFIERS = ("", ".wb", ".cg", ".cs", ".wt")
"""The PTX cache operators of loads and of stores (`tl.load` takes Triton's `.ca`, `.cg`, `.cv`)."""
EVICTION_POLICIES = ("", "evict_first", "evict_last", "evict_normal")


def check_choice(op: Operation, key: str, choices: tuple[str, ...]) -> None:
    attr = op.attributes.get(key)
    if attr is not None and attr.value not in choices:  # type: ignore[attr-defined]
        raise VerifyError(
            f"{key} '{attr.value}' is not one of {', '.join(repr(c) for c in choices)}",
            op,  # type: ignore[attr-defined]
        )


@register_op
class LoadOp(Operation):
    """`%v = tile.load %ptrs, %mask, %other : tensor<1024xf32>`; masked-off lanes give `%other`
    (undefined if absent)."""

    name = "tile.load"
    ptr = operand_def(PTR_LIKE)
    mask = operand_def(BOOL_LIKE, optional=True)
    other = operand_def(optional=True)
    cache = attr_def(StringAttr, optional=True)
    eviction = attr_def(StringAttr, optional=True)
    volatile = attr_def(UnitAttr, optional=True)
    result = result_def()
    traits = (ReadOnly(), MemoryRead())

    def verify_(self) -> None:
        _check_memory_operands(self, self.ptr, self.result.type, self.mask)
        other = self.other
        if other is not None and other.type != self.result.type:
            raise VerifyError(
                f"other type {other.type} must be the result type {self.result.type}", self
            )
        check_choice(self, "cache", LOAD_CACHE_MODIFIERS)
        check_choice(self, "eviction", EVICTION_POLICIES)


@register_op
class DescriptorLoadOp(Operation):
    """`%v = tile.descriptor_load %ptrs, %mask, %other, %offsets... {base_param, shape_params,
    stride_params, padding}`: a `desc.load` of a tensor descriptor, for a target that
    claims them (`Backend.frontend_features`: `tensor_map_loads`; docs/tma.md). The operands are
    those of the `tile.load` it stands for (the block's pointers, in-bounds mask, the padding),
    laid out and lowered as that load wherever the target does not take it, then the block's
    offsets (scalars, outermost first). The attributes name the kernel parameters the
    descriptor's base, sizes and strides are (indices; -c: the constant c, as the last stride
    1), from which the launch encodes the tensor map; `in_kernel`: `tl.make_tensor_descriptor`
    made it (constants allowed, its alignments not checked by a host `TensorDescriptor`).
    `made` instead of the three: a descriptor made in the kernel whose parts it computes; the
    operands after the offsets are its base (a pointer), sizes and outer strides (i64), from
    which the target builds the tensor map in the kernel (`made_parts`)."""

    name = "tile.descriptor_load"
    parts = operand_def(variadic=True)
    base_param = attr_def(IntegerAttr, optional=True)
    shape_params = attr_def(ArrayAttr, optional=True)
    stride_params = attr_def(ArrayAttr, optional=True)
    padding = attr_def(StringAttr)
    in_kernel = attr_def(UnitAttr, optional=True)
    made = attr_def(UnitAttr, optional=True)
    result = result_def()
    traits = (ReadOnly(), MemoryRead())

    @property
    def ptr(self) -> Value:
        return self.operands[0]

    @property
    def mask(self) -> Value:
        return self.operands[1]

    @property
    def other(self) -> Value:
        return self.operands[2]

    @property
    def offsets(self) -> list[Value]:
        return list(self.operands[3 : 3 + len(shape_of(self.result.type))])

    @property
    def made_parts(self) -> list[Value]:
        """A `made` descriptor's base, sizes and outer strides (none elsewhere)."""
        return list(self.operands[3 + len(shape_of(self.result.type)) :])

    def verify_(self) -> None:
        if len(self.operands) < 4:
            raise VerifyError("expected pointers, mask, padding and one offset a dimension", self)
        _check_memory_operands(self, self.ptr, self.result.type, self.mask)
        if self.other.type != self.result.type:
            raise VerifyError(f"padding type {self.other.type} must be {self.result.type}", self)
        _check_descriptor_parts(self, shape_of(self.result.type))


@register_op
class DescriptorStoreOp(Operation):
    """`tile.descriptor_store %ptrs, %values, %mask, %offsets... {base_param, shape_params,
    stride_params, padding}`: a `desc.store` of a host-side tensor descriptor, for a target that
    claims them (`tensor_map_loads`, as `tile.descriptor_load`): the operands of the masked
    `tile.store` it stands for, then the block's offsets; the attributes as the load's."""

    name = "tile.descriptor_store"
    parts = operand_def(variadic=True)
    base_param = attr_def(IntegerAttr, optional=True)
    shape_params = attr_def(ArrayAttr, optional=True)
    stride_params = attr_def(ArrayAttr, optional=True)
    padding = attr_def(StringAttr)
    in_kernel = attr_def(UnitAttr, optional=True)
    made = attr_def(UnitAttr, optional=True)
    traits = (MemoryWrite(),)

    @property
    def ptr(self) -> Value:
        return self.operands[0]

    @property
    def value(self) -> Value:
        return self.operands[1]

    @property
    def mask(self) -> Value:
        return self.operands[2]

    @property
    def offsets(self) -> list[Value]:
        return list(self.operands[3 : 3 + len(shape_of(self.value.type))])

    @property
    def made_parts(self) -> list[Value]:
        """As `DescriptorLoadOp.made_parts`."""
        return list(self.operands[3 + len(shape_of(self.value.type)) :])

    def verify_(self) -> None:
        if len(self.operands) < 4:
            raise VerifyError("expected pointers, values, mask and one offset a dimension", self)
        _check_memory_operands(self, self.ptr, self.value.type, self.mask)
        _check_descriptor_parts(self, shape_of(self.value.type))


def _check_descriptor_parts(op: Operation, shape: tuple[int, ...]) -> None:
    rank = len(shape)
    attrs = op.attributes
    offsets = op.operands[3 : 3 + rank]
    if "made" in attrs:  # base, sizes, outer strides: operands
        made = op.operands[3 + rank :]
        if len(made) != 2 * rank or not isinstance(made[0].type, PointerType):
            raise VerifyError(
                f"a made descriptor of rank {rank} needs its base pointer, {rank} sizes and "
                f"{rank - 1} strides after the offsets; got {len(made)} operands",
                op,
            )
        sizes = [rank, rank]
    else:
        if any(k not in attrs for k in ("base_param", "shape_params", "stride_params")):
            raise VerifyError("expected base_param, shape_params and stride_params, or made", op)
        sizes = [len(attrs["shape_params"].elements), len(attrs["stride_params"].elements)]  # type: ignore[attr-defined]
        offsets = op.operands[3:]
    if len(offsets) != rank or sizes != [rank, rank]:
        raise VerifyError(
            f"a block of rank {rank} needs {rank} offsets, sizes and strides; got "
            f"{len(offsets)}, {sizes[0]} and {sizes[1]}",
            op,
        )
    if any(isinstance(o.type, TensorType) for o in offsets):
        raise VerifyError("offsets are scalars", op)
    check_choice(op, "padding", ("zero", "nan"))


@register_op
class StoreOp(Operation):
    """`tile.store %ptrs, %values, %mask`: writes where the mask is true."""

    name = "tile.store"
    ptr = operand_def(PTR_LIKE)
    value = operand_def()
    mask = operand_def(BOOL_LIKE, optional=True)
    cache = attr_def(StringAttr, optional=True)
    eviction = attr_def(StringAttr, optional=True)
    traits = (MemoryWrite(),)

    def verify_(self) -> None:
        _check_memory_operands(self, self.ptr, self.value.type, self.mask)
        check_choice(self, "cache", STORE_CACHE_MODIFIERS)
        check_choice(self, "eviction", EVICTION_POLICIES)


ATOMIC_KINDS = ("add", "max", "min", "umax", "umin", "and", "or", "xor", "xchg")
MEMORY_SEMANTICS = ("relaxed", "acquire", "release", "acq_rel")
MEMORY_SCOPES = ("cta", "gpu", "sys")


@register_op
class AtomicRMWOp(Operation):
    """`%old = tile.atomic_rmw %ptrs, %vals, %mask {kind = "add", sem = "acq_rel", scope = "gpu"}`.

    Returns the values memory held before; `add`/`max`/`min` on float pointers are float atomics.
    """

    name = "tile.atomic_rmw"
    ptr = operand_def(PTR_LIKE)
    value = operand_def(NUMERIC_LIKE)
    mask = operand_def(BOOL_LIKE, optional=True)
    kind = attr_def(StringAttr)
    sem = attr_def(StringAttr)
    scope = attr_def(StringAttr)
    result = result_def(NUMERIC_LIKE)
    traits = (MemoryRead(), MemoryWrite())

    @property
    def kind_str(self) -> str:
        return _str(self, "kind")

    @property
    def sem_str(self) -> str:
        return _str(self, "sem")

    @property
    def scope_str(self) -> str:
        return _str(self, "scope")

    def verify_(self) -> None:
        _check_memory_operands(self, self.ptr, self.value.type, self.mask)
        if self.result.type != self.value.type:
            raise VerifyError(
                f"result type must be {self.value.type}, got {self.result.type}", self
            )
        check_choice(self, "kind", ATOMIC_KINDS)
        check_choice(self, "sem", MEMORY_SEMANTICS)
        check_choice(self, "scope", MEMORY_SCOPES)
        kind = self.kind_str
        if kind in ("and", "or", "xor", "umax", "umin") and not isinstance(
            element_type(self.value.type), IntegerType
        ):
            raise VerifyError(f"atomic '{kind}' needs integer values, got {self.value.type}", self)


@register_op
class AtomicCASOp(Operation):
    """`%old = tile.atomic_cas %ptrs, %cmp, %new {sem = "acq_rel", scope = "gpu"}`."""

    name = "tile.atomic_cas"
    ptr = operand_def(PTR_LIKE)
    compare = operand_def(NUMERIC_LIKE)
    value = operand_def(NUMERIC_LIKE)
    sem = attr_def(StringAttr)
    scope = attr_def(StringAttr)
    result = result_def(NUMERIC_LIKE)
    traits = (MemoryRead(), MemoryWrite())

    @property
    def sem_str(self) -> str:
        return _str(self, "sem")

    @property
    def scope_str(self) -> str:
        return _str(self, "scope")

    def verify_(self) -> None:
        _check_memory_operands(self, self.ptr, self.value.type, None)
        if not self.compare.type == self.value.type == self.result.type:
            raise VerifyError(
                f"compare, value and result must have one type, got {self.compare.type}, "
                f"{self.value.type}, {self.result.type}",
                self,
            )
        check_choice(self, "sem", MEMORY_SEMANTICS)
        check_choice(self, "scope", MEMORY_SCOPES)


# Reductions, scans and dot ---------------------------------------------------------------------


def _check_combiner(op: Operation, terminator_class: type[Operation]) -> list[Type]:
    """Check the combiner region: 2N scalar args of the operands' element types, N returned."""
    element_types = [element_type(v.type) for v in op.operands]
    block = op.regions[0].block
    expected = element_types + element_types
    if [a.type for a in block.args] != expected:
        raise VerifyError(
            f"combiner arguments ({', '.join(str(a.type) for a in block.args)}) must be "
            f"({', '.join(map(str, expected))})",
            op,
        )
    terminator = block.last_op
    if not isinstance(terminator, terminator_class):
        raise VerifyError(f"combiner must end with '{terminator_class.name}'", op)
    returned = [v.type for v in terminator.operands]
    if returned != element_types:
        raise VerifyError(
            f"combiner returns ({', '.join(map(str, returned))}) but "
            f"({', '.join(map(str, element_types))}) is expected",
            op,
        )
    return element_types


def _check_same_shapes(op: Operation) -> tuple[int, ...]:
    shapes = {shape_of(v.type) for v in op.operands}
    if (
        not op.operands
        or any(not isinstance(v.type, TensorType) for v in op.operands)
        or len(shapes) != 1
    ):
        raise VerifyError("operands must be tensors of one shape", op)
    _check_same_layout(op, list(op.operands), "operands")
    return shapes.pop()


@register_op
class ReduceOp(Operation):
    """`%r = tile.reduce %x {axis = 0 : i32} : f32 { ^bb0(%a: f32, %b: f32): ... tile.reduce.return %s }`.

    Reduces N tensors of one shape along `axis` together (argmax reduces values and indices).
    The combiner is a scalar function of its arguments: it may not use values from outside.
    """

    name = "tile.reduce"
    srcs = operand_def(TENSOR, variadic=True)
    axis = attr_def(IntegerAttr)
    results_ = result_def(variadic=True)
    combiner = region_def()
    traits = (Pure(), IsolatedFromAbove())

    @property
    def axis_int(self) -> int:
        return _int(self, "axis")

    def verify_(self) -> None:
        shape = _check_same_shapes(self)
        axis = self.axis_int
        if not 0 <= axis < len(shape):
            raise VerifyError(
                f"axis {axis} is out of range for shape {'x'.join(map(str, shape))}", self
            )
        element_types = _check_combiner(self, ReduceReturnOp)
        reduced = shape[:axis] + shape[axis + 1 :]
        layout = _encoding(self.operands[0].type)
        if layout is not None and not isinstance(layout, LayoutEncodingAttr):
            raise VerifyError(
                f"reduces a tensor of encoding {layout}, which is no register layout; convert "
                "it to one (gpu.convert_layout) first",
                self,
            )
        if reduced and layout is not None:
            try:
                layout = SliceEncodingAttr(axis, layout)
            except ValueError as error:  # a layout of another rank than the tensor's
                raise VerifyError(f"cannot slice the operand's layout: {error}", self) from None
        else:
            layout = None
        expected = [TensorType(reduced, t, layout) if reduced else t for t in element_types]  # type: ignore[arg-type]
        if [r.type for r in self.results] != expected:
            raise VerifyError(
                f"results must be ({', '.join(map(str, expected))}), got "
                f"({', '.join(str(r.type) for r in self.results)})",
                self,
            )


@register_op
class ReduceReturnOp(Operation):
    """Ends a `tile.reduce` combine region with the combined value(s)."""

    name = "tile.reduce.return"
    values = operand_def(variadic=True)
    traits = (IsTerminator(), Pure(), HasParent(ReduceOp))


@register_op
class ScanOp(Operation):
    """Inclusive scan along `axis` with a combiner region (`tl.cumsum`, `tl.associative_scan`)."""

    name = "tile.scan"
    srcs = operand_def(TENSOR, variadic=True)
    axis = attr_def(IntegerAttr)
    reverse = attr_def(IntegerAttr, optional=True)
    results_ = result_def(variadic=True)
    combiner = region_def()
    traits = (Pure(), IsolatedFromAbove())

    @property
    def is_reverse(self) -> bool:
        return "reverse" in self.attributes and bool(_int(self, "reverse"))

    @property
    def axis_int(self) -> int:
        return _int(self, "axis")

    def verify_(self) -> None:
        shape = _check_same_shapes(self)
        axis = self.axis_int
        if not 0 <= axis < len(shape):
            raise VerifyError(
                f"axis {axis} is out of range for shape {'x'.join(map(str, shape))}", self
            )
        _check_combiner(self, ScanReturnOp)
        if [r.type for r in self.results] != [v.type for v in self.operands]:
            raise VerifyError("results must have the operands' types", self)


@register_op
class ScanReturnOp(Operation):
    """Ends a `tile.scan` combine region with the combined value(s)."""

    name = "tile.scan.return"
    values = operand_def(variadic=True)
    traits = (IsTerminator(), Pure(), HasParent(ScanOp))


@register_op
class DotOp(Operation):
    """`%d = tile.dot %a, %b, %acc : tensor<MxNxf32>`: `a @ b + acc`, accumulating in acc's type.

    `max_num_imprecise_acc` (Triton's) marks a `tl.dot` of float8 inputs: `a` and `b` are their
    exact conversions to f16 (`tile.fp_to_fp`), and a target that multiplies the float8 values
    directly (Hopper's wgmma) may sum that many products along K in its reduced-precision
    accumulation before adding them to `acc`; elsewhere the dot is exact in f32, as if it were 0.
    A target's matrix-unit rewrite may then give the dot the float8 tensors themselves (NVIDIA's
    mma.sync on sm_89 and later), of one format or two."""

    name = "tile.dot"
    a = operand_def(TENSOR)
    b = operand_def(TENSOR)
    acc = operand_def(TENSOR)
    input_precision = attr_def(StringAttr, optional=True)
    max_num_imprecise_acc = attr_def(IntegerAttr, optional=True)
    result = result_def(TENSOR)
    traits = (Pure(),)

    @property
    def precision(self) -> str:
        """`input_precision` ("tf32", "tf32x3" or "ieee"); "ieee" where absent."""
        attr = self.attributes.get("input_precision")
        return "ieee" if attr is None else attr.value  # type: ignore[attr-defined]

    def verify_(self) -> None:
        a, b, acc = self.a.type, self.b.type, self.acc.type
        if not a.rank == b.rank == acc.rank == 2:  # type: ignore[attr-defined]
            raise VerifyError(f"operands must be 2-D tensors, got {a}, {b}, {acc}", self)
        (m, k), (k2, n) = a.shape, b.shape  # type: ignore[attr-defined]
        if k != k2 or acc.shape != (m, n):  # type: ignore[attr-defined]
            raise VerifyError(
                f"shapes do not compose: {_shape(a)} @ {_shape(b)} + {_shape(acc)}", self
            )
        float8 = all(isinstance(t.element_type, Float8Type) for t in (a, b))  # type: ignore[attr-defined]
        if a.element_type != b.element_type and not float8:  # type: ignore[attr-defined]
            raise VerifyError(
                f"a and b must have one element type (or both be float8), got {a} and {b}", self
            )
        if self.result.type != acc:
            raise VerifyError(
                f"result type must be the accumulator's {acc}, got {self.result.type}", self
            )
        if self.precision not in ("ieee", "tf32", "tf32x3"):
            raise VerifyError("input_precision must be 'ieee', 'tf32' or 'tf32x3'", self)


# Calls, returns and debugging ------------------------------------------------------------------


@register_op
class CallOp(Operation):
    """`%r = tile.call %a, %b {callee = @helper} : f32`: call another function of the module."""

    name = "tile.call"
    args = operand_def(variadic=True)
    callee = attr_def(SymbolRefAttr)
    results_ = result_def(variadic=True)

    @property
    def callee_name(self) -> str:
        attr = self.attributes["callee"]
        assert isinstance(attr, SymbolRefAttr)
        return attr.name

    def verify_(self) -> None:
        module = self.parent_op
        while module is not None and not isinstance(module, ModuleOp):
            module = module.parent_op
        if module is None:
            return
        target_name = self.callee_name
        target = module.lookup(target_name)
        if target is None:
            raise VerifyError(f"calls @{target_name}, which is not a function of this module", self)
        signature = target.signature
        arg_types = [v.type for v in self.operands]
        if arg_types != list(signature.inputs) or [r.type for r in self.results] != list(
            signature.results
        ):
            raise VerifyError(
                f"call types ({', '.join(map(str, arg_types))}) -> "
                f"({', '.join(str(r.type) for r in self.results)}) do not match @{target_name}'s "
                f"signature {signature}",
                self,
            )


@register_op
class ReturnOp(Operation):
    """Ends a function, returning its values."""

    name = "tile.return"
    values = operand_def(variadic=True)
    traits = (IsTerminator(), HasParent(FuncOp))

    def verify_(self) -> None:
        func = self.parent_op
        expected = list(func.signature.results)  # type: ignore[union-attr]
        if [v.type for v in self.operands] != expected:
            raise VerifyError(
                f"returns ({', '.join(str(v.type) for v in self.operands)}) but the function "
                f"returns ({', '.join(map(str, expected))})",
                self,
            )


@register_op
class PrintOp(Operation):
    """`tile.print %x {prefix = "x: "}`: print from every program (`tl.device_print`)."""

    name = "tile.print"
    values = operand_def(variadic=True)
    prefix = attr_def(StringAttr)
    hex = attr_def(UnitAttr, optional=True)

    @property
    def prefix_str(self) -> str:
        return _str(self, "prefix")

    @property
    def is_hex(self) -> bool:
        return "hex" in self.attributes


@register_op
class BarrierOp(Operation):
    """Synchronize the threads of a program (`tl.debug_barrier`)."""

    name = "tile.barrier"


@register_op
class AssertOp(Operation):
    """`tile.assert %cond {message = "..."}`: abort the kernel where `%cond` is false."""

    name = "tile.assert"
    condition = operand_def(BOOL_LIKE)
    message = attr_def(StringAttr)

    @property
    def message_str(self) -> str:
        return _str(self, "message")
