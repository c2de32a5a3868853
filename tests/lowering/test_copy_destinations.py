"""The shared addresses of a ring's copies (`shared_memory._destinations`, issue 23): a thread's
copies whose tile positions lie whole swizzle periods apart (`SwizzledTile.periods`,
`NvmmaTile.periods`) share one address plus constants, as Triton's `[%r + 4096]`; before, the
sweep's 128x128x64 matmul computed all 8 of an iteration anew (8 registers and adds; 105 SASS
instructions a loop iteration against Triton's 97, now 99). Checked in the PTX, the offsets
against the tiles' own `offset`, and on the CPU wgmma emulator (test_scratch_swizzle,
test_lower_pipeline and test_attention_bwd_sm90 run such loops)."""

from __future__ import annotations

import itertools
import re

import pytest
from sweep_matmul_case import compile_case
from test_attention_bwd_sm90 import _ptx_loops

from tilec.lowering.swizzle import SwizzledTile
from tilec_nvidia.nvmma_tile import NvmmaTile


def test_the_matmul_loop_copies_from_one_address_an_operand():
    compiled = compile_case(
        (1024, 1024, 4096), "fp16", "fp16", (128, 128, 64), 8, 3, False, target="sm_90a"
    )
    loop = max(_ptx_loops(compiled.asm["ptx"]), key=len)
    copies = re.findall(r"cp\.async\.cg\.shared\.global \[(%\w+)(?:\+(\d+))?\]", loop)
    assert len(copies) == 8, loop
    assert len({base for base, _ in copies}) == 2, copies  # A's ring and B's


TILES = [SwizzledTile(64, 32, 2), SwizzledTile(32, 64, 2, True), SwizzledTile(1, 64, 4),
         NvmmaTile(128, 64, 2, 128), NvmmaTile(64, 128, 2, 128, True), NvmmaTile(64, 64, 1, 64),
         NvmmaTile(64, 128, 1, 64, True), NvmmaTile(64, 32, 4, 128)]  # fmt: skip


@pytest.mark.parametrize("tile", TILES, ids=repr)
def test_a_move_by_whole_periods_adds_a_constant(tile):
    rows, cols = tile.periods
    for row, col in itertools.product(range(tile.rows), range(tile.cols)):
        for dr, dc in ((rows, 0), (0, cols), (rows, cols)):
            if row + dr < tile.rows and col + dc < tile.cols:
                moved = tile.offset(row + dr, col + dc) - tile.offset(row, col)
                assert moved == tile.offset(dr, dc) - tile.offset(0, 0), (row, col, dr, dc)
