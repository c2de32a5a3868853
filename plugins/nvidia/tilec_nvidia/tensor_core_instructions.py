"""NVIDIA's tensor-core instructions as `accelerate-matmul` sees them (`MmaInstruction`s).

- `TensorCoreInstruction`: mma.sync (`#gpu.mma` version 2, sm_80 and later), whose layouts are
  `#gpu.mma` and its `#gpu.dot_op`s, the warps placed as Triton's `warpsPerTileV2` does; a dot
  chained to another (attention's two) gets all its warps along M.
- `Float8TensorCoreInstruction`: mma.sync of float8 inputs (`m16n8k32`, sm_89 and later).
- `Float8WarpGroupInstruction`: wgmma of float8 inputs (`m64nNk32`), before the others.
- `WarpGroupInstruction`: wgmma (`#gpu.mma` version 3, sm_90a), which rewrites the dot into a
  `gpu.warp_group_dot` where its shape fits a warpgroup arrangement
  (`tilec_nvidia.wgmma_rewrite`), and leaves the others to the mma.sync instructions after it.

`tilec_nvidia.capabilities.mma_instructions` lists those of each arch (loaded with a compile:
the wgmma rewrite builds on the layout passes; the plugin itself registers only the layouts,
their thread mappings and the ops).
"""

from __future__ import annotations

from typing import Any

import attrs

from tilec.layout.rules import MmaInstruction, warps_per_tile
from tilec_nvidia import tensor_core_mapping  # noqa: F401  (registers the layouts' thread mappings)
from tilec_nvidia.float8_dots import float8_sources, replace_float8_operands
from tilec_nvidia.tensor_core_layouts import MMA_LANES, DotOperandEncodingAttr, MmaEncodingAttr
from tilec_nvidia.wgmma_rewrite import accelerate_wgmma, wgmma_layout


@attrs.frozen
class TensorCoreInstruction(MmaInstruction):
    """An mma.sync instruction (`version` 2: its layouts' version), on a warp of 32 lanes."""

    lanes: int = attrs.field(default=MMA_LANES, kw_only=True)

    def layouts(
        self, shape: tuple[int, int], num_warps: int, operand_bytes: int
    ) -> tuple[Any, Any, Any]:
        """`#gpu.mma` and its `#gpu.dot_op`s (`kWidth` = the `operand_bytes`-byte elements of a
        32-bit register)."""
        mma = MmaEncodingAttr(self.version, warps_per_tile(shape, num_warps))
        k_width = max(1, 4 // operand_bytes)
        return mma, DotOperandEncodingAttr(0, mma, k_width), DotOperandEncodingAttr(1, mma, k_width)

    def chained_layouts(
        self, layouts: tuple[Any, Any, Any], shape: tuple[int, int], num_warps: int
    ) -> tuple[Any, Any, Any]:
        """Each warp owns whole rows, so the result, its row reductions (a softmax) and its use
        as the next dot's A operand stay in the warp's registers (Triton's hasChainedDot)."""
        mma, a_layout, _ = layouts
        if shape[0] < 16 * num_warps:
            return layouts
        mma = MmaEncodingAttr(mma.version, (num_warps, 1))
        k_width = a_layout.k_width
        return mma, DotOperandEncodingAttr(0, mma, k_width), DotOperandEncodingAttr(1, mma, k_width)


@attrs.frozen
class Float8TensorCoreInstruction(TensorCoreInstruction):
    """mma.sync of float8 inputs (`m16n8k32`, e4m3/e5m2 and mixed, f32 accumulators, sm_89 and
    later): a `tl.dot` of float8 inputs holds them converted to f16 (its `operand` "f16"); where
    both are e4m3/e5m2 (`float8_sources`) this instruction gives the dot the float8 tensors
    themselves and leaves the layouts to accelerate-matmul (`#gpu.dot_op` of `kWidth` 4, as
    int8's: the fragments of the s8 form)."""

    def computes(self, op: Any, num_warps: int) -> bool:
        return float8_sources(op) is not None

    def rewrites_dot(self, op: Any, num_warps: int) -> Any:
        replace_float8_operands(op, float8_sources(op))  # type: ignore[arg-type]
        return None


@attrs.frozen
class WarpGroupInstruction(TensorCoreInstruction):
    """A wgmma instruction (`version` 3): `shape` (64, 8, K) stands for every m64nNkK, N a
    multiple of 8 up to 256 (`wgmma_layout` chooses it)."""

    def computes(self, op: Any, num_warps: int) -> bool:
        # 3xTF32 splits its operands in registers: mma.sync
        return wgmma_layout(op, num_warps) is not None and op.precision != "tf32x3"

    def rewrites_dot(self, op: Any, num_warps: int) -> Any:
        """`op` -> `gpu.warp_group_dot` (`tilec_nvidia.wgmma_rewrite.accelerate_wgmma`)."""
        mma = wgmma_layout(op, num_warps)
        accelerate_wgmma(op, mma)  # type: ignore[arg-type]
        return mma


@attrs.frozen
class Float8WarpGroupInstruction(WarpGroupInstruction):
    """wgmma of float8 inputs (`m64nNk32`, e4m3/e5m2 and mixed, f32 accumulators): a `tl.dot` of
    float8 inputs holds them converted to f16 (its `operand` "f16"); this instruction computes it
    where both are e4m3/e5m2 (`float8_sources`) and their 1-byte elements fit a warpgroup
    arrangement, multiplying the float8 tensors themselves (stored K-major in shared memory)."""

    def computes(self, op: Any, num_warps: int) -> bool:
        return float8_sources(op) is not None and wgmma_layout(op, num_warps, 1) is not None

    def rewrites_dot(self, op: Any, num_warps: int) -> Any:
        mma = wgmma_layout(op, num_warps, 1)
        accelerate_wgmma(op, mma, float8_sources(op))  # type: ignore[arg-type]
        return mma


__all__ = [
    "Float8TensorCoreInstruction",
    "Float8WarpGroupInstruction",
    "TensorCoreInstruction",
    "WarpGroupInstruction",
]
