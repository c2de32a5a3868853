"""Warp specialization of a pipelined loop whose ring bulk copies fill (gir, docs/tma.md step 5),
built by `warp-specialize` (`tilec.layout.warp_specialize`) for `tl.range(...,
warp_specialize=True)`:

- `gpu.warp_specialize {producer_warps = P} ({ ... gpu.warp_return })`: the region is the
  producer's code (its warps exit at `gpu.warp_return`), run by P extra warps of the block (the kernel's `gpu.num_warps` warps, the consumers,
  pass over the op after letting the producer start: every barrier initialized before the op
  is visible to it). The region reads only the kernel's parameters, its own values and the
  rings and barriers (`!gpu.memdesc`) defined before the op; it issues its copies and waits
  with one thread. The function carries `gpu.producer_warps = P`.
- `gpu.arrive_barrier %bars, %slot, %pred`: where `%pred` holds, one thread arrives on barrier
  `%slot` (initialized for one arrival: `gpu.init_barriers`), completing its phase: the
  consumers' release of a ring slot, after a `tile.barrier`.
"""

from __future__ import annotations

from tilec.dialects.func import FuncOp
from tilec.dialects.gpu_bulk import check_barriers
from tilec.dialects.gpu_shared import MEMDESC
from tilec.ir.attributes import IntegerAttr
from tilec.ir.core import (
    Block,
    BlockArgument,
    Operation,
    Region,
    Value,
    VerifyError,
    attr_def,
    operand_def,
    region_def,
    register_op,
)
from tilec.ir.traits import BOOL_SCALAR, INT_SCALAR, IsTerminator
from tilec.ir.types import MemDescType, i1

PRODUCER_WARPS_ATTR = "gpu.producer_warps"
"""The function attribute: the warps the block has beyond `gpu.num_warps`, which run the
`gpu.warp_specialize` region."""


@register_op
class ArriveBarrierOp(Operation):
    """`gpu.arrive_barrier %bars, %slot, %pred`: one thread arrives on barrier `%slot` where
    `%pred` holds (module doc)."""

    name = "gpu.arrive_barrier"
    barriers = operand_def(MEMDESC)
    slot = operand_def(INT_SCALAR)
    pred = operand_def(BOOL_SCALAR)

    def verify_(self) -> None:
        check_barriers(self, self.barriers)
        if self.pred.type != i1:
            raise VerifyError(f"the predicate must be i1, got {self.pred.type}", self)


@register_op
class WarpReturnOp(Operation):
    """`gpu.warp_return`: the end of a `gpu.warp_specialize` region, where its warps exit."""

    name = "gpu.warp_return"
    traits = (IsTerminator(),)

    def verify_(self) -> None:
        if not isinstance(self.parent_op, WarpSpecializeOp):
            raise VerifyError("expects parent op 'gpu.warp_specialize'", self)


@register_op
class WarpSpecializeOp(Operation):
    """`gpu.warp_specialize {producer_warps = P} ({ ... gpu.warp_return })`: the producer
    warps' code (module doc)."""

    name = "gpu.warp_specialize"
    producer_warps = attr_def(IntegerAttr)
    producer = region_def()

    def __init__(self, producer_warps: int):
        super().__init__(
            attributes={"producer_warps": IntegerAttr(producer_warps)},
            regions=[Region([Block()])],
        )

    @property
    def body(self) -> Block:
        return self.regions[0].block

    def verify_(self) -> None:
        if self.producer_warps.value <= 0:  # type: ignore[attr-defined]
            raise VerifyError("producer_warps must be positive", self)
        for op in self.walk():
            for value in op.operands:
                if not _readable(value, self):
                    raise VerifyError(
                        f"the producer region reads {value}, defined outside it: it may read "
                        "only the kernel's parameters, its own values, rings and barriers",
                        self,
                    )


def _readable(value: Value, op: WarpSpecializeOp) -> bool:
    """Whether the producer region of `op` may read `value` (module doc)."""
    if isinstance(value.type, MemDescType):
        return True
    block = value.parent_block
    if isinstance(value, BlockArgument) and isinstance(getattr(block, "parent_op", None), FuncOp):
        return True
    return defined_inside(value, op)


def defined_inside(value: Value, op: Operation) -> bool:
    """Whether `value` is defined in a region of `op` (at any depth)."""
    block = value.parent_block
    owner = block.parent_op if block is not None else None
    while owner is not None:
        if owner is op:
            return True
        owner = owner.parent_op
    return False


__all__ = [
    "PRODUCER_WARPS_ATTR",
    "ArriveBarrierOp",
    "WarpReturnOp",
    "WarpSpecializeOp",
    "defined_inside",
]
