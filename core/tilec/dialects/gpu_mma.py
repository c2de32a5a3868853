"""Tensor-core register layouts of `gpu`: `#gpu.mma` (accumulators) and `#gpu.dot_op` (operands).

- `#gpu.mma<{version = 2, warpsPerCTA = [2, 2], instrShape = [16, 8]}>`: the C/D fragment of
  NVIDIA's `mma.sync.m16n8kK` (version 2, sm_80 and later). Inside a warp, lane `l` holds rows
  `l / 4` and `l / 4 + 8` and columns `2 * (l % 4)` and `2 * (l % 4) + 1` of each 16x8 tile;
  the warps of the block (warp id row-major over `warpsPerCTA`) tile the tensor in
  `[16 * warpsPerCTA[0], 8 * warpsPerCTA[1]]` blocks, which repeat over larger tensors (and a
  tensor smaller than one block is replicated across the extra warps).
- `#gpu.dot_op<{opIdx = 0, parent = #mma, kWidth = 2}>`: the A (`opIdx = 0`, MxK) or B
  (`opIdx = 1`, KxN) operand fragment of the parent's instruction, `kWidth` consecutive K
  elements per 32-bit register (2 for f16/bf16, 1 for tf32, 4 for int8), so the instruction's K
  is `8 * kWidth`. Warps that differ only along the other operand's dimension hold replicas.

`tilec.layout.mma_mapping` gives the exact thread -> element mapping (the PTX ISA's fragment
tables).
"""

from __future__ import annotations

from typing import ClassVar

import attrs

from tilec.dialects.gpu import (
    LayoutEncodingAttr,
    _array,
    _ints,
    _power_of_two,
    check_parameter_keys,
)
from tilec.ir.attributes import Attribute, IntegerAttr, register_attribute

MMA_LANES = 32
"""mma.sync is a warp-wide instruction of 32 lanes."""


def _int(name: str, value: Attribute) -> int:
    if not isinstance(value, IntegerAttr):
        raise ValueError(f"'{name}' must be an integer")
    return value.value


@register_attribute
@attrs.frozen(repr=False)
class MmaEncodingAttr(LayoutEncodingAttr):
    """`#gpu.mma<{version, warpsPerCTA, instrShape}>`: an mma.sync accumulator (module doc)."""

    name: ClassVar[str] = "gpu.mma"
    alias_prefix: ClassVar[str] = "mma"

    version: int
    warps_per_cta: tuple[int, ...] = attrs.field(converter=tuple)
    instr_shape: tuple[int, ...] = attrs.field(converter=tuple, default=(16, 8))

    def __attrs_post_init__(self) -> None:
        if self.version != 2:
            raise ValueError(f"'version' must be 2 (mma.sync); got {self.version}")
        if len(self.warps_per_cta) != 2 or not all(map(_power_of_two, self.warps_per_cta)):
            raise ValueError(f"'warpsPerCTA' must be two powers of two, got {self.warps_per_cta}")
        if self.instr_shape != (16, 8):
            raise ValueError(f"'instrShape' must be [16, 8] for version 2, got {self.instr_shape}")

    @property
    def rank(self) -> int:
        return 2

    @property
    def num_warps(self) -> int:
        return self.warps_per_cta[0] * self.warps_per_cta[1]

    @property
    def lanes(self) -> int:
        return MMA_LANES

    def tile(self) -> tuple[int, int]:
        """The extent all warps cover once, before repeating."""
        return (
            self.instr_shape[0] * self.warps_per_cta[0],
            self.instr_shape[1] * self.warps_per_cta[1],
        )

    def parameters(self) -> dict[str, Attribute]:
        return {
            "version": IntegerAttr(self.version),
            "warpsPerCTA": _array(self.warps_per_cta),
            "instrShape": _array(self.instr_shape),
        }

    @classmethod
    def from_parameters(cls, params: dict[str, Attribute]) -> MmaEncodingAttr:
        check_parameter_keys(params, ("version", "warpsPerCTA", "instrShape"))
        return cls(
            _int("version", params["version"]),
            _ints("warpsPerCTA", params["warpsPerCTA"]),
            _ints("instrShape", params["instrShape"]),
        )


@register_attribute
@attrs.frozen(repr=False)
class DotOperandEncodingAttr(LayoutEncodingAttr):
    """`#gpu.dot_op<{opIdx, parent, kWidth}>`: an mma operand fragment (module doc)."""

    name: ClassVar[str] = "gpu.dot_op"
    alias_prefix: ClassVar[str] = "dot_op"

    op_idx: int
    parent: MmaEncodingAttr
    k_width: int

    def __attrs_post_init__(self) -> None:
        if self.op_idx not in (0, 1):
            raise ValueError(f"'opIdx' must be 0 (A) or 1 (B), got {self.op_idx}")
        if not isinstance(self.parent, MmaEncodingAttr):
            raise ValueError(f"'parent' must be a #gpu.mma layout, got {self.parent}")
        if self.k_width not in (1, 2, 4):
            raise ValueError(f"'kWidth' must be 1, 2 or 4, got {self.k_width}")

    @property
    def rank(self) -> int:
        return 2

    @property
    def num_warps(self) -> int:
        return self.parent.num_warps

    @property
    def lanes(self) -> int:
        return self.parent.lanes

    @property
    def instr_k(self) -> int:
        """The K of one instruction: 8 registers' worth of `kWidth` elements."""
        return 8 * self.k_width

    def parameters(self) -> dict[str, Attribute]:
        return {
            "opIdx": IntegerAttr(self.op_idx),
            "parent": self.parent,
            "kWidth": IntegerAttr(self.k_width),
        }

    @classmethod
    def from_parameters(cls, params: dict[str, Attribute]) -> DotOperandEncodingAttr:
        check_parameter_keys(params, ("opIdx", "parent", "kWidth"))
        parent = params["parent"]
        if not isinstance(parent, MmaEncodingAttr):
            raise ValueError("'parent' must be a #gpu.mma layout")
        return cls(_int("opIdx", params["opIdx"]), parent, _int("kWidth", params["kWidth"]))


__all__ = ["MMA_LANES", "DotOperandEncodingAttr", "MmaEncodingAttr"]
