"""`gpu.convert_layout` to a 16-bit `#gpu.dot_op`: through swizzled shared memory and ldmatrix.

Both operands are staged row-major with the last dimension contiguous (A as `[M][K]`, B as
`[K][N]`) in the shared scratch buffer under `SwizzledTile`'s XOR swizzle: every thread stores
its source registers, as 16-byte (or narrower) vectors where its layout holds consecutive
elements along that dimension. After a barrier, each warp reads its fragments with the target's
`ldmatrix`:

- A, per 16x16 instruction tile, one `x4`: lanes `8q..8q+7` address rows `(q % 2) * 8 + r` and
  column block `q / 2`, giving `a0..a3` (PTX ISA: lane `l` gets row `l / 4`, elements
  `2 (l % 4)` and `+1` of each 8x8 matrix);
- B, per 16x8 tile, `x2.trans` (or one `x4.trans` for two neighbouring N repetitions): lanes
  address K rows, and the transpose gives lane `l` the K pairs `2 (l % 4)`, `+1` of column
  `l / 4`, i.e. `b0, b1`.

Elements are numbered as `tilec_nvidia.tensor_core_mapping` orders them. A target without ldmatrix (the
hook returns None) reads the same swizzled tile element by element.

32-bit (tf32, `kWidth = 1`) and 8-bit (i8, `kWidth = 4`) operands are staged the same way. A
tf32 A is read with the same `ldmatrix.x4` (untransposed): an 8x8 matrix of 16-bit halves is an
8x4 matrix of 32-bit elements, lane `l` receiving element `l % 4` of row `l / 4`, which is the
m16n8k8 fragment `a0 = A[g][t]` (the four matrices: rows +0/+8, K columns +0/+4). ldmatrix
cannot transpose 32-bit or split 8-bit elements, so a tf32 B and int8 operands are read with
`ld.shared`, per register the `kWidth` consecutive K elements (`a_r`, `b_r` of the PTX ISA's
m16n8k8 / m16n8k32 tables): one 32-bit load where they are contiguous (A, K being its rows'
dimension), else `kWidth` element loads (B, whose K runs down the columns).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from llvmlite import ir

from tilec.dialects.gpu import ConvertLayoutOp
from tilec.ir.types import TensorType
from tilec.layout.mapping import ThreadMapping
from tilec.lowering.context import (
    I8,
    I32,
    LoweringContext,
    LoweringError,
    LTensor,
    location_prefix,
    memory_type,
)
from tilec.lowering.matrix_units import lowers_conversion_to, lowers_shared_read
from tilec.lowering.memory import byte_size
from tilec.lowering.swizzle import SwizzledTile
from tilec_nvidia.tensor_core_layouts import DotOperandEncodingAttr

MAX_VECTOR_ELEMENTS = 8


@lowers_conversion_to(DotOperandEncodingAttr)
def lower_to_dot_operand(ctx: LoweringContext, op: ConvertLayoutOp) -> bool:
    """Lower the conversion `op` if its result is a 16-bit `#gpu.dot_op` of whole instruction
    tiles; False (nothing emitted) to leave it to the generic conversion."""
    result_type = op.result.type
    assert isinstance(result_type, TensorType)
    layout = result_type.encoding
    if isinstance(layout, DotOperandEncodingAttr) and layout.parent.version != 2:
        return False  # wgmma's A in registers: register picks or the generic path
    element = memory_type(result_type.element_type, ctx.target)
    if not reads_as_dot_operand(result_type, byte_size(element)):
        return False
    source: LTensor = ctx.get(op.source)
    rows, cols = result_type.shape
    tile = SwizzledTile(rows, cols, byte_size(element))
    b = ctx.builder
    ctx.target.barrier(b)
    base = ctx.shared_scratch(tile.nbytes)
    _store_tile(ctx, source, tile, base, element)
    ctx.target.barrier(b)
    ctx.set(op.result, LTensor(result_type, read_dot_operand(ctx, result_type, tile, base)))
    return True


def _whole_tiles(layout: DotOperandEncodingAttr, shape: tuple[int, ...]) -> bool:
    rows, cols = shape
    if layout.op_idx == 0:
        return rows % 16 == 0 and cols % layout.instr_k == 0
    return rows % layout.instr_k == 0 and cols % 8 == 0


def _address(
    ctx: LoweringContext, base: ir.Value, offset: ir.Value, element_bytes: int = 2
) -> ir.Value:
    b = ctx.builder
    return b.gep(base, [b.mul(offset, I32(element_bytes))], source_etype=I8)


def _store_tile(
    ctx: LoweringContext, source: LTensor, tile: SwizzledTile, base: ir.Value, element: ir.Type
) -> None:
    """Every thread stores its registers (replicas store the same values as their owners)."""
    b = ctx.builder
    mapping = source.mapping
    vec = 1
    if mapping.contiguous_dim == 1:
        vec = max(1, min(mapping.contiguity, MAX_VECTOR_ELEMENTS, tile.chunk_elements))
    coords = ctx.element_coords(mapping)
    size = tile.element_bytes
    for first in range(0, len(source.values), vec):
        row, col = coords[first]
        address = _address(ctx, base, tile.emit_offset(b, row, col), size)
        values = source.values[first : first + vec]
        if vec == 1:
            b.store(values[0], address)
            continue
        vector_type = ir.VectorType(element, vec)
        vector: ir.Value = ir.Constant(vector_type, None)
        for i, value in enumerate(values):
            vector = b.insert_element(vector, value, I32(i))
        b.store(vector, address, align=size * vec)


def _unpack(ctx: LoweringContext, registers: list[ir.Value], element: ir.Type) -> list[ir.Value]:
    b = ctx.builder
    if byte_size(element) == 4:  # one 32-bit element a register (tf32's A)
        return [b.bitcast(register, element) for register in registers]
    pair = ir.VectorType(element, 2)
    values = []
    for register in registers:
        vector = b.bitcast(register, pair)
        values.extend(b.extract_element(vector, I32(i)) for i in range(2))
    return values


@dataclass(frozen=True)
class _OperandReader:
    """Reads the fragments of one `#gpu.dot_op` (`layout`, whose registers `mapping` places)
    from the swizzled `tile` staged at `base` (elements of type `element`)."""

    ctx: LoweringContext
    layout: DotOperandEncodingAttr
    mapping: ThreadMapping
    tile: SwizzledTile
    base: ir.Value
    element: ir.Type

    def warp_start(self, dim: int) -> tuple[ir.Value, int]:
        """This warp's first row (`dim` 0) or column (1) of the operand, and the extent all
        warps cover along `dim` once."""
        d = self.mapping.dims[dim]
        if d.warp_count == 1:
            return I32(0), d.warp_scale
        b = self.ctx.builder
        warp = b.urem(b.udiv(self.ctx.warp_id(), I32(d.warp_div)), I32(d.warp_count))
        return b.mul(warp, I32(d.warp_scale)), d.warp_scale * d.warp_count

    def address(self, row: ir.Value, col: ir.Value) -> ir.Value:
        """The shared address of the tile's element (`row`, `col`)."""
        offset = self.tile.emit_offset(self.ctx.builder, row, col)
        return _address(self.ctx, self.base, offset, self.tile.element_bytes)

    def ldmatrix(
        self, rows: list[ir.Value], cols: list[ir.Value], transpose: bool
    ) -> list[ir.Value]:
        """The matrices whose row addresses lanes `8q..8q+7` give as (`rows[q]` + lane % 8,
        `cols[q]`): with ldmatrix, or element by element where the target has none."""
        ctx = self.ctx
        b = ctx.builder
        lane_row = b.urem(ctx.lane_id(), I32(8))
        lane_group = b.udiv(ctx.lane_id(), I32(8))
        count = len(rows)
        row, col = rows[-1], cols[-1]
        for q in range(count - 2, -1, -1):
            is_q = b.icmp_unsigned("==", b.urem(lane_group, I32(count)), I32(q))
            row, col = b.select(is_q, rows[q], row), b.select(is_q, cols[q], col)
        address = self.address(b.add(row, lane_row), col)
        ldmatrix = getattr(ctx.target, "ldmatrix", None)  # NVIDIA's; a host emulator may lack it
        registers = None if ldmatrix is None else ldmatrix(b, address, count, transpose)
        if registers is not None:
            return _unpack(ctx, registers, self.element)
        return self.elements(rows, cols, transpose)

    def elements(
        self, rows: list[ir.Value], cols: list[ir.Value], transpose: bool
    ) -> list[ir.Value]:
        """What `ldmatrix` gives, read element by element (lane `l`: row `l / 4`, columns
        `2 (l % 4)` and `+1` of each matrix, or those of its transpose)."""
        b = self.ctx.builder
        per_lane = 4 // self.tile.element_bytes  # the 16-bit halves' elements: 2, or one 32-bit one
        group = b.udiv(self.ctx.lane_id(), I32(4))
        pair = b.mul(b.urem(self.ctx.lane_id(), I32(4)), I32(per_lane))
        values = []
        for row0, col0 in zip(rows, cols, strict=True):
            for i in range(per_lane):
                if transpose:
                    row, col = b.add(row0, b.add(pair, I32(i))), b.add(col0, group)
                else:
                    row, col = b.add(row0, group), b.add(col0, b.add(pair, I32(i)))
                values.append(b.load(self.address(row, col), typ=self.element))
        return values

    def a(self) -> list[ir.Value]:
        """A's 16-bit (or tf32) fragments, one `ldmatrix.x4` a 16 x 16 instruction tile."""
        b, layout = self.ctx.builder, self.layout
        m_size, k_size = self.mapping.shape
        warp_row, tile_m = self.warp_start(0)
        values: list[ir.Value] = []
        for rm in range(max(1, m_size // tile_m)):
            start = b.add(warp_row, I32(rm * tile_m))
            rows = [b.urem(b.add(start, I32(8 * (q % 2))), I32(m_size)) for q in range(4)]
            for rk in range(k_size // layout.instr_k):
                cols = [I32(rk * layout.instr_k + 4 * layout.k_width * (q // 2)) for q in range(4)]
                values.extend(self.ldmatrix(rows, cols, transpose=False))
        return values

    def b(self) -> list[ir.Value]:
        """B's 16-bit fragments, `ldmatrix.x2.trans` a tile (`x4` for two N repetitions)."""
        b, layout = self.ctx.builder, self.layout
        k_size, n_size = self.mapping.shape
        warp_col, tile_n = self.warp_start(1)
        reps_n, reps_k = max(1, n_size // tile_n), k_size // layout.instr_k
        per_rep: dict[tuple[int, int], list[ir.Value]] = {}
        for rn in range(0, reps_n, 2):
            pair = min(2, reps_n - rn)
            starts = [b.add(warp_col, I32((rn + j) * tile_n)) for j in range(pair)]
            cols = [b.urem(starts[q // 2], I32(n_size)) for q in range(2 * pair)]
            for rk in range(reps_k):
                rows = [I32(rk * layout.instr_k + 8 * (q % 2)) for q in range(2 * pair)]
                loaded = self.ldmatrix(rows, cols, transpose=True)
                for j in range(pair):
                    per_rep[rn + j, rk] = loaded[4 * j : 4 * j + 4]
        return [v for rn in range(reps_n) for rk in range(reps_k) for v in per_rep[rn, rk]]

    def registers(self) -> list[ir.Value]:
        """The fragments of a 32-bit or 8-bit operand, register by register (`kWidth`
        consecutive K elements each): one vector load where K is the tile's contiguous dimension
        (A), else element loads. A register's elements share one aligned 4-byte word of a 16-byte
        chunk, so the swizzle keeps them together."""
        b, layout, element = self.ctx.builder, self.layout, self.element
        width, size = layout.k_width, self.tile.element_bytes
        coords = self.ctx.element_coords(self.mapping)
        values: list[ir.Value] = []
        for first in range(0, len(coords), width):
            address = self.address(*coords[first])
            if width == 1:
                values.append(b.load(address, typ=element, align=size))
            elif layout.op_idx == 0:
                vector = b.load(address, typ=ir.VectorType(element, width), align=size * width)
                values.extend(b.extract_element(vector, I32(e)) for e in range(width))
            else:
                for row, col in coords[first : first + width]:
                    values.append(b.load(self.address(row, col), typ=element, align=size))
        return values


def read_dot_operand(
    ctx: LoweringContext, result_type: TensorType, tile: SwizzledTile, base: ir.Value
) -> list[ir.Value]:
    """The registers of `result_type` (a 16-bit `#gpu.dot_op` of whole instruction tiles)
    read from the swizzled `tile` at `base`, as the conversion reads its staged copy."""
    layout = result_type.encoding
    assert isinstance(layout, DotOperandEncodingAttr)
    element = memory_type(result_type.element_type, ctx.target)
    reader = _OperandReader(ctx, layout, LTensor(result_type, []).mapping, tile, base, element)
    if layout.k_width == 4 or (layout.k_width == 1 and layout.op_idx == 1):
        return reader.registers()
    return reader.a() if layout.op_idx == 0 else reader.b()


K_WIDTH_BYTES = {1: 4, 2: 2, 4: 1}
"""The element size of each `kWidth` (a 32-bit register's worth of K elements)."""


def reads_as_dot_operand(result_type: TensorType, element_bytes: int) -> bool:
    """Whether `read_dot_operand` can read `result_type`."""
    layout = result_type.encoding
    return (
        isinstance(layout, DotOperandEncodingAttr)
        and K_WIDTH_BYTES.get(layout.k_width) == element_bytes
        and _whole_tiles(layout, result_type.shape)
    )


@lowers_shared_read(DotOperandEncodingAttr)
def read_ring_slot(
    ctx: LoweringContext, op: Any, tile: SwizzledTile, base: ir.Value
) -> list[ir.Value]:
    """The registers of `op` (a `gpu.local_load` to a `#gpu.dot_op`) read from a pipelined
    ring's slot at `base` (`read_dot_operand`); a `LoweringError` where it cannot be so read."""
    result_type = op.result.type
    if tile.transposed or not reads_as_dot_operand(result_type, tile.element_bytes):
        raise LoweringError(
            f"{location_prefix(op)}gpu.local_load reads 16-bit #gpu.dot_op layouts (kWidth 2) of whole "
            f"instruction tiles; got {result_type}"
        )
    return read_dot_operand(ctx, result_type, tile, base)


__all__ = ["lower_to_dot_operand", "read_dot_operand", "read_ring_slot", "reads_as_dot_operand"]
