"""`AmdMatrixInstruction`: an AMD matrix-core instruction (MFMA or WMMA) as layouts see it.

An AMD backend lists these in its `LayoutRules.mma_instructions`; `accelerate-matmul` asks the
chosen one for its layouts (`#gpu.amd_mfma` or `#gpu.amd_wmma` and their `#gpu.amd_dot_op`s),
and the lowering (`tilec_amd.matrix_lowering`) rebuilds it from those layouts for the target's
`mma` hook, which picks the intrinsic.
"""

from __future__ import annotations

from typing import Any

import attrs

from tilec.layout.rules import MmaInstruction, warps_per_tile
from tilec_amd import matrix_mapping  # noqa: F401  (registers the layouts' thread mappings)
from tilec_amd.matrix_layouts import (
    AmdDotOperandEncodingAttr,
    AmdMatrixLayout,
    AmdMfmaEncodingAttr,
    AmdWmmaEncodingAttr,
)

FAMILIES = ("mfma", "wmma")


@attrs.frozen
class AmdMatrixInstruction(MmaInstruction):
    """`family`: `mfma` (CDNA, wave64; `version` 2, 3, 4 for gfx90a, gfx942, gfx950) or `wmma`
    (RDNA, wave32; `version` 1, 2 for gfx11, gfx12). `k_width`: the consecutive K elements of
    A (and B) one lane gives the instruction (its operand vector)."""

    family: str = attrs.field(default="mfma", kw_only=True)
    k_width: int = attrs.field(default=4, kw_only=True)

    def __attrs_post_init__(self) -> None:
        if self.family not in FAMILIES:
            raise ValueError(f"'family' must be one of {FAMILIES}, got {self.family!r}")

    def accumulator_layout(self, warps: tuple[int, int]) -> AmdMatrixLayout:
        if self.family == "wmma":
            return AmdWmmaEncodingAttr(self.version, warps)
        # Transposed, as Triton prefers: a lane holds 4 consecutive N elements (vector stores).
        return AmdMfmaEncodingAttr(self.version, warps, self.shape[:2], True)

    def layouts(
        self, shape: tuple[int, int], num_warps: int, operand_bytes: int
    ) -> tuple[Any, Any, Any]:
        acc = self.accumulator_layout(warps_per_tile(shape, num_warps, self.shape[:2]))
        return (
            acc,
            AmdDotOperandEncodingAttr(0, acc, self.k_width),
            AmdDotOperandEncodingAttr(1, acc, self.k_width),
        )


def instruction_of(
    layout: AmdMatrixLayout, k_width: int, operand: str, accumulator: str
) -> AmdMatrixInstruction:
    """The instruction an `#gpu.amd_mfma` / `#gpu.amd_wmma` accumulator with `k_width`-wide
    operands computes with."""
    m, n = layout.instr_mn
    family = "wmma" if isinstance(layout, AmdWmmaEncodingAttr) else "mfma"
    return AmdMatrixInstruction(
        layout.version,  # type: ignore[attr-defined]
        (m, n, k_width * layout.k_groups),
        operand,
        accumulator,
        lanes=layout.lanes,
        family=family,
        k_width=k_width,
    )


__all__ = ["AmdMatrixInstruction", "instruction_of"]
