"""Where a fused persistent matmul (`tl.range(..., flatten=True)`: fused_loops_kernels.py's, as
benchmarks/persistent_vs_triton.py's `persistent` kernel, B stored N x K, tiles in groups of 8
rows) computes the addresses of the copies it issues: before its dots
(`pipeline_branches.address_anchor`), so that the barrier after the wgmma wait is followed by
the copies alone, as in Triton 3.6's fused loop, whose pointer math ptxas schedules among the
wgmmas. With the math after the barrier (the prologue's `scf.if` cloned for iteration i + 2,
then a 32-bit multiply and two 64-bit multiply-adds a copy), each copy was issued later than in
the unfused nest or in Triton's loop. Checked in the gir, in the PTX, and on the CPU wgmma
emulator against NumPy."""

from __future__ import annotations

import re

import numpy as np
import pytest
from fused_loops_kernels import persistent_matmul
from gir_check import needs_ptxas
from test_fused_loops_emulated import nested
from test_lower_wgmma import _ptxas_report
from test_lower_wgmma_emulated import _operands, run_emulated

import tilec

SIGNATURE = {"a_ptr": "*fp16", "b_ptr": "*fp16", "c_ptr": "*fp16", "M": "i32", "N": "i32",
             "K": "i32"}  # fmt: skip
PROGRAMS = 3


def compiled(blocks=(128, 256, 64), warps: int = 8, stages: int = 3, programs: int = PROGRAMS):
    bm, bn, bk = blocks
    return tilec.compile(persistent_matmul, SIGNATURE,
                         dict(BM=bm, BN=bn, BK=bk, PROGRAMS=programs),
                         divisibility=("a_ptr", "b_ptr", "c_ptr", "M", "N", "K"),
                         backend="nvidia", target="sm_90a", num_warps=warps,
                         num_stages=stages)  # fmt: skip


def _fused_loop(gir: str) -> str:
    return [part for part in gir.split("scf.for")[1:] if "gpu.async_copy" in part][-1]


@pytest.mark.parametrize(("blocks", "warps", "stages"), [((128, 256, 64), 8, 3),
                                                         ((128, 128, 64), 8, 4)])  # fmt: skip
def test_the_copies_addresses_come_before_the_dot(blocks, warps, stages):
    """The prologue's clone for the copies' iteration and their pointers and masks before the
    dot; after it, the barrier and the copies only, then this iteration's prologue and the
    epilogue (the default order, one block an SM; the loads-first order issues everything
    before the dot, as before)."""
    gir = compiled(blocks, warps, stages).asm["gir"]
    assert not nested(gir)
    loop = _fused_loop(gir)
    before, after = loop.split("gpu.warp_group_dot ", 1)
    assert before.count("tile.addptr") >= 2 and before.count("scf.if") == 1  # the clone
    issue = after.split("scf.if", 1)[0]
    assert "tile.addptr" not in issue and "arith." not in issue.split("tile.barrier", 1)[-1]
    # this iteration's prologue, which only the epilogue reads, after the copies
    # (`pipeline_branches.defer_prologue`), then the epilogue
    assert after.count("scf.if") == 2 and "arith.divsi" in after.split("scf.if", 2)[1]


def test_ptx_issues_the_copies_right_after_the_barrier():
    """128x256x64 (the benchmark's best config on both sides): the `bar.sync` after the wgmma
    wait is followed by the 12 copies with no global address math or branch among them."""
    ptx = compiled().asm["ptx"]
    loop = ptx.split("wgmma.wait_group.sync.aligned 1;", 1)[1]
    issue = loop.split("bar.sync", 1)[1].split("cp.async.commit_group", 1)[0]
    assert issue.count("cp.async.cg.shared.global") == 12
    assert not re.search(r"\bbra\b|\brem\.|\bdiv\.", issue), issue
    # the slot's shared address a ring (A's, B's), no global address: LLVM sinks the former
    assert len(re.findall(r"\b(?:mad|mul)\.(?:wide|lo)", issue)) <= 2, issue


def test_the_row_pointers_are_carried(tmp_path):
    """`a_ptr + rm[:, None] * K` and `b_ptr + rn[None, :] * K` are computed in the prologue's
    `scf.if` (and its clone for the copies' iteration) and carried, not recomputed each
    iteration (`fuse_nested_loops._compact`): the K iteration's PTX multiplies no row index by
    K, and the kernel holds no more registers than Triton's (212), without spills."""
    kernel = compiled()
    loop = _fused_loop(kernel.asm["gir"])
    header = loop.split("\n", 2)[1]
    assert "tensor<128x1x!tile.ptr<f16>" in header and "tensor<1x256x!tile.ptr<f16>" in header
    ptx = kernel.asm["ptx"]
    step = ptx.split("wgmma.commit_group.sync.aligned;", 1)[1].split("cp.async.commit_group", 1)[0]
    assert not re.search(r"\bmul\.lo\.s32|\brem\.", step), step
    needs_ptxas()
    registers, report = _ptxas_report(ptx, tmp_path)
    assert registers <= 212 and "0 bytes spill stores" in report


def test_the_epilogue_recomputes_its_tile():
    """The epilogue computes the tile's row and column (`tile_of`'s divisions) from the tile
    index itself (`fuse_nested_loops._recompute_scalars`): the prologue's scf.if passes the
    epilogue nothing, so its original, which the copies no longer read, is dead code (LLVM drops
    it) and a K iteration branches over two blocks (the clone, the epilogue), as Triton's."""
    loop = _fused_loop(compiled().asm["gir"])
    epilogue = loop.split("gpu.warp_group_dot_wait", 1)[1].split("tile.store", 1)[0]
    assert "arith.divsi" in epilogue
    ptx = compiled().asm["ptx"]
    body = ptx.split("wgmma.commit_group.sync.aligned;", 1)[1]
    # after the dots: the copies, then one branch over the epilogue (none over a prologue)
    between = body.split("cp.async.commit_group;", 1)[1].split("wgmma.wait_group.sync.aligned 0;")[
        0
    ]
    assert len(re.findall(r"\bbra(?:\.uni)?\s", between)) == 1, between


@pytest.mark.parametrize(("m", "n", "k", "bn"), [(256, 256, 192, 128), (144, 272, 208, 128),
                                                (128, 256, 0, 128), (256, 512, 208, 256),
                                                (208, 304, 80, 256)])  # fmt: skip
def test_on_the_emulator(m, n, k, bn):
    """128x128x64 and 128x256x64, 8 warps, 3 stages on the CPU wgmma emulator: several tiles a
    program, M, N and K not multiples of the tile (multiples of 16, as the divisibility the
    kernel is compiled with says), K = 0 (the epilogue stores zeros)."""
    kernel = compiled((128, bn, 64), 8, 3, programs=2)
    a, b, a64, b64 = _operands("fp16", m, n, max(k, 1))
    a, bt = a[:, :k].copy(), b[:k].T.copy()  # B stored N x K
    c = np.full(m * n, np.nan, np.float16)
    run_emulated(kernel, [a.reshape(-1), bt.reshape(-1), c, m, n, k], (2,))
    expected = a64[:, :k] @ b64[:k]
    np.testing.assert_allclose(c.reshape(m, n).astype(np.float64), expected, rtol=1e-2, atol=2e-2)
