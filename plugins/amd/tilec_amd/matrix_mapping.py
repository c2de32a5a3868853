"""The thread -> element mappings of the AMD matrix-core layouts (`tilec_amd.matrix_layouts`), registered with
`tilec.layout.mapping.register_thread_mapping`.

They are the operand and result tables of the AMD CDNA ISA (MFMA, wave64) and RDNA ISA (WMMA,
wave32), as Triton's `LinearLayoutConversions` writes them, expressed as
`tilec.layout.mapping_types.ThreadMapping`s. With `D` the instruction's M = N (32 or 16 for
MFMA, 16 for WMMA), in one wave's instruction tile:

- MFMA accumulator, not transposed: `N` = lane % D; `M` = 4 (lane / D) + the register's row:
  register `4i + r` is row `i * 4 (64 / D) + r` (32x32: 16 registers `8i + r`; 16x16: 4
  registers `r`). Transposed: the same with M and N exchanged.
- WMMA accumulator (8 registers): `N` = lane % 16; version 1: `M` = 2r + lane / 16; version 2:
  `M` = r + 8 (lane / 16).
- Operands: lane % D is the row of A (column of B); the `kWidth` registers of one instruction
  are consecutive K elements starting at `kWidth * (lane / D)` (MFMA, WMMA version 2; for WMMA
  version 1 lanes 16..31 repeat lanes 0..15 and `kWidth` is the whole K of 16).

Warps are numbered row-major over `warpsPerCTA = [wm, wn]`: warp `w` covers rows
`D * (w / wn)` and columns `D * (w % wn)`; A ignores the column warp index and B the row warp
index (those warps hold replicas). Registers list, per repetition of the warps' tile (row-major
over the repetitions, K fastest for the operands), the instruction's registers in the order the
hardware numbers them, so the lowering finds each instruction's vectors as consecutive runs.
"""

from __future__ import annotations

from tilec.layout.mapping import register_thread_mapping
from tilec.layout.mapping_types import DimMapping, ThreadMapping, check_rank_2, within_shape
from tilec_amd.matrix_layouts import (
    AmdDotOperandEncodingAttr,
    AmdMatrixLayout,
    AmdMfmaEncodingAttr,
    AmdWmmaEncodingAttr,
)


def instruction_offsets(layout: AmdMatrixLayout) -> tuple[tuple[int, int], ...]:
    """The (row, column) of each accumulator register of one instruction, lane 0's view."""
    if isinstance(layout, AmdWmmaEncodingAttr):
        step = 2 if layout.version == 1 else 1
        return tuple((step * r, 0) for r in range(8))
    assert isinstance(layout, AmdMfmaEncodingAttr)
    size = layout.instr_shape[0]
    groups = layout.lanes // size
    offsets = tuple((i * 4 * groups + r, 0) for i in range(size // (4 * groups)) for r in range(4))
    if layout.is_transposed:
        return tuple((n, m) for m, n in offsets)
    return offsets


def _accumulator_lane_dims(layout: AmdMatrixLayout) -> tuple[tuple[int, int, int], ...]:
    """(lane_div, lane_count, lane_scale) of M and N in one instruction."""
    size = layout.instr_mn[0]
    if isinstance(layout, AmdWmmaEncodingAttr):
        return (16, 2, 1 if layout.version == 1 else 8), (1, 16, 1)
    assert isinstance(layout, AmdMfmaEncodingAttr)
    rows, cols = (size, layout.lanes // size, 4), (1, size, 1)
    return (cols, rows) if layout.is_transposed else (rows, cols)


@register_thread_mapping(AmdMatrixLayout)
def amd_accumulator_mapping(layout: AmdMatrixLayout, shape: tuple[int, ...]) -> ThreadMapping:
    """The accumulator (C/D) fragments of an `#gpu.amd_mfma` / `#gpu.amd_wmma` over `shape`."""
    check_rank_2(layout, shape)
    wm, wn = layout.warps_per_cta
    instr_m, instr_n = layout.instr_mn
    m_lanes, n_lanes = _accumulator_lane_dims(layout)
    m_size, n_size = shape
    dims = (
        DimMapping(m_size, *m_lanes, wn, wm, instr_m),
        DimMapping(n_size, *n_lanes, 1, wn, instr_n),
    )
    tile_m, tile_n = layout.tile()
    offsets = instruction_offsets(layout)
    registers = [
        (rm * tile_m + i, rn * tile_n + j)
        for rm in range(max(1, m_size // tile_m))
        for rn in range(max(1, n_size // tile_n))
        for i, j in offsets
    ]
    contiguous_dim, contiguity = _contiguity(offsets, shape)
    return ThreadMapping(
        shape, dims, (), within_shape(registers, shape), contiguous_dim, contiguity
    )


def _contiguity(offsets: tuple[tuple[int, int], ...], shape: tuple[int, ...]) -> tuple[int, int]:
    """The dimension along which the first registers hold consecutive elements, and how many."""
    for dim in (1, 0):
        run = 1
        while run < len(offsets) and offsets[run][dim] == offsets[0][dim] + run:
            run += 1
        if run > 1:
            return dim, min(run, shape[dim])
    return 1, 1


@register_thread_mapping(AmdDotOperandEncodingAttr)
def amd_dot_operand_mapping(
    layout: AmdDotOperandEncodingAttr, shape: tuple[int, ...]
) -> ThreadMapping:
    """The A (`opIdx = 0`) or B (`opIdx = 1`) fragments of an `#gpu.amd_dot_op` over `shape`."""
    check_rank_2(layout, shape)
    parent = layout.parent
    wm, wn = parent.warps_per_cta
    size = parent.instr_mn[0]
    width, instr_k = layout.k_width, layout.instr_k
    k_dim_lanes = (size, parent.k_groups, width)
    if layout.op_idx == 0:
        m_size, k_size = shape
        dims = (
            DimMapping(m_size, 1, size, 1, wn, wm, size),
            DimMapping(k_size, *k_dim_lanes, 1, 1, instr_k),
        )
        tile_m = size * wm
        registers = [
            (rm * tile_m, rk * instr_k + e)
            for rm in range(max(1, m_size // tile_m))
            for rk in range(max(1, k_size // instr_k))
            for e in range(width)
        ]
        return ThreadMapping(shape, dims, (), within_shape(registers, shape), 1, min(width, k_size))
    k_size, n_size = shape
    dims = (
        DimMapping(k_size, *k_dim_lanes, 1, 1, instr_k),
        DimMapping(n_size, 1, size, 1, 1, wn, size),
    )
    tile_n = size * wn
    registers = [
        (rk * instr_k + e, rn * tile_n)
        for rn in range(max(1, n_size // tile_n))
        for rk in range(max(1, k_size // instr_k))
        for e in range(width)
    ]
    return ThreadMapping(shape, dims, (), within_shape(registers, shape), 0, min(width, k_size))


__all__ = ["amd_accumulator_mapping", "amd_dot_operand_mapping", "instruction_offsets"]
