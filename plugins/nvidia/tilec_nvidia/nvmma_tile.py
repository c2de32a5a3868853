"""`NvmmaTile`: a tile in shared memory as wgmma's descriptors read it (`#gpu.nvmma_shared`).

Registered with the core as the layout of `gpu.local_alloc` rings in that encoding
(`tilec.lowering.matrix_units.lays_out_shared`), 1024-byte aligned.
"""

from __future__ import annotations

import attrs
from llvmlite import ir

from tilec.ir.types import MemDescType
from tilec.lowering.context import I32
from tilec.lowering.matrix_units import lays_out_shared
from tilec.lowering.swizzle import CHUNK_BYTES, SwizzledTile
from tilec_nvidia.tensor_core_layouts import NvmmaSharedEncodingAttr

NVMMA_ALIGNMENT = 1024
"""wgmma's swizzle modes repeat every 1024 bytes of the address: its tiles start there."""


@attrs.frozen
class NvmmaTile:
    """A `rows x cols` tile as wgmma's shared-memory descriptors read it (`#gpu.nvmma_shared`):
    stored row-major with the last dimension contiguous (with `transposed`, column-major: the
    first dimension contiguous, i.e. its transpose row-major), the contiguous dimension cut into
    column blocks of `swizzle` bytes stored one after another (block `b` at `b * R * swizzle`
    bytes, `R` the stored rows), each a `SwizzledTile` whose rows are exactly `swizzle` bytes.
    That is the hardware's 32/64/128-byte swizzle mode (CUTLASS's `Swizzle<1|2|3, 4, 3>`: the
    16-byte chunk index XORed with bits 7 and up of the byte offset) whenever the tile starts at
    a multiple of 1024 bytes."""

    rows: int
    cols: int
    element_bytes: int
    swizzle: int
    transposed: bool = False

    def __attrs_post_init__(self) -> None:
        stored_cols = self.stored[1]
        if stored_cols * self.element_bytes < self.swizzle or stored_cols % self.block_cols:
            raise ValueError(
                f"a {self.rows}x{self.cols} tile of {self.element_bytes}-byte elements has no "
                f"whole {self.swizzle}-byte blocks along its contiguous dimension"
            )

    @property
    def stored(self) -> tuple[int, int]:
        """(rows, columns) as stored: row-major, the contiguous dimension last."""
        return (self.cols, self.rows) if self.transposed else (self.rows, self.cols)

    @property
    def contiguous_dim(self) -> int:
        return 0 if self.transposed else 1

    @property
    def block_cols(self) -> int:
        return self.swizzle // self.element_bytes

    @property
    def chunk_elements(self) -> int:
        return max(1, CHUNK_BYTES // self.element_bytes)

    @property
    def nbytes(self) -> int:
        return self.rows * self.cols * self.element_bytes

    @property
    def periods(self) -> tuple[int, int]:
        """As `SwizzledTile.periods`: a block's swizzle period of rows, a whole block of
        columns."""
        rows = self._block.per_phase * self._block.max_phase
        return (self.block_cols, rows) if self.transposed else (rows, self.block_cols)

    def transpose(self) -> NvmmaTile:
        """The same bytes seen as the transposed tensor (`tile.trans` of a shared tensor)."""
        return NvmmaTile(
            self.cols, self.rows, self.element_bytes, self.swizzle, not self.transposed
        )

    @property
    def _block(self) -> SwizzledTile:
        return SwizzledTile(self.stored[0], self.block_cols, self.element_bytes)

    def offset(self, row: int, col: int) -> int:
        if self.transposed:
            row, col = col, row
        block, within = divmod(col, self.block_cols)
        return block * self.stored[0] * self.block_cols + self._block.offset(row, within)

    def emit_offset(self, b: ir.IRBuilder, row: ir.Value, col: ir.Value) -> ir.Value:
        if self.transposed:
            row, col = col, row
        width = I32(self.block_cols)
        block, within = b.udiv(col, width), b.urem(col, width)
        start = b.mul(block, I32(self.stored[0] * self.block_cols))
        return b.add(start, self._block.emit_offset(b, row, within))

    def linear_byte_offset(self, row: int, col: int) -> int:
        """The unswizzled byte offset of (`row`, `col`): where a descriptor for a sub-matrix
        starting there points (the stored row a multiple of 8, the stored column of 16 bytes)."""
        if self.transposed:
            row, col = col, row
        block, within = divmod(col, self.block_cols)
        return (block * self.stored[0] + row) * self.swizzle + within * self.element_bytes


@lays_out_shared(NvmmaSharedEncodingAttr)
def ring_tile(t: MemDescType, element_bytes: int) -> tuple[NvmmaTile, int]:
    """The tile of each slot of a `gpu.local_alloc` ring in `#gpu.nvmma_shared`, and its
    alignment."""
    encoding = t.encoding
    assert isinstance(encoding, NvmmaSharedEncodingAttr)
    rows, cols = t.tile_shape
    tile = NvmmaTile(rows, cols, element_bytes, encoding.swizzle, encoding.transposed)
    return tile, NVMMA_ALIGNMENT


__all__ = ["NVMMA_ALIGNMENT", "NvmmaTile", "ring_tile"]
