"""Tensor-core register layouts of `gpu`: `#gpu.mma` (accumulators) and `#gpu.dot_op` (operands).

- `#gpu.mma<{version = 2, warpsPerCTA = [2, 2], instrShape = [16, 8]}>`: the C/D fragment of
  NVIDIA's `mma.sync.m16n8kK` (version 2, sm_80 and later). Inside a warp, lane `l` holds rows
  `l / 4` and `l / 4 + 8` and columns `2 * (l % 4)` and `2 * (l % 4) + 1` of each 16x8 tile;
  the warps of the block (warp id row-major over `warpsPerCTA`) tile the tensor in
  `[16 * warpsPerCTA[0], 8 * warpsPerCTA[1]]` blocks, which repeat over larger tensors (and a
  tensor smaller than one block is replicated across the extra warps).
- `#gpu.mma<{version = 3, warpsPerCTA = [8, 1], instrShape = [16, 256, 16]}>`: the D fragment of
  Hopper's `wgmma.mma_async.m64nNkK` (sm_90a; K 16 for f16/bf16, 8 for tf32: 32 bytes either way). Inside a warp the same as version 2, repeated over
  the instruction's `N / 8` column blocks; the warps are numbered column-major over `warpsPerCTA`
  (the 4 warps of a warpgroup stack along M, 16 rows each: one warpgroup computes 64 rows), so the
  warps cover `[16 * warpsPerCTA[0], N * warpsPerCTA[1]]` before repeating. Its operands are read
  from shared memory (`#gpu.nvmma_shared`), never from registers.
- `#gpu.dot_op<{opIdx = 0, parent = #mma, kWidth = 2}>`: the A (`opIdx = 0`, MxK) or B
  (`opIdx = 1`, KxN) operand fragment of the parent's instruction, `kWidth` consecutive K
  elements per 32-bit register (2 for f16/bf16, 1 for tf32, 4 for int8), so the instruction's K
  is `8 * kWidth`. Warps that differ only along the other operand's dimension hold replicas.

`tilec_nvidia.tensor_core_mapping` gives the exact thread -> element mapping (the PTX ISA's
fragment tables). The layouts are registered with the parser when the plugin loads
(`tilec_nvidia.plugin`); the accumulator and operand layouts build on the core's matrix-unit
bases (`tilec.dialects.gpu_matrix`), as every vendor's do.

`#gpu.nvmma_shared<{swizzle = 128, transposed = false}>` is not a register layout: a tensor with
it lives in shared memory as `wgmma` descriptors read it (`tilec_nvidia.nvmma_tile.NvmmaTile`:
the contiguous last dimension cut into `swizzle`-byte column blocks, stored one after another,
each XOR-swizzled in 16-byte chunks by row as the 32/64/128-byte swizzle modes do).
"""

from __future__ import annotations

from typing import ClassVar

import attrs

from tilec.dialects.gpu import SharedEncodingAttr, parameter
from tilec.dialects.gpu_matrix import MatrixLayoutAttr, OperandEncodingAttr
from tilec.ir.attributes import register_attribute

MMA_LANES = 32
"""mma.sync is a warp-wide instruction of 32 lanes."""
WGMMA_K = (8, 16, 32)
"""The K of a wgmma instruction (`instrShape[2]`): 8 tf32, 16 f16/bf16 or 32 e4m3/e5m2
elements, 32 bytes."""


@register_attribute
@attrs.frozen(repr=False)
class MmaEncodingAttr(MatrixLayoutAttr):
    """`#gpu.mma<{version, warpsPerCTA, instrShape}>`: an mma.sync accumulator (module doc)."""

    name: ClassVar[str] = "gpu.mma"
    alias_prefix: ClassVar[str] = "mma"
    keeps_loop_values: ClassVar[bool] = True

    version: int = parameter("version")
    warps_per_cta: tuple[int, ...] = parameter("warpsPerCTA", "ints")
    instr_shape: tuple[int, ...] = parameter("instrShape", "ints", default=(16, 8))

    def __attrs_post_init__(self) -> None:
        if self.version not in (2, 3):
            raise ValueError(f"'version' must be 2 (mma.sync) or 3 (wgmma); got {self.version}")
        self._check_warps()
        if self.version == 2 and self.instr_shape != (16, 8):
            raise ValueError(f"'instrShape' must be [16, 8] for version 2, got {self.instr_shape}")
        if self.version == 3:
            shape = self.instr_shape
            if len(shape) != 3 or shape[0] != 16 or shape[2] not in WGMMA_K:
                raise ValueError(
                    f"'instrShape' must be [16, N, K] with K 8 (tf32), 16 (f16, bf16) or 32 "
                    f"(e4m3, e5m2) for version 3, got {shape}"
                )
            if not 8 <= shape[1] <= 256 or shape[1] % 8:
                raise ValueError(
                    f"the N of 'instrShape' must be a multiple of 8 up to 256, got {shape[1]}"
                )
            if self.warps_per_cta[0] % 4:
                raise ValueError(
                    f"'warpsPerCTA' must have a multiple of 4 warps along M for version 3 "
                    f"(a warpgroup), got {self.warps_per_cta}"
                )

    @property
    def lanes(self) -> int:
        return MMA_LANES

    @property
    def instr_n(self) -> int:
        """The N of one instruction (one warp's columns)."""
        return self.instr_shape[1]


@register_attribute
@attrs.frozen(repr=False)
class DotOperandEncodingAttr(OperandEncodingAttr):
    """`#gpu.dot_op<{opIdx, parent, kWidth}>`: an mma operand fragment (module doc)."""

    name: ClassVar[str] = "gpu.dot_op"
    alias_prefix: ClassVar[str] = "dot_op"
    parent_class: ClassVar[type] = MmaEncodingAttr
    parent_description: ClassVar[str] = "#gpu.mma"
    rebuilds_shape_ops: ClassVar[bool] = False

    def __attrs_post_init__(self) -> None:
        self._check_operand(f", got {self.parent}")
        if self.k_width not in (1, 2, 4):
            raise ValueError(f"'kWidth' must be 1, 2 or 4, got {self.k_width}")
        if self.parent.version == 3 and (self.op_idx != 0 or self.k_width == 1):
            raise ValueError(
                "a #gpu.mma version 3 (wgmma) operand in registers is A (opIdx 0) of 16-bit "
                "(kWidth 2) or 8-bit (kWidth 4) elements; B is read from shared memory"
            )

    @property
    def instr_k(self) -> int:
        """The K of one instruction: 8 registers' worth of `kWidth` elements."""
        return 8 * self.k_width


SWIZZLE_BYTES = (32, 64, 128)


@register_attribute
@attrs.frozen(repr=False)
class NvmmaSharedEncodingAttr(SharedEncodingAttr):
    """`#gpu.nvmma_shared<{swizzle = 128, transposed = false}>`: a tensor in shared memory as
    wgmma reads it (module doc). `transposed = false`: the last dimension is the contiguous one;
    `true`: the first."""

    name: ClassVar[str] = "gpu.nvmma_shared"
    alias_prefix: ClassVar[str] = "shared"

    swizzle: int = parameter("swizzle")
    transposed: bool = parameter("transposed", "bool", default=False)

    def __attrs_post_init__(self) -> None:
        if self.swizzle not in SWIZZLE_BYTES:
            raise ValueError(f"'swizzle' must be 32, 64 or 128 (bytes), got {self.swizzle}")


__all__ = [
    "MMA_LANES",
    "SWIZZLE_BYTES",
    "DotOperandEncodingAttr",
    "MmaEncodingAttr",
    "NvmmaSharedEncodingAttr",
]
