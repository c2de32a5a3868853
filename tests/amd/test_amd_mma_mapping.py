"""The thread mappings of `#gpu.amd_mfma`, `#gpu.amd_wmma` and `#gpu.amd_dot_op` against the AMD
ISA tables ("which lane / register holds C[i][j]", A and B fragments), written out per lane as
the CDNA3 / RDNA3 / RDNA4 ISA documents (and Triton's `LinearLayoutConversions`) state them,
plus the ownership rules the core's stores rely on and the attributes' text form."""

from __future__ import annotations

import itertools
import re

import pytest

from tilec.dialects.gpu import SliceEncodingAttr
from tilec.ir.parser import ParseError, parse_module
from tilec.ir.verifier import Diagnostic
from tilec.layout.assignment import verify_gir
from tilec.layout.mapping import thread_mapping
from tilec.layout.rules import warps_per_tile
from tilec_amd.matrix_layouts import (
    AmdDotOperandEncodingAttr,
    AmdMfmaEncodingAttr,
    AmdWmmaEncodingAttr,
)
from tilec_amd.matrix_lowering import MAX_ACCESS_BYTES, staged_row_bytes


def mfma32_c(lane: int) -> list[tuple[int, int]]:
    """v_mfma_f32_32x32x8: 16 accumulator VGPRs; VGPR 4i + r holds D[8i + 4 (lane / 32) + r]
    [lane % 32] (lanes 0-31 rows 0-3, 8-11, 16-19, 24-27; lanes 32-63 rows 4-7, 12-15, ...)."""
    return [(8 * i + 4 * (lane // 32) + r, lane % 32) for i in range(4) for r in range(4)]


def mfma16_c(lane: int) -> list[tuple[int, int]]:
    """v_mfma_f32_16x16x16: 4 VGPRs; VGPR r holds D[4 (lane / 16) + r][lane % 16]."""
    return [(4 * (lane // 16) + r, lane % 16) for r in range(4)]


def mfma_a(lane: int, size: int, k_width: int) -> list[tuple[int, int]]:
    """A of MFMA: lane holds row lane % size, K elements k_width (lane / size) + 0..k_width-1
    (32x32x8 f16: lanes 0-31 K 0-3, lanes 32-63 K 4-7; 16x16x16: K 4 (lane / 16) + 0..3)."""
    return [(lane % size, k_width * (lane // size) + e) for e in range(k_width)]


def wmma_c(lane: int, version: int) -> list[tuple[int, int]]:
    """v_wmma_f32_16x16x16 f32 D: gfx11 VGPR v holds row 2v + lane / 16 (even rows in lanes
    0-15, odd rows in lanes 16-31); gfx12 VGPR v holds row v + 8 (lane / 16); column lane % 16."""
    if version == 1:
        return [(2 * v + lane // 16, lane % 16) for v in range(8)]
    return [(v + 8 * (lane // 16), lane % 16) for v in range(8)]


def wmma_a(lane: int, version: int) -> list[tuple[int, int]]:
    """A of WMMA: gfx11: row lane % 16, all 16 K (lanes 16-31 repeat lanes 0-15); gfx12: row
    lane % 16, K 8 (lane / 16) + 0..7."""
    if version == 1:
        return [(lane % 16, k) for k in range(16)]
    return [(lane % 16, 8 * (lane // 16) + e) for e in range(8)]


def transpose(cells: list[tuple[int, int]]) -> list[tuple[int, int]]:
    return [(j, i) for i, j in cells]


MFMA_CASES = [(3, 32, 4, mfma32_c), (3, 16, 4, mfma16_c), (4, 32, 8, mfma32_c),
              (4, 16, 8, mfma16_c), (2, 32, 4, mfma32_c), (2, 16, 4, mfma16_c)]  # fmt: skip


@pytest.mark.parametrize(("version", "size", "k_width", "table"), MFMA_CASES)
def test_mfma_fragments_per_lane(version, size, k_width, table):
    layout = AmdMfmaEncodingAttr(version, (1, 1), (size, size), False)
    transposed = AmdMfmaEncodingAttr(version, (1, 1), (size, size), True)
    k = k_width * 64 // size
    a = AmdDotOperandEncodingAttr(0, layout, k_width)
    b = AmdDotOperandEncodingAttr(1, transposed, k_width)
    for lane in range(64):
        assert thread_mapping(layout, (size, size)).coords(lane, 0) == table(lane)
        # Transposed: the instruction runs on (B, A), so the lane holds D^T's cells.
        assert thread_mapping(transposed, (size, size)).coords(lane, 0) == transpose(table(lane))
        assert thread_mapping(a, (size, k)).coords(lane, 0) == mfma_a(lane, size, k_width)
        assert thread_mapping(b, (k, size)).coords(lane, 0) == transpose(
            mfma_a(lane, size, k_width)
        )


@pytest.mark.parametrize(("version", "k_width"), [(1, 16), (2, 8)])
def test_wmma_fragments_per_lane(version, k_width):
    layout = AmdWmmaEncodingAttr(version, (1, 1))
    a = AmdDotOperandEncodingAttr(0, layout, k_width)
    b = AmdDotOperandEncodingAttr(1, layout, k_width)
    for lane in range(32):
        assert thread_mapping(layout, (16, 16)).coords(lane, 0) == wmma_c(lane, version)
        assert thread_mapping(a, (16, 16)).coords(lane, 0) == wmma_a(lane, version)
        assert thread_mapping(b, (16, 16)).coords(lane, 0) == transpose(wmma_a(lane, version))


def test_spot_values_from_the_isa_tables():
    """A few cells read straight off the published tables (not through the helpers above)."""
    mfma = thread_mapping(AmdMfmaEncodingAttr(3, (1, 1), (32, 32), False), (32, 32))
    assert mfma.coords(33, 0)[:5] == [(4, 1), (5, 1), (6, 1), (7, 1), (12, 1)]
    wmma1 = thread_mapping(AmdWmmaEncodingAttr(1, (1, 1)), (16, 16))
    assert wmma1.coords(17, 0)[:3] == [(1, 1), (3, 1), (5, 1)]
    wmma2 = thread_mapping(AmdWmmaEncodingAttr(2, (1, 1)), (16, 16))
    assert wmma2.coords(17, 0)[:3] == [(8, 1), (9, 1), (10, 1)]


LAYOUTS = [
    AmdMfmaEncodingAttr(3, (2, 2), (32, 32), True),
    AmdMfmaEncodingAttr(3, (4, 1), (16, 16), False),
    AmdMfmaEncodingAttr(4, (1, 2), (32, 32), False),
    AmdWmmaEncodingAttr(1, (2, 2)),
    AmdWmmaEncodingAttr(2, (1, 4)),
]


@pytest.mark.parametrize("layout", LAYOUTS, ids=str)
@pytest.mark.parametrize("shape", [(64, 64), (128, 32), (32, 128)])
def test_every_element_has_exactly_one_owner(layout, shape):
    mapping = thread_mapping(layout, shape)
    owners: dict[tuple[int, ...], int] = {}
    for warp, lane in itertools.product(range(layout.num_warps), range(layout.lanes)):
        coords = mapping.coords(lane, warp)
        assert len(set(coords)) == len(coords)  # no element twice in one thread
        for coord, owned in zip(coords, mapping.owns(lane, warp), strict=True):
            owners[coord] = owners.get(coord, 0) + owned
    assert sorted(owners) == sorted(itertools.product(range(shape[0]), range(shape[1])))
    assert set(owners.values()) == {1}


@pytest.mark.parametrize("layout", LAYOUTS, ids=str)
def test_operands_cover_what_each_warp_multiplies(layout):
    """A warp's A rows are its accumulator rows, its B columns its accumulator columns, and it
    holds every K of them (other warps along N / M hold replicas)."""
    k_width = 16 if isinstance(layout, AmdWmmaEncodingAttr) and layout.version == 1 else 8
    m, n, k = 64, 64, 64
    a = thread_mapping(AmdDotOperandEncodingAttr(0, layout, k_width), (m, k))
    b = thread_mapping(AmdDotOperandEncodingAttr(1, layout, k_width), (k, n))
    c = thread_mapping(layout, (m, n))
    for warp in range(layout.num_warps):
        rows = {r for lane in range(layout.lanes) for r, _ in c.coords(lane, warp)}
        cols = {j for lane in range(layout.lanes) for _, j in c.coords(lane, warp)}
        a_cells = {x for lane in range(layout.lanes) for x in a.coords(lane, warp)}
        b_cells = {x for lane in range(layout.lanes) for x in b.coords(lane, warp)}
        assert a_cells == set(itertools.product(rows, range(k)))
        assert b_cells == set(itertools.product(range(k), cols))


def test_slices_of_an_accumulator_keep_one_owner():
    layout = AmdMfmaEncodingAttr(3, (2, 2), (32, 32), True)
    for dim, shape in ((0, (64,)), (1, (64,))):
        mapping = thread_mapping(SliceEncodingAttr(dim, layout), shape)
        owners = [
            coord
            for warp, lane in itertools.product(range(4), range(64))
            for coord, owned in zip(
                mapping.coords(lane, warp), mapping.owns(lane, warp), strict=True
            )
            if owned
        ]
        assert sorted(owners) == [(i,) for i in range(64)]


def test_warps_per_tile_uses_the_instruction_block():
    assert warps_per_tile((64, 64), 4, (32, 32)) == (2, 2)
    assert warps_per_tile((16, 64), 4, (16, 16)) == (1, 4)
    assert warps_per_tile((128, 32), 4, (32, 32)) == (4, 1)
    assert warps_per_tile((128, 128), 4) == (2, 2)  # NVIDIA's default block of 16


@pytest.mark.parametrize(("k", "element", "k_width"), [(32, 2, 4), (64, 2, 8), (16, 2, 16),
                                                       (128, 2, 4), (8, 2, 4)])  # fmt: skip
def test_padded_rows_spread_vector_reads_over_the_banks(k, element, k_width):
    """The lanes whose vector reads together fill the 32 four-byte banks once (128 bytes) read
    their rows' first vectors from disjoint banks (without the padding they would collide)."""
    pitch = staged_row_bytes(k, element, k_width)
    read = min(k_width * element, MAX_ACCESS_BYTES)
    served = 128 // read  # lanes whose reads fill the 32 four-byte banks once
    banks = [((lane * pitch) // 4 + w) % 32 for lane in range(served) for w in range(read // 4)]
    if k * element > read:
        assert len(set(banks)) == len(banks)
    assert pitch % read == 0  # every vector read stays aligned


def test_layouts_print_and_parse():
    text = """
#mfma = #gpu.amd_mfma<{version = 3, warpsPerCTA = [2, 2], instrShape = [16, 16], isTransposed = true}>
#wmma = #gpu.amd_wmma<{version = 2, warpsPerCTA = [1, 4]}>
#a = #gpu.amd_dot_op<{opIdx = 0, parent = #mfma, kWidth = 4}>
#b = #gpu.amd_dot_op<{opIdx = 1, parent = #wmma, kWidth = 8}>
func.func @k() attributes {gpu.num_warps = 4 : i32, gpu.threads_per_warp = 64 : i32} {
  %c = arith.constant {value = dense<0.0> : tensor<32x32xf32, #mfma>} : tensor<32x32xf32, #mfma>
  %a = arith.constant {value = dense<0.0> : tensor<32x16xf16, #a>} : tensor<32x16xf16, #a>
  %b = arith.constant {value = dense<0.0> : tensor<16x16xf16, #b>} : tensor<16x16xf16, #b>
  %w = arith.constant {value = dense<0.0> : tensor<16x16xf32, #wmma>} : tensor<16x16xf32, #wmma>
  tile.return
}
"""
    printed = str(parse_module(text, "layouts.gir"))
    assert str(parse_module(printed, "again.gir")) == printed
    for expected in (
        "#gpu.amd_mfma<{version = 3, warpsPerCTA = [2, 2], instrShape = [16, 16], "
        "isTransposed = true}>",
        "#gpu.amd_wmma<{version = 2, warpsPerCTA = [1, 4]}>",
        "#gpu.amd_dot_op<{opIdx = 0, parent = #mfma, kWidth = 4}>",
    ):
        assert expected in printed


@pytest.mark.parametrize(
    ("attr", "message"),
    [("#gpu.amd_mfma<{version = 5, warpsPerCTA = [1, 1], instrShape = [32, 32], "
      "isTransposed = false}>", "'version' must be 2 (gfx90a), 3 (gfx942) or 4 (gfx950)"),
     ("#gpu.amd_mfma<{version = 3, warpsPerCTA = [1, 1], instrShape = [32, 16], "
      "isTransposed = false}>", "'instrShape' must be [32, 32] or [16, 16]"),
     ("#gpu.amd_mfma<{version = 3, warpsPerCTA = [1, 1], instrShape = [32, 32], "
      "isTransposed = 1}>", "'isTransposed' must be true or false"),
     ("#gpu.amd_wmma<{version = 3, warpsPerCTA = [1, 1]}>", "'version' must be 1 (gfx11)"),
     ("#gpu.amd_wmma<{version = 1, warpsPerCTA = [3, 1]}>", "two powers of two"),
     ("#gpu.amd_wmma<{version = 1, warpsPerCTA = [1, 1], instrShape = [16, 16]}>",
      "unknown parameter 'instrShape'"),
     ("#gpu.amd_dot_op<{opIdx = 0, parent = #gpu.blocked<{sizePerThread = [1, 1], "
      "threadsPerWarp = [8, 8], warpsPerCTA = [1, 1], order = [1, 0]}>, kWidth = 4}>",
      "'parent' must be a #gpu.amd_mfma or #gpu.amd_wmma layout")],
)  # fmt: skip
def test_invalid_layouts_are_parse_errors(attr, message):
    text = f"""
func.func @k() attributes {{gpu.num_warps = 1 : i32, gpu.threads_per_warp = 64 : i32}} {{
  %c = arith.constant {{value = dense<0.0> : tensor<32x32xf32, {attr}>}} : tensor<32x32xf32, {attr}>
  tile.return
}}
"""
    with pytest.raises(ParseError, match=re.escape(message)):
        parse_module(text, "bad.gir")


def test_an_mfma_layout_in_a_wave32_function_is_rejected():
    text = """
#mfma = #gpu.amd_mfma<{version = 3, warpsPerCTA = [2, 2], instrShape = [32, 32], isTransposed = true}>
func.func @k() attributes {gpu.num_warps = 4 : i32, gpu.threads_per_warp = 32 : i32} {
  %c = arith.constant {value = dense<0.0> : tensor<64x64xf32, #mfma>} : tensor<64x64xf32, #mfma>
  tile.return
}
"""
    with pytest.raises(
        Diagnostic, match="is for 4 warps of 64 lanes, but the function has 4 of 32"
    ):
        verify_gir(parse_module(text, "wave32.gir"))
