"""The thread mappings of `#gpu.mma` and `#gpu.dot_op` (`tilec_nvidia.tensor_core_mapping`) against the PTX ISA's fragment tables
for mma.m16n8k16 (f16/bf16), m16n8k8 (tf32) and m16n8k32 (s8), written out per lane as the ISA
states them ("which lane / register holds C[i][j]"), and the ownership rules the core's stores and
reductions rely on."""

from __future__ import annotations

import itertools

import pytest

from tilec.dialects.gpu import SliceEncodingAttr
from tilec.layout.mapping import thread_mapping
from tilec.layout.rules import warps_per_tile
from tilec.lowering.swizzle import SwizzledTile
from tilec_nvidia import tensor_core_mapping  # noqa: F401  (registers the mappings tested here)
from tilec_nvidia.tensor_core_layouts import DotOperandEncodingAttr, MmaEncodingAttr

ONE_WARP = MmaEncodingAttr(2, (1, 1))


def ptx_c(lane: int) -> list[tuple[int, int]]:
    """C/D of m16n8kK: c_i at row groupID (+8 for i >= 2), col threadID_in_group * 2 + (i & 1)."""
    group, thread = lane >> 2, lane % 4
    return [(group + 8 * (i >= 2), thread * 2 + (i & 1)) for i in range(4)]


def ptx_a(lane: int, k_width: int) -> list[tuple[int, int]]:
    """A of m16n8k16 (kWidth 2: a0..a7), m16n8k8 tf32 (kWidth 1: a0..a3), m16n8k32 s8 (kWidth 4:
    a0..a15): per 32-bit register r = i / kWidth, rows groupID (+8 for odd r), columns
    threadID_in_group * kWidth + (i % kWidth) (+ 4 kWidth for r >= 2)."""
    group, thread = lane >> 2, lane % 4
    elements = []
    for i in range(4 * k_width):
        register, e = divmod(i, k_width)
        elements.append(
            (group + 8 * (register % 2), thread * k_width + e + 4 * k_width * (register >= 2))
        )
    return elements


def ptx_b(lane: int, k_width: int) -> list[tuple[int, int]]:
    """B: rows threadID_in_group * kWidth + (i % kWidth) (+ 4 kWidth for the second register),
    column groupID."""
    group, thread = lane >> 2, lane % 4
    return [
        (thread * k_width + i % k_width + 4 * k_width * (i >= k_width), group)
        for i in range(2 * k_width)
    ]


@pytest.mark.parametrize("lane", range(32))
def test_accumulator_fragment(lane: int):
    assert thread_mapping(ONE_WARP, (16, 8)).coords(lane, 0) == ptx_c(lane)


@pytest.mark.parametrize("k_width", [1, 2, 4])
@pytest.mark.parametrize("lane", range(32))
def test_operand_fragments(lane: int, k_width: int):
    a = DotOperandEncodingAttr(0, ONE_WARP, k_width)
    b = DotOperandEncodingAttr(1, ONE_WARP, k_width)
    assert thread_mapping(a, (16, 8 * k_width)).coords(lane, 0) == ptx_a(lane, k_width)
    assert thread_mapping(b, (8 * k_width, 8)).coords(lane, 0) == ptx_b(lane, k_width)


def test_warps_tile_row_major_and_repeat():
    layout = MmaEncodingAttr(2, (2, 2))
    mapping = thread_mapping(layout, (64, 32))
    for warp, lane in itertools.product(range(4), range(32)):
        coords = mapping.coords(lane, warp)
        row0, col0 = 16 * (warp // 2), 8 * (warp % 2)
        first = [(r + row0, c + col0) for r, c in ptx_c(lane)]
        assert coords[:4] == first  # repetition (0, 0)
        assert coords[4:8] == [(r, c + 16) for r, c in first]  # the next N repetition
        assert coords[8:12] == [(r + 32, c) for r, c in first]  # the next M repetition


def test_operands_follow_the_parent_warps_and_replicate_across_the_other_dimension():
    parent = MmaEncodingAttr(2, (2, 2))
    a = thread_mapping(DotOperandEncodingAttr(0, parent, 2), (32, 32))
    b = thread_mapping(DotOperandEncodingAttr(1, parent, 2), (32, 16))
    for lane in range(32):
        assert a.coords(lane, 0) == a.coords(lane, 1)  # warps 0 and 1 differ only along N
        assert a.coords(lane, 2)[0] == (ptx_a(lane, 2)[0][0] + 16, ptx_a(lane, 2)[0][1])
        assert b.coords(lane, 0) == b.coords(lane, 2)  # warps 0 and 2 differ only along M
        assert b.coords(lane, 1)[0] == (ptx_b(lane, 2)[0][0], ptx_b(lane, 2)[0][1] + 8)


def _owners(mapping, warps: int) -> dict[tuple[int, ...], int]:
    counts: dict[tuple[int, ...], int] = {}
    for warp, lane in itertools.product(range(warps), range(32)):
        for coord, owned in zip(mapping.coords(lane, warp), mapping.owns(lane, warp), strict=True):
            counts[coord] = counts.get(coord, 0) + owned
    return counts


@pytest.mark.parametrize(
    ("warps", "shape"),
    [((2, 2), (64, 32)), ((1, 4), (16, 16)), ((4, 2), (32, 64)), ((2, 4), (128, 256))],
)
def test_every_element_has_exactly_one_owner(warps, shape):
    layout = MmaEncodingAttr(2, warps)
    counts = _owners(thread_mapping(layout, shape), 8 if warps[0] * warps[1] == 8 else 4)
    assert set(counts) == set(itertools.product(range(shape[0]), range(shape[1])))
    assert set(counts.values()) == {1}
    for dim in (0, 1):
        reduced = shape[1 - dim]
        sliced = thread_mapping(SliceEncodingAttr(dim, layout), (reduced,))
        counts = _owners(sliced, layout.num_warps)
        assert set(counts) == {(i,) for i in range(reduced)} and set(counts.values()) == {1}


def test_warps_per_tile_follows_triton():
    assert warps_per_tile((128, 128), 4) == (2, 2)
    assert warps_per_tile((128, 256), 8) == (2, 4)
    assert warps_per_tile((64, 64), 8) == (4, 2)
    assert warps_per_tile((16, 16), 4) == (1, 4)
    assert warps_per_tile((256, 64), 4) == (4, 1)


@pytest.mark.parametrize("cols", [8, 16, 32, 64, 128, 256])
def test_swizzle_is_a_permutation_without_ldmatrix_bank_conflicts(cols: int):
    tile = SwizzledTile(64, cols, 2)
    offsets = {tile.offset(r, c) for r in range(64) for c in range(cols)}
    assert offsets == set(range(64 * cols))
    for row0 in range(0, 64, 8):
        for col in range(0, cols, 8):  # one ldmatrix 8x8 matrix: 8 rows of 16 bytes
            groups = {(tile.offset(row0 + r, col) * 2 // 16) % 8 for r in range(8)}
            assert len(groups) == 8, (row0, col)


@pytest.mark.parametrize(("rows", "cols"), [(32, 64), (16, 32), (64, 16)])
def test_a_transposed_swizzled_tile_stores_the_transpose(rows: int, cols: int):
    """`SwizzledTile(transposed=True)` (AMD's B ring, `#gpu.swizzled_shared<{transposed = true}>`)
    puts (row, col) where the row-major tile of the transpose puts (col, row): the first
    dimension contiguous, each run of 16 bytes along it whole, a permutation of the slot."""
    tile = SwizzledTile(rows, cols, 2, transposed=True)
    stored = SwizzledTile(cols, rows, 2)
    for r in range(rows):
        for c in range(cols):
            assert tile.offset(r, c) == stored.offset(c, r)
    assert {tile.offset(r, c) for r in range(rows) for c in range(cols)} == set(range(rows * cols))
    assert tile.contiguous_dim == 0 and tile.offset(1, 0) == tile.offset(0, 0) + 1
