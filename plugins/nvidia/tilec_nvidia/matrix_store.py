"""A tensor-core accumulator into a conversion's scratch buffer with `stmatrix` (sm_90 and later).

The core's conversions through shared memory write a row-major, swizzled tile
(`tilec.lowering.layout_ops`, `tilec.lowering.swizzle`). A `#gpu.mma` accumulator of 16-bit
elements (a matmul's f16 or bf16 C after the epilogue's cast) holds, in each warp, 8x8 matrices
whose rows are 16 contiguous bytes of that tile: lane `l` has elements (row `l / 4`, columns
`2 (l % 4)`, `+1`) of each, one 32-bit register, which is `stmatrix`'s fragment. One
`stmatrix.sync.aligned.m8n8.x4.shared.b16` stores four matrices (lanes `8i..8i+7` give the row
addresses of matrix `i`): a quarter of the stores of 4-byte `st.shared` (Triton's epilogue on
Hopper also moves 16 bytes a lane, with `st.shared.v4` and `ldmatrix`).

Used where the mapping has that structure in every warp and group of registers (checked here on
the layout's mapping, so a layout whose registers are ordered otherwise keeps the core's stores),
and the same matrices, relative to the group's first, in every group of 8 registers."""

from __future__ import annotations

import functools

from llvmlite import ir

from tilec.layout.mapping_types import ThreadMapping
from tilec.lowering.context import I32, LoweringContext, LTensor, call_intrinsic, offset_part
from tilec.lowering.matrix_units import pack_registers
from tilec.lowering.swizzle import SwizzledTile, swizzled_pointers
from tilec_nvidia.capabilities import require

MATRICES = 4
"""Matrices a `stmatrix.x4` stores: 8 registers (pairs) of a lane's accumulator."""


@functools.lru_cache(maxsize=256)
def fragment_plan(mapping: ThreadMapping) -> tuple[tuple[tuple[int, int], ...], tuple] | None:
    """(per matrix of a group, its origin relative to the group's; per group of 8 registers, the
    group's origin relative to the warp's) where every lane of every warp holds 8x8 fragments
    (module doc); else None."""
    if len(mapping.shape) != 2 or mapping.hidden or mapping.num_registers % (2 * MATRICES):
        return None
    rows, cols = mapping.dims
    if (rows.lane_div, rows.lane_count, rows.lane_scale) != (4, 8, 1):
        return None
    if (cols.lane_div, cols.lane_count, cols.lane_scale) != (1, 4, 2):
        return None
    if any(d.warp_count > 1 and d.warp_scale % 8 for d in mapping.dims):
        return None
    registers = mapping.registers
    groups, matrices = [], None
    for first in range(0, len(registers), 2 * MATRICES):
        origin = registers[first]
        relative = []
        for m in range(MATRICES):
            row, col = registers[first + 2 * m]
            if row % 8 or col % 8 or registers[first + 2 * m + 1] != (row, col + 1):
                return None
            relative.append((row - origin[0], col - origin[1]))
        if matrices is None:
            matrices = tuple(relative)
        elif tuple(relative) != matrices:
            return None
        groups.append(origin)
    return matrices, tuple(groups)


def store_fragments(
    target, ctx: LoweringContext, source: LTensor, tile: SwizzledTile, base: ir.Value
) -> bool:
    """`NvidiaTargetInfo.store_matrix_fragments` on a target with `stmatrix` (`target.stmatrix`:
    the instruction, or an emulation of it): whether `source` was stored (module doc)."""
    if tile.element_bytes != 2 or tile.transposed:
        return False
    plan = fragment_plan(source.mapping)
    if plan is None:
        return False
    matrices, groups = plan
    b = ctx.builder
    lane = ctx.lane_id()
    matrix = b.udiv(lane, I32(8))
    row_in_matrix = b.urem(lane, I32(8))
    row = b.add(_warp_offset(ctx, source.mapping.dims[0]), row_in_matrix)
    col = _warp_offset(ctx, source.mapping.dims[1])
    row = b.add(row, _select(b, matrix, [r for r, _ in matrices]))
    col = b.add(col, _select(b, matrix, [c for _, c in matrices]))
    pointers = swizzled_pointers(b, base, tile, row, col, list(groups))
    registers = [_pair(ctx, source.values[i : i + 2]) for i in range(0, len(source.values), 2)]
    for g, pointer in enumerate(pointers):
        target.stmatrix(b, pointer, registers[MATRICES * g : MATRICES * (g + 1)])
    return True


def _pair(ctx: LoweringContext, values: list[ir.Value]) -> ir.Value:
    """Two 16-bit elements as one i32 register, the first in the low half. Two f32 values just
    rounded to f16 or bf16 (an epilogue's cast) are rounded again as one `<2 x float>`, which
    the NVPTX backend emits as one `cvt.rn.f16x2.f32` (`.bf16x2`) into the register stmatrix
    reads, as Triton's epilogue does (the scalar roundings, then unused, are dropped by LLVM)."""
    b = ctx.builder
    if all(isinstance(v, ir.CastInstr) and v.opname == "fptrunc" for v in values):
        wide = [v.operands[0] for v in values]
        if wide[0].type == wide[1].type == ir.FloatType():
            vector = ir.Constant(ir.VectorType(wide[0].type, 2), None)
            for i, value in enumerate(wide):
                vector = b.insert_element(vector, value, I32(i))
            narrow = b.fptrunc(vector, ir.VectorType(values[0].type, 2))
            return b.bitcast(narrow, I32)
    return pack_registers(ctx, values, 2)[0]


def _warp_offset(ctx: LoweringContext, d) -> ir.Value:
    """The offset along one dimension of the warp's lane 0 (the lane ids' part left out)."""
    part = offset_part(ctx.builder, ctx.warp_id(), d.warp_div, d.warp_count, d.warp_scale)
    return I32(0) if part is None else part


def _select(b: ir.IRBuilder, index: ir.Value, values: list[int]) -> ir.Value:
    """`values[index]` for an i32 `index` below `len(values)`."""
    result: ir.Value = I32(values[0])
    for i, value in enumerate(values[1:], start=1):
        if value != values[0]:
            result = b.select(b.icmp_unsigned("==", index, I32(i)), I32(value), result)
    return result


def stmatrix(target, builder: ir.IRBuilder, address: ir.Value, registers: list[ir.Value]) -> None:
    """`NvidiaTargetInfo.stmatrix`: store four 8x8 matrices of 16-bit elements, lanes `8i..8i+7`
    giving the row addresses (16 bytes each, `address` a shared pointer) of matrix `i`, lane
    `l`'s `registers[i]` holding (row `l / 4`, columns `2 (l % 4)`, `+1`) of matrix `i`, the
    lower column in the low half."""
    require(target.arch, "stmatrix", "stmatrix.sync.aligned.m8n8")
    name = "llvm.nvvm.stmatrix.sync.aligned.m8n8.x4.b16.p3"
    call_intrinsic(builder, name, ir.VoidType(), [address, *registers])


__all__ = ["fragment_plan", "stmatrix", "store_fragments"]
