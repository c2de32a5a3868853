"""The XOR swizzle of a row-major tile in shared memory: one function for writers and readers.

A `rows x cols` tile of `element_bytes`-byte elements is stored row-major in 16-byte chunks; the
chunk index of row `r` is XORed with `(r / per_phase) % max_phase` (Triton's
`SwizzledSharedEncodingAttr` with `vec` = one chunk). `per_phase` rows share one 128-byte line of
the 32 banks, and `max_phase` is as many distinct chunk permutations as a line's 8 chunks allow,
so the 8 rows of one `ldmatrix` 8x8 matrix (8 lanes reading 16 bytes each, one column of chunks)
fall in 8 different bank groups: no bank conflicts. A chunk stays whole, so vector accesses of up
to 16 aligned bytes never straddle the swizzle.
"""

from __future__ import annotations

import attrs
from llvmlite import ir

from tilec.lowering.context import I32

CHUNK_BYTES = 16
LINE_BYTES = 128


@attrs.frozen
class SwizzledTile:
    """A `rows x cols` tile, row-major and swizzled (module doc); with `transposed`, stored as
    its transpose is (the first dimension contiguous): `offset(row, col)` takes the tile's own
    coordinates either way."""

    rows: int
    cols: int
    element_bytes: int
    transposed: bool = False

    @property
    def stored_cols(self) -> int:
        return self.rows if self.transposed else self.cols

    @property
    def contiguous_dim(self) -> int:
        return 0 if self.transposed else 1

    @property
    def chunk_elements(self) -> int:
        return max(1, CHUNK_BYTES // self.element_bytes)

    @property
    def per_phase(self) -> int:
        return max(1, LINE_BYTES // (self.stored_cols * self.element_bytes))

    @property
    def max_phase(self) -> int:
        chunks = max(1, self.stored_cols // self.chunk_elements)
        return max(1, min(chunks, LINE_BYTES // CHUNK_BYTES // self.per_phase))

    @property
    def nbytes(self) -> int:
        return self.rows * self.cols * self.element_bytes

    def offset(self, row: int, col: int) -> int:
        """The element offset of (`row`, `col`) (Python integers: tests and planning)."""
        if self.transposed:
            row, col = col, row
        chunk = (col // self.chunk_elements) ^ ((row // self.per_phase) % self.max_phase)
        return row * self.stored_cols + chunk * self.chunk_elements + col % self.chunk_elements

    def emit_offset(self, b: ir.IRBuilder, row: ir.Value, col: ir.Value) -> ir.Value:
        """`offset` in LLVM IR on i32 coordinates (the sizes are powers of two)."""
        if self.transposed:
            row, col = col, row
        width = self.chunk_elements
        chunk = b.udiv(col, I32(width))
        if self.max_phase > 1:
            phase = b.urem(b.udiv(row, I32(self.per_phase)), I32(self.max_phase))
            chunk = b.xor(chunk, phase)
        within = b.urem(col, I32(width))
        stored_row = b.mul(row, I32(self.stored_cols))
        return b.add(b.add(stored_row, b.mul(chunk, I32(width))), within)


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


@attrs.frozen
class SharedView:
    """A lowered tensor in shared memory (`#gpu.nvmma_shared`): its tile layout from `base`
    (a shared pointer)."""

    base: ir.Value
    tile: NvmmaTile


__all__ = ["NvmmaTile", "SharedView", "SwizzledTile"]
