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

from typing import Any

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

    @property
    def periods(self) -> tuple[int, int]:
        """(rows, columns) of the tile's own coordinates such that moving an element by a
        multiple of them moves its offset by the same constant wherever it starts: a whole
        swizzle period (same phase, same chunk permutation)."""
        rows, cols = self.per_phase * self.max_phase, self.chunk_elements * self.max_phase
        return (cols, rows) if self.transposed else (rows, cols)

    def offset(self, row: int, col: int) -> int:
        """The element offset of (`row`, `col`) (Python integers: tests and planning)."""
        if self.transposed:
            row, col = col, row
        chunk = (col // self.chunk_elements) ^ ((row // self.per_phase) % self.max_phase)
        return row * self.stored_cols + chunk * self.chunk_elements + col % self.chunk_elements

    def emit_offset(self, b: ir.IRBuilder, row: ir.Value, col: ir.Value) -> ir.Value:
        """`offset` in LLVM IR on i32 coordinates (the sizes are powers of two)."""
        if self.rows == 1 and not self.transposed:
            return col  # row 0 has phase 0: a plain vector (a ring of small loads' slot)
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


def swizzled_pointers(
    b: ir.IRBuilder,
    base: ir.Value,
    tile: SwizzledTile,
    row: ir.Value,
    col: ir.Value,
    offsets: list[tuple[int, int]],
) -> list[ir.Value]:
    """The shared pointers of elements (`row + r`, `col + c`) of `tile` (not transposed) at
    `base`, for each constant (`r`, `c`) of `offsets`, where `row` and `col` are a thread's i32
    coordinates and no element wraps around the tile.

    Offsets a whole swizzle period apart (`per_phase * max_phase` rows, `max_phase` chunks) have
    the same phase and chunk permutation, so their element offsets differ by a constant: the
    swizzled offset is computed once for each class of offsets, and each pointer adds its
    constant (which the target's assembler folds into the access)."""
    row_period = tile.per_phase * tile.max_phase
    col_period = tile.chunk_elements * tile.max_phase
    classes: dict[tuple[int, int], ir.Value] = {}
    pointers = []
    for r, c in offsets:
        key = (r % row_period, c % col_period)
        if key not in classes:
            row_value = b.add(row, I32(key[0])) if key[0] else row
            col_value = b.add(col, I32(key[1])) if key[1] else col
            offset = tile.emit_offset(b, row_value, col_value)
            nbytes = b.mul(offset, I32(tile.element_bytes))
            classes[key] = b.gep(base, [nbytes], source_etype=ir.IntType(8))
        constant = (r - key[0]) * tile.cols + c - key[1]
        pointer = classes[key]
        if constant:
            step = I32(constant * tile.element_bytes)
            pointer = b.gep(pointer, [step], source_etype=ir.IntType(8))
        pointers.append(pointer)
    return pointers


@attrs.frozen
class SharedView:
    """A lowered tensor in shared memory (a `gpu.local_load` into a shared encoding, such as
    `#gpu.nvmma_shared`): its tile layout from `base` (a shared pointer). `tile` is the layout
    the encoding's backend registered (`tilec.lowering.matrix_units.lays_out_shared`), with a
    `transpose()`."""

    base: ir.Value
    tile: Any

    def transposed_view(self) -> SharedView:
        """`tile.trans` of it: the same bytes, seen transposed."""
        return SharedView(self.base, self.tile.transpose())


__all__ = ["SharedView", "SwizzledTile", "swizzled_pointers"]
