"""AMD matrix-core register layouts of `gpu`: `#gpu.amd_mfma`, `#gpu.amd_wmma`, `#gpu.amd_dot_op`.

- `#gpu.amd_mfma<{version = 3, warpsPerCTA = [2, 2], instrShape = [32, 32], isTransposed =
  true}>`: the C/D fragment of a CDNA `v_mfma_f32_{32x32,16x16}x*` (wave64; `version` 2:
  gfx90a, 3: gfx942, 4: gfx950). Not transposed, lane `l` holds 4 consecutive rows at a time:
  for 32x32, register `4i + r` is element `(8i + 4 (l / 32) + r, l % 32)`; for 16x16, register
  `r` is `(4 (l / 16) + r, l % 16)`. Transposed, rows and columns trade places (the lowering
  swaps the operands of the instruction), so a lane holds 4 consecutive columns and stores
  vectorize along rows.
- `#gpu.amd_wmma<{version = 1, warpsPerCTA = [2, 2]}>`: the C/D fragment of RDNA's
  `v_wmma_f32_16x16x16_*` (wave32; `version` 1: gfx11, 2: gfx12). Version 1: register `r` is
  element `(2r + l / 16, l % 16)`; version 2: `(r + 8 (l / 16), l % 16)`.
- `#gpu.amd_dot_op<{opIdx, parent, kWidth}>`: the A (`opIdx = 0`, MxK) or B (`opIdx = 1`, KxN)
  operand of the parent's instruction. Lane `l` holds `kWidth` consecutive K elements of row (A)
  or column (B) `l % nonK` (`nonK` = the instruction's M = N); the higher lane bits step along K
  by `kWidth` (MFMA, WMMA version 2), or hold replicas (WMMA version 1, where `kWidth` = K).

In both accumulators the warps are numbered row-major over `warpsPerCTA` and tile the tensor in
`[instrM * warpsPerCTA[0], instrN * warpsPerCTA[1]]` blocks, which repeat over larger tensors.
`tilec_amd.matrix_mapping` gives the exact thread -> element mappings (the AMD ISA tables).
A separate operand attribute (rather than `#gpu.dot_op` with an AMD parent) keeps the NVIDIA
operand paths (ldmatrix, cp.async pipelining) from ever seeing an AMD fragment.
"""

from __future__ import annotations

from typing import ClassVar

import attrs

from tilec.dialects.gpu import is_power_of_two, parameter
from tilec.dialects.gpu_matrix import MatrixLayoutAttr, OperandEncodingAttr
from tilec.ir.attributes import register_attribute

MFMA_LANES = 64
"""MFMA is a wave64 instruction (CDNA)."""
WMMA_LANES = 32
"""WMMA as tilec compiles it: wave32 (RDNA)."""


class AmdMatrixLayout(MatrixLayoutAttr):
    """What the AMD accumulator layouts share (`tilec.dialects.gpu_matrix.MatrixLayoutAttr`)."""

    @property
    def k_groups(self) -> int:
        """How many lane groups split one instruction's K (the operand's higher lane bits)."""
        raise NotImplementedError


@register_attribute
@attrs.frozen(repr=False)
class AmdMfmaEncodingAttr(AmdMatrixLayout):
    """`#gpu.amd_mfma<{version, warpsPerCTA, instrShape, isTransposed}>` (module doc)."""

    name: ClassVar[str] = "gpu.amd_mfma"
    alias_prefix: ClassVar[str] = "mfma"

    version: int = parameter("version")
    warps_per_cta: tuple[int, ...] = parameter("warpsPerCTA", "ints")
    instr_shape: tuple[int, ...] = parameter("instrShape", "ints", default=(32, 32))
    is_transposed: bool = parameter("isTransposed", "bool", default=False)

    def __attrs_post_init__(self) -> None:
        if self.version not in (2, 3, 4):
            raise ValueError(
                f"'version' must be 2 (gfx90a), 3 (gfx942) or 4 (gfx950); got {self.version}"
            )
        self._check_warps()
        if self.instr_shape not in ((32, 32), (16, 16)):
            raise ValueError(
                f"'instrShape' must be [32, 32] or [16, 16], got {list(self.instr_shape)}"
            )

    @property
    def lanes(self) -> int:
        return MFMA_LANES

    @property
    def k_groups(self) -> int:
        return MFMA_LANES // self.instr_shape[0]


@register_attribute
@attrs.frozen(repr=False)
class AmdWmmaEncodingAttr(AmdMatrixLayout):
    """`#gpu.amd_wmma<{version, warpsPerCTA}>`: a 16x16 WMMA accumulator (module doc)."""

    name: ClassVar[str] = "gpu.amd_wmma"
    alias_prefix: ClassVar[str] = "wmma"

    version: int = parameter("version")
    warps_per_cta: tuple[int, ...] = parameter("warpsPerCTA", "ints")

    def __attrs_post_init__(self) -> None:
        if self.version not in (1, 2):
            raise ValueError(f"'version' must be 1 (gfx11) or 2 (gfx12); got {self.version}")
        self._check_warps()

    @property
    def lanes(self) -> int:
        return WMMA_LANES

    @property
    def instr_mn(self) -> tuple[int, int]:
        return 16, 16

    @property
    def k_groups(self) -> int:
        return 1 if self.version == 1 else 2


@register_attribute
@attrs.frozen(repr=False)
class AmdDotOperandEncodingAttr(OperandEncodingAttr):
    """`#gpu.amd_dot_op<{opIdx, parent, kWidth}>`: an MFMA/WMMA operand fragment (module doc)."""

    name: ClassVar[str] = "gpu.amd_dot_op"
    alias_prefix: ClassVar[str] = "amd_dot_op"
    parent_class: ClassVar[type] = AmdMatrixLayout
    parent_description: ClassVar[str] = "#gpu.amd_mfma or #gpu.amd_wmma"
    staged_b_transposed: ClassVar[bool] = True

    def __attrs_post_init__(self) -> None:
        self._check_operand()
        if not is_power_of_two(self.k_width) or self.k_width > 16:
            raise ValueError(f"'kWidth' must be a power of two up to 16, got {self.k_width}")

    @property
    def instr_k(self) -> int:
        """The K of one instruction: `kWidth` elements in each of the parent's K lane groups."""
        return self.k_width * self.parent.k_groups


__all__ = [
    "MFMA_LANES",
    "WMMA_LANES",
    "AmdDotOperandEncodingAttr",
    "AmdMatrixLayout",
    "AmdMfmaEncodingAttr",
    "AmdWmmaEncodingAttr",
]
