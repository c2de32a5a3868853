"""Hopper's wgmma ops of `gpu` (sm_90a): `gpu.warp_group_dot`, `gpu.warp_group_dot_wait` and
`gpu.fence_async_shared`, registered with the parser when the plugin loads.

`gpu.warp_group_dot` is an asynchronous matrix-unit dot of the core
(`tilec.dialects.gpu_shared.AsyncDotOp`), so that `pipeline-loops` may keep it in flight across
the iterations of a pipelined loop; `tilec_nvidia.wgmma_rewrite` makes it from a `tile.dot`
(`accelerate-matmul`) and `tilec_nvidia.wgmma_lowering` lowers the three ops.
"""

from __future__ import annotations

from typing import ClassVar

from tilec.dialects.gpu import SharedEncodingAttr, layout_of
from tilec.dialects.gpu_shared import AsyncDotOp, AsyncDotWaitOp, MatrixUnitOp
from tilec.ir.attributes import IntegerAttr
from tilec.ir.core import VerifyError, attr_def, register_op
from tilec.ir.types import TensorType
from tilec_nvidia.tensor_core_layouts import DotOperandEncodingAttr


@register_op
class FenceAsyncSharedOp(MatrixUnitOp):
    """`gpu.fence_async_shared`: this thread's earlier shared-memory writes become visible to
    the async proxy (the wgmma that reads them after the next barrier)."""

    name = "gpu.fence_async_shared"


def _shared_tile(value_type: object) -> bool:
    return isinstance(value_type, TensorType) and isinstance(
        value_type.encoding, SharedEncodingAttr
    )


@register_op
class WarpGroupDotWaitOp(AsyncDotWaitOp):
    """`%d2 = gpu.warp_group_dot_wait %d {pendings = 0 : i32}`: wait until at most `pendings`
    wgmma groups are in flight; `%d2` is `%d` with its registers final."""

    name = "gpu.warp_group_dot_wait"


@register_op
class WarpGroupDotOp(AsyncDotOp):
    """`%d = gpu.warp_group_dot %a, %b, %c {pendings = 0 : i32}`: D = A B + C on the tensor cores
    of a warpgroup (Hopper's `wgmma.mma_async`), A (MxK) and B (KxN) in shared memory
    (`#gpu.nvmma_shared`; A may instead be in `#gpu.dot_op` registers), C and D in `#gpu.mma`
    version 3 registers. The op waits until at most `pendings` of the warpgroup's wgmma groups
    (this one included) are in flight: 0 makes it synchronous; with 1 (a pipelined loop) the
    result registers are final only after a later `gpu.warp_group_dot_wait`.

    A and B may be float8 (e4m3, e5m2, or one of each); then `max_num_imprecise_acc` (the
    `tile.dot`'s, Triton's) says how many products along K the tensor cores may sum in their
    reduced-precision accumulation before they are added to the f32 accumulator: where it is at
    most K, the products are summed into a fresh accumulator that many at a time and added."""

    name = "gpu.warp_group_dot"
    wait_class: ClassVar[type[AsyncDotWaitOp]] = WarpGroupDotWaitOp
    max_num_imprecise_acc = attr_def(IntegerAttr, optional=True)

    def verify_(self) -> None:
        a, b, acc = self.a.type, self.b.type, self.acc.type
        a_in_registers = isinstance(layout_of(a), DotOperandEncodingAttr)
        if not ((_shared_tile(a) or a_in_registers) and _shared_tile(b)):
            raise VerifyError(
                f"A {a} must be in shared memory (#gpu.nvmma_shared) or in #gpu.dot_op registers,"
                f" B {b} in shared memory",
                self,
            )
        (m, k), (k2, n) = a.shape, b.shape  # type: ignore[attr-defined]
        if k != k2 or acc.shape != (m, n) or self.result.type != acc:  # type: ignore[attr-defined]
            raise VerifyError(f"shapes do not multiply: {a} x {b} + {acc}", self)
        if self.pendings.value not in (0, 1):  # type: ignore[attr-defined]
            raise VerifyError(f"pendings must be 0 or 1, got {self.pendings.value}", self)  # type: ignore[attr-defined]


__all__ = ["FenceAsyncSharedOp", "WarpGroupDotOp", "WarpGroupDotWaitOp"]
