"""Shared-memory buffers and asynchronous copies of `gpu` (gir), as Triton's TritonGPU names them.

`pipeline-loops` builds a loop's operand ring from these ops; the lowering places every
`!gpu.memdesc` in the block's dynamic shared memory (each slot a `SwizzledTile`, or the tile its
encoding's backend lays out: `tilec.lowering.matrix_units.lays_out_shared`):

- `%buf = gpu.local_alloc : !gpu.memdesc<3x64x32xf16>`: a ring of 3 slots of 64x32 f16, live
  until `gpu.local_dealloc %buf`;
- `gpu.async_copy_global_to_local %ptrs, %buf, %slot, %mask`: each thread starts the copy of the
  elements its `%ptrs` layout holds into slot `%slot` (16-byte `cp.async`; masked-off elements
  are written as zeros, so a masked `tile.load` qualifies only with `other` 0 or absent);
- `gpu.async_commit_group` closes the copies issued since the last one into a group;
  `gpu.async_wait {num = 1 : i32}` waits until at most `num` groups are pending (each thread its
  own: a `tile.barrier` after it makes all threads' copies visible);
- `gpu.local_store %t, %buf, %slot`: each thread writes the elements its layout holds of the
  register tensor `%t` into slot `%slot` (how `pipeline-loops` fills a ring on a target without
  asynchronous copies: the tile loaded into registers early, stored after the current tile's
  math);
- `%a = gpu.local_load %buf, %slot : tensor<64x32xf16, #dot_op>`: slot `%slot` read into a
  register layout (a backend's operand layout reads it its way, `lowers_shared_read`); with
  the buffer's shared encoding instead, the slot itself as a tensor in shared memory (no copy),
  which an asynchronous dot (`AsyncDotOp`) reads.

`MatrixUnitOp`, `AsyncDotOp` and `AsyncDotWaitOp` are the bases of the ops a backend's matrix
unit contributes (NVIDIA's `gpu.warp_group_dot` in its plugin): what `pipeline-loops` knows of
them.
"""

from __future__ import annotations

from typing import ClassVar

from tilec.dialects.gpu import SharedEncodingAttr, layout_of
from tilec.dialects.tile import EVICTION_POLICIES, LOAD_CACHE_MODIFIERS, check_choice
from tilec.ir.attributes import IntegerAttr, StringAttr
from tilec.ir.core import (
    Constraint,
    Operation,
    VerifyError,
    attr_def,
    operand_def,
    register_op,
    result_def,
)
from tilec.ir.traits import BOOL_LIKE, INT_SCALAR, PTR_LIKE, TENSOR, MemoryRead, MemoryWrite
from tilec.ir.types import MemDescType, PointerType, TensorType

MEMDESC = Constraint("shared-memory buffer (!gpu.memdesc)", lambda t: isinstance(t, MemDescType))


def _check_tile(op: Operation, buffer: MemDescType, tensor: TensorType, what: str) -> None:
    element = tensor.element_type
    if isinstance(element, PointerType):
        element = element.pointee
    if buffer.tile_shape != tensor.shape or buffer.element_type != element:
        raise VerifyError(
            f"{what} {tensor} does not match a slot of {buffer} "
            f"({'x'.join(map(str, buffer.tile_shape))} of {buffer.element_type})",
            op,
        )


@register_op
class LocalAllocOp(Operation):
    """`%buf = gpu.local_alloc : !gpu.memdesc<SxRxCxT>`: a ring of S shared-memory tiles (or of
    S vectors, `!gpu.memdesc<SxNxT>`)."""

    name = "gpu.local_alloc"
    result = result_def(MEMDESC)

    def __init__(self, result_type: MemDescType):
        super().__init__(result_types=[result_type])

    def verify_(self) -> None:
        t = self.result.type
        if t.slots < 1 or len(t.tile_shape) not in (1, 2):  # type: ignore[attr-defined]
            raise VerifyError(f"{t} must have at least one slot of a 1-D or 2-D tile", self)


@register_op
class LocalDeallocOp(Operation):
    """`gpu.local_dealloc %buf`: the buffer's shared memory may be reused from here on."""

    name = "gpu.local_dealloc"
    buffer = operand_def(MEMDESC)


@register_op
class AsyncCopyGlobalToLocalOp(Operation):
    """`gpu.async_copy_global_to_local %ptrs, %buf, %slot, %mask`: copies started (module doc)."""

    name = "gpu.async_copy_global_to_local"
    ptr = operand_def(PTR_LIKE)
    buffer = operand_def(MEMDESC)
    slot = operand_def(INT_SCALAR)
    mask = operand_def(BOOL_LIKE, optional=True)
    cache = attr_def(StringAttr, optional=True)
    eviction = attr_def(StringAttr, optional=True)
    """The pipelined `tile.load`'s cache modifier and eviction policy (`tile.load`'s)."""
    traits = (MemoryRead(),)

    def verify_(self) -> None:
        check_choice(self, "cache", LOAD_CACHE_MODIFIERS)
        check_choice(self, "eviction", EVICTION_POLICIES)
        ptr = self.ptr.type
        if not isinstance(ptr, TensorType) or layout_of(ptr) is None:
            raise VerifyError(f"the pointers must be a tensor with a layout, got {ptr}", self)
        _check_tile(self, self.buffer.type, ptr, "pointers")  # type: ignore[arg-type]
        mask = self.mask
        if mask is not None and mask.type.shape != ptr.shape:  # type: ignore[attr-defined]
            raise VerifyError(f"mask {mask.type} must have the shape of {ptr}", self)


@register_op
class AsyncCommitGroupOp(Operation):
    """`gpu.async_commit_group`: the copies issued since the last commit form a group."""

    name = "gpu.async_commit_group"


@register_op
class AsyncWaitOp(Operation):
    """`gpu.async_wait {num = N : i32}`: wait until at most N committed groups are pending."""

    name = "gpu.async_wait"
    num = attr_def(IntegerAttr)

    def verify_(self) -> None:
        if self.num.value < 0:  # type: ignore[attr-defined]
            raise VerifyError(f"num must be at least 0, got {self.num.value}", self)  # type: ignore[attr-defined]


@register_op
class LocalStoreOp(Operation):
    """`gpu.local_store %t, %buf, %slot`: a register tensor written into a slot."""

    name = "gpu.local_store"
    value = operand_def(TENSOR)
    buffer = operand_def(MEMDESC)
    slot = operand_def(INT_SCALAR)
    traits = (MemoryWrite(),)

    def verify_(self) -> None:
        value = self.value.type
        if layout_of(value) is None:
            raise VerifyError(f"the value {value} must have a register layout", self)
        _check_tile(self, self.buffer.type, value, "value")  # type: ignore[arg-type]


@register_op
class LocalLoadOp(Operation):
    """`%t = gpu.local_load %buf, %slot : tensor<RxCxT, #layout>`: a slot read into registers."""

    name = "gpu.local_load"
    buffer = operand_def(MEMDESC)
    slot = operand_def(INT_SCALAR)
    result = result_def(TENSOR)

    def verify_(self) -> None:
        result = self.result.type
        encoding = getattr(result, "encoding", None)
        if layout_of(result) is None and not isinstance(encoding, SharedEncodingAttr):
            raise VerifyError(f"result {result} must have a layout", self)
        _check_tile(self, self.buffer.type, result, "result")  # type: ignore[arg-type]
        if isinstance(encoding, SharedEncodingAttr) and encoding != self.buffer.type.encoding:  # type: ignore[attr-defined]
            raise VerifyError(
                f"a view {result} of {self.buffer.type} must have the buffer's encoding", self
            )


class MatrixUnitOp(Operation):
    """The base of the gir ops a backend's matrix unit contributes (defined in its plugin and
    registered with `register_op` as it loads): ops of layout-assigned gir only, which the
    interpreter (it runs tir) never runs."""


class AsyncDotOp(MatrixUnitOp):
    """The base of a backend's asynchronous matrix-unit dot, `%d = NAME %a, %b, %c {pendings =
    N : i32}`: D = A B + C with A and B read from shared memory (a view of a ring slot or of a
    conversion, in a `SharedEncodingAttr`; A may instead be in registers, in an
    `OperandEncodingAttr`), which may still be running when the op returns: at most `pendings`
    such dots (this one included) are in flight after it, so with `pendings` 0 it is
    synchronous, and otherwise `%d`'s registers are final only after a `wait_class` op.

    `pipeline-loops` makes the dots of a pipelined loop asynchronous where it can (module doc
    there) and places the waits; the backend defines the op (its name, its `verify_`) and
    lowers it."""

    a = operand_def(TENSOR)
    b = operand_def(TENSOR)
    acc = operand_def(TENSOR)
    result = result_def(TENSOR)
    pendings = attr_def(IntegerAttr)
    wait_class: ClassVar[type[AsyncDotWaitOp]]
    """The backend's wait for these dots."""


class AsyncDotWaitOp(MatrixUnitOp):
    """The base of a backend's wait for its asynchronous dots, `%d2 = NAME %d {pendings = N :
    i32}`: wait until at most `pendings` of them are in flight; `%d2` is `%d` with its
    registers final."""

    source = operand_def(TENSOR)
    result = result_def(TENSOR)
    pendings = attr_def(IntegerAttr)

    def verify_(self) -> None:
        if self.source.type != self.result.type:
            raise VerifyError("the result has the type of the source", self)


__all__ = [
    "AsyncCommitGroupOp",
    "AsyncCopyGlobalToLocalOp",
    "AsyncDotOp",
    "AsyncDotWaitOp",
    "AsyncWaitOp",
    "LocalAllocOp",
    "LocalDeallocOp",
    "LocalLoadOp",
    "LocalStoreOp",
    "MatrixUnitOp",
]
