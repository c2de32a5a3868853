"""Bulk asynchronous copies into a ring, completed on barriers (gir), which `pipeline-loops`
builds for the descriptor loads of a loop where the target says that its bulk copies fill the
ring (`LayoutRules.bulk_copies`; NVIDIA's TMA, docs/tma.md), and which that target lowers:

- `%bars = gpu.init_barriers : !gpu.memdesc<Sx1xi64>`: S barriers, one a ring slot, each
  completing a phase when its one arrival has come and the bytes it expects have landed;
  initialized by one thread and visible to every thread and to the copies before any uses
  them (the threads' earlier shared-memory accesses are ordered before the copies too);
- `gpu.barrier_expect %bars, %slot, %pred {nbytes = N : i32}`: where `%pred` holds, one thread
  arrives on barrier `%slot`, whose phase then completes once N more bytes have landed;
- `gpu.async_bulk_copy_global_to_local %buf, %slot, %bars, %pred, %offsets...
  {base_param, shape_params, stride_params, padding}`: where `%pred` holds, one thread starts
  the copy of the descriptor's block at `%offsets` (outermost first, as the
  `tile.descriptor_load` it replaces: its attributes name the descriptor's parameters) into
  slot `%slot` of `%buf`, whose bytes count on barrier `%slot`; elements outside the tensor
  land as the padding;
- `gpu.wait_barrier %bars, %slot, %phase`: every thread waits until the phase of parity
  `%phase` (0 or 1) of barrier `%slot` has completed: the n-th completion of a barrier has
  parity n % 2;
- `gpu.inval_barriers %bars`: every thread is past its last wait, then the barriers are
  invalidated (their memory may be reused).
"""

from __future__ import annotations

from tilec.dialects.gpu_shared import MEMDESC
from tilec.ir.attributes import ArrayAttr, IntegerAttr, StringAttr, UnitAttr
from tilec.ir.core import (
    Operation,
    Value,
    VerifyError,
    attr_def,
    operand_def,
    register_op,
    result_def,
)
from tilec.ir.traits import BOOL_SCALAR, INT_SCALAR, MemoryRead
from tilec.ir.types import IntegerType, MemDescType, i1, i64

BARRIER = i64
"""A barrier's element type: 8 bytes of shared memory."""


def barriers_type(stages: int) -> MemDescType:
    """The type of `stages` barriers: `!gpu.memdesc<Sx1xi64>`."""
    return MemDescType((stages, 1), BARRIER)


def check_barriers(op: Operation, value: Value) -> None:
    """A `VerifyError` of `op` where `value` is no `barriers_type`."""
    t = value.type
    if not isinstance(t, MemDescType) or t != barriers_type(t.slots):
        raise VerifyError(f"barriers must be !gpu.memdesc<Sx1xi64>, got {t}", op)


def _check_scalar(op: Operation, value: Value, what: str, width: int | None = None) -> None:
    t = value.type
    if not isinstance(t, IntegerType) or (width is not None and t.width != width):
        raise VerifyError(f"{what} must be an integer scalar{'' if width is None else f' i{width}'}"
                          f", got {t}", op)  # fmt: skip


@register_op
class InitBarriersOp(Operation):
    """`%bars = gpu.init_barriers : !gpu.memdesc<Sx1xi64>`: S barriers, initialized for one
    arrival each (module doc)."""

    name = "gpu.init_barriers"
    result = result_def(MEMDESC)

    def __init__(self, stages: int):
        super().__init__(result_types=[barriers_type(stages)])

    def verify_(self) -> None:
        check_barriers(self, self.result)


@register_op
class InvalBarriersOp(Operation):
    """`gpu.inval_barriers %bars`: every thread past its last wait, the barriers invalidated."""

    name = "gpu.inval_barriers"
    barriers = operand_def(MEMDESC)

    def verify_(self) -> None:
        check_barriers(self, self.barriers)


@register_op
class BarrierExpectOp(Operation):
    """`gpu.barrier_expect %bars, %slot, %pred {nbytes = N : i32}`: one thread arrives on
    barrier `%slot` expecting N bytes, where `%pred` holds (module doc)."""

    name = "gpu.barrier_expect"
    barriers = operand_def(MEMDESC)
    slot = operand_def(INT_SCALAR)
    pred = operand_def(BOOL_SCALAR)
    nbytes = attr_def(IntegerAttr)

    def verify_(self) -> None:
        check_barriers(self, self.barriers)
        _check_scalar(self, self.slot, "the slot")
        if self.pred.type != i1:
            raise VerifyError(f"the predicate must be i1, got {self.pred.type}", self)
        if self.nbytes.value <= 0:  # type: ignore[attr-defined]
            raise VerifyError(f"nbytes must be positive, got {self.nbytes.value}", self)  # type: ignore[attr-defined]


@register_op
class AsyncBulkCopyGlobalToLocalOp(Operation):
    """`gpu.async_bulk_copy_global_to_local %buf, %slot, %bars, %pred, %offsets...
    {base_param, shape_params, stride_params, padding}`: one thread copies a descriptor's block
    into a ring slot, counted on barrier `%slot` (module doc)."""

    name = "gpu.async_bulk_copy_global_to_local"
    parts = operand_def(variadic=True)
    base_param = attr_def(IntegerAttr)
    shape_params = attr_def(ArrayAttr)
    stride_params = attr_def(ArrayAttr)
    padding = attr_def(StringAttr)
    in_kernel = attr_def(UnitAttr, optional=True)
    traits = (MemoryRead(),)

    @property
    def buffer(self) -> Value:
        return self.operands[0]

    @property
    def slot(self) -> Value:
        return self.operands[1]

    @property
    def barriers(self) -> Value:
        return self.operands[2]

    @property
    def pred(self) -> Value:
        return self.operands[3]

    @property
    def offsets(self) -> list[Value]:
        return list(self.operands[4:])

    def verify_(self) -> None:
        if len(self.operands) < 5:
            raise VerifyError("expected buffer, slot, barriers, predicate and the offsets", self)
        buffer = self.buffer.type
        if not isinstance(buffer, MemDescType):
            raise VerifyError(f"the buffer must be a !gpu.memdesc, got {buffer}", self)
        _check_scalar(self, self.slot, "the slot")
        check_barriers(self, self.barriers)
        if self.pred.type != i1:
            raise VerifyError(f"the predicate must be i1, got {self.pred.type}", self)
        if len(self.offsets) != len(buffer.tile_shape):
            raise VerifyError(
                f"{len(self.offsets)} offsets for a {len(buffer.tile_shape)}-D block", self
            )
        for offset in self.offsets:
            _check_scalar(self, offset, "an offset")


@register_op
class WaitBarrierOp(Operation):
    """`gpu.wait_barrier %bars, %slot, %phase`: every thread waits for the phase of parity
    `%phase` of barrier `%slot` (module doc)."""

    name = "gpu.wait_barrier"
    barriers = operand_def(MEMDESC)
    slot = operand_def(INT_SCALAR)
    phase = operand_def(INT_SCALAR)

    def verify_(self) -> None:
        check_barriers(self, self.barriers)
        _check_scalar(self, self.slot, "the slot")
        _check_scalar(self, self.phase, "the phase", 32)


__all__ = [
    "AsyncBulkCopyGlobalToLocalOp",
    "BarrierExpectOp",
    "InitBarriersOp",
    "InvalBarriersOp",
    "WaitBarrierOp",
    "barriers_type",
]
