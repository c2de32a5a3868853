"""The thread -> element mappings of the tensor-core layouts `#gpu.mma` and `#gpu.dot_op`,
registered with the core's `tilec.layout.mapping` when this module is imported (the plugin does).

They are the fragment tables of the PTX ISA for `mma.sync.aligned.m16n8k{8,16,32}` written as
`tilec.layout.mapping_types.ThreadMapping`s (each lane-id bit field feeds one dimension). With
`g = lane / 4` and `t = lane % 4`, in one warp's instruction tile:

- accumulator C (16x8): registers `c0, c1 = (g, 2t), (g, 2t + 1)`, `c2, c3 = (g + 8, 2t ..)`;
- operand A (16 x 8kWidth): `a0 = (g, kWidth*t ..)`, `a1 = (g + 8, ..)`, `a2 = (g, kWidth*t +
  4kWidth ..)`, `a3 = (g + 8, ..)`, each register `kWidth` consecutive K elements;
- operand B (8kWidth x 8): `b0 = (kWidth*t .., g)`, `b1 = (kWidth*t + 4kWidth .., g)`.

For wgmma (`#gpu.mma` version 3), A may come from registers in the same fragment as mma.sync's
(`wgmma.mma_async` with A in registers), the warps column-major as in the accumulator.

Warps are numbered row-major over `warpsPerCTA = [wm, wn]`: warp `w` covers rows
`16 * (w / wn)` and columns `8 * (w % wn)` of the accumulator; A ignores the column warp index
and B the row warp index (those warps hold replicas). The warps' tile repeats over larger
tensors; registers list, per repetition (row-major over the repetitions, K fastest for the
operands), the instruction's registers in fragment order, so the lowering finds `c0..c3`,
`a0..a3` and `b0..b1` as consecutive runs.

A dimension smaller than the instruction's extent (a size-1 dimension of a slice's parent) keeps
only the registers inside it; the other lanes along it hold replicas.
"""

from __future__ import annotations

from tilec.layout.mapping import register_thread_mapping
from tilec.layout.mapping_types import DimMapping, ThreadMapping, check_rank_2, within_shape
from tilec_nvidia.tensor_core_layouts import DotOperandEncodingAttr, MmaEncodingAttr


@register_thread_mapping(MmaEncodingAttr)
def mma_mapping(layout: MmaEncodingAttr, shape: tuple[int, ...]) -> ThreadMapping:
    """The accumulator (C/D) fragments of `layout` over a `shape` tensor."""
    check_rank_2(layout, shape)
    if layout.version == 3:
        return _wgmma_mapping(layout, shape)
    wm, wn = layout.warps_per_cta
    m_size, n_size = shape
    dims = (
        DimMapping(m_size, 4, 8, 1, wn, wm, 16),
        DimMapping(n_size, 1, 4, 2, 1, wn, 8),
    )
    tile_m, tile_n = layout.tile()
    registers = [
        (rm * tile_m + i, rn * tile_n + j)
        for rm in range(max(1, m_size // tile_m))
        for rn in range(max(1, n_size // tile_n))
        for i in (0, 8)
        for j in (0, 1)
    ]
    return ThreadMapping(shape, dims, (), within_shape(registers, shape), 1, min(2, n_size))


def _wgmma_mapping(layout: MmaEncodingAttr, shape: tuple[int, ...]) -> ThreadMapping:
    """wgmma's D fragment (PTX ISA, "wgmma .m64nNk16 register fragment layout for D"): warp `w`
    of a warpgroup holds rows `16 (w % 4) + g` and `+ 8`; per 8-column block `j` of the
    instruction, registers `d[4j], d[4j+1]` are row `g`, columns `8j + 2t, +1`, and
    `d[4j+2], d[4j+3]` the same columns of row `g + 8`. Warps are column-major over
    `warpsPerCTA` (module doc of `tilec_nvidia.tensor_core_layouts`)."""
    wm, wn = layout.warps_per_cta
    instr_n = layout.instr_n
    m_size, n_size = shape
    dims = (
        DimMapping(m_size, 4, 8, 1, 1, wm, 16),
        DimMapping(n_size, 1, 4, 2, wm, wn, instr_n),
    )
    tile_m, tile_n = layout.tile()
    registers = [
        (rm * tile_m + i, rn * tile_n + 8 * j + e)
        for rm in range(max(1, m_size // tile_m))
        for rn in range(max(1, n_size // tile_n))
        for j in range(instr_n // 8)
        for i in (0, 8)
        for e in (0, 1)
    ]
    return ThreadMapping(shape, dims, (), within_shape(registers, shape), 1, min(2, n_size))


@register_thread_mapping(DotOperandEncodingAttr)
def dot_operand_mapping(layout: DotOperandEncodingAttr, shape: tuple[int, ...]) -> ThreadMapping:
    """The A (`opIdx = 0`) or B (`opIdx = 1`) operand fragments of `layout` over `shape`."""
    check_rank_2(layout, shape)
    wm, wn = layout.parent.warps_per_cta
    width, instr_k = layout.k_width, layout.instr_k
    # warps: row-major over warpsPerCTA for mma.sync, column-major for wgmma (version 3)
    m_warp_div = 1 if layout.parent.version == 3 else wn
    if layout.op_idx == 0:
        m_size, k_size = shape
        dims = (
            DimMapping(m_size, 4, 8, 1, m_warp_div, wm, 16),
            DimMapping(k_size, 1, 4, width, 1, 1, instr_k),
        )
        tile_m = 16 * wm
        registers = [
            (rm * tile_m + mh, rk * instr_k + kh * 4 * width + e)
            for rm in range(max(1, m_size // tile_m))
            for rk in range(max(1, k_size // instr_k))
            for kh in (0, 1)
            for mh in (0, 8)
            for e in range(width)
        ]
        return ThreadMapping(shape, dims, (), within_shape(registers, shape), 1, min(width, k_size))
    k_size, n_size = shape
    dims = (
        DimMapping(k_size, 1, 4, width, 1, 1, instr_k),
        DimMapping(n_size, 4, 8, 1, 1, wn, 8),
    )
    tile_n = 8 * wn
    registers = [
        (rk * instr_k + kh * 4 * width + e, rn * tile_n)
        for rn in range(max(1, n_size // tile_n))
        for rk in range(max(1, k_size // instr_k))
        for kh in (0, 1)
        for e in range(width)
    ]
    return ThreadMapping(shape, dims, (), within_shape(registers, shape), 0, min(width, k_size))


__all__ = ["dot_operand_mapping", "mma_mapping"]
