"""A persistent matmul (`tl.range(..., flatten=True)`, Triton 3.6 tutorial 09's pattern) for
sm_90a: `fuse-nested-loops` makes its tile loop and K loop one loop, which `pipeline-loops`
pipelines across tile boundaries (the prologue's `scf.if` cloned for the iteration the copies
are for, `tilec.layout.pipeline_branches`) with the wgmma left in flight (`pendings = 1`) and
waited for in the epilogue's `scf.if`. Checked in the gir, by ptxas (no serialized wgmma), on
the CPU emulators against NumPy (K of 0, 1 and several tiles, more tiles than programs; sm_80's
mma.sync too),
and on the GPU against the interpreter (`-m gpu`)."""

from __future__ import annotations

import re

import numpy as np
import pytest
from fused_loops_kernels import persistent_matmul
from gir_check import needs_ptxas
from test_fused_loops_emulated import emulate, nested
from test_lower_mma import _nvidia_available
from test_lower_wgmma import _ptxas_report
from test_lower_wgmma_emulated import _operands, run_emulated

import tilec
import tilec.language as tl
from tilec.runtime import check

SIGNATURE = {"a_ptr": "*fp16", "b_ptr": "*fp16", "c_ptr": "*fp32", "M": "i32", "N": "i32",
             "K": "i32"}  # fmt: skip
PROGRAMS = 3


def compiled(flat: bool = True, stages: int = 3, blocks=(64, 64, 32), warps: int = 4,
             target: str | None = "sm_90a", backend: str = "nvidia", out: str = "fp32"):  # fmt: skip
    bm, bn, bk = blocks
    options = {} if backend == "interp" else {"target": target}
    return tilec.compile(
        persistent_matmul, {**SIGNATURE, "c_ptr": f"*{out}"},
        dict(BM=bm, BN=bn, BK=bk, PROGRAMS=PROGRAMS, GROUP=1, B_NK=False,
             FLAT=flat),
        divisibility=("a_ptr", "b_ptr", "c_ptr", "M", "N", "K"), backend=backend,
        num_warps=warps, num_stages=stages, **options,
    )  # fmt: skip


def _fused_loop(gir: str) -> str:
    """The text of the gir's pipelined fused loop (the one holding the async copies)."""
    loops = [part for part in gir.split("scf.for")[1:] if "gpu.async_copy_global_to_local" in part]
    assert loops, "no pipelined loop"
    return loops[-1]


_PROLOGUE = r"scf\.if .*\{\n\s+%\S+ = arith\.addi .*\n\s+%\S+ = arith\.divsi"


def test_the_fused_loop_is_pipelined_across_tiles():
    """128x128x64, 8 warps (the default order): the prologue's scf.if cloned for iteration
    i + 2 (tile // num_n, ...) and the copies' addresses and masks before the dot; after it a
    barrier, the copies alone, the prologue of this iteration (which only the epilogue reads:
    `pipeline_branches.defer_prologue`), then the epilogue's scf.if, which waits for the dot
    in flight before it stores the tile (Triton's order)."""
    gir = compiled(blocks=(128, 128, 64), warps=8).asm["gir"]
    loop = _fused_loop(gir)
    assert gir.count("scf.for") == 2  # the versioned copy without the K loop, the fused loop
    assert re.search(r"gpu\.warp_group_dot .*\{pendings = 1 : i32\}", loop)
    # the prologue for this iteration, its clone for iteration i + 2 (which the updates of the
    # carried values reuse: `pipeline_branches.updates_left`), the epilogue
    assert loop.count("scf.if") == 3
    before, after = loop.split("gpu.warp_group_dot ", 1)
    assert len(re.findall(_PROLOGUE, before)) == 1  # the clone for i + 2
    assert "tile.addptr" in before and "tile.addptr" not in after.split("scf.if", 1)[0]
    marks = [r"tile\.barrier", r"gpu\.async_copy_global_to_local", r"gpu\.async_commit_group",
             _PROLOGUE,
             r"scf\.if .*\{\n\s+%\S+ = gpu\.warp_group_dot_wait %acc\S* \{pendings = 0",
             r"tile\.store"]  # fmt: skip
    found = [re.search(mark, after) for mark in marks]
    assert all(found), [bool(f) for f in found]
    starts = [f.start() for f in found]  # type: ignore[union-attr]
    assert starts == sorted(starts), starts
    # between the barrier and the commit: the copies, nothing computed (`address_anchor`)
    issue = after[starts[0] : starts[2]].splitlines()[1:-1]
    assert all("gpu.async_copy_global_to_local" in line for line in issue), issue


def test_in_the_loads_first_order_the_copies_lead():
    """64x64x32, 4 warps (three blocks an SM: `pipeline_loops.LOADS_FIRST`): the loop waits
    for the previous iteration's dot, refills, then waits for its tile; the epilogue still
    waits for the dot it follows."""
    loop = _fused_loop(compiled().asm["gir"])
    before, after = loop.split("gpu.warp_group_dot ", 1)
    assert "gpu.async_copy_global_to_local" in before and "gpu.async_copy" not in after
    assert re.search(r"scf\.if .*\{\n\s+%\S+ = gpu\.warp_group_dot_wait %acc\S* \{pendings = 0",
                     after)  # fmt: skip


def test_without_flatten_the_k_loop_is_pipelined_alone():
    gir = compiled(flat=False).asm["gir"]
    assert "flatten" not in gir and gir.count("scf.for") == 2
    tile_loop = gir.split("scf.for", 1)[1]
    assert "gpu.async_copy_global_to_local" in tile_loop.split("scf.for", 1)[0]  # its prologue


@pytest.mark.parametrize(("blocks", "warps", "out"), [((128, 128, 64), 8, "fp32"),
                                                     ((128, 256, 64), 8, "fp16")])  # fmt: skip
def test_ptxas_keeps_the_wgmmas_asynchronous(blocks, warps, out, tmp_path):
    """The benchmark's configs (benchmarks/persistent_vs_triton.py): fused, the wgmma in flight
    across iterations, no spills, nothing serialized."""
    needs_ptxas()
    kernel = compiled(blocks=blocks, warps=warps, out=out)
    assert not nested(kernel.asm["gir"])
    ptx = kernel.asm["ptx"]
    assert "wgmma.wait_group.sync.aligned 1;" in ptx  # in flight across iterations
    registers, report = _ptxas_report(ptx, tmp_path)
    assert "0 bytes spill stores, 0 bytes spill loads" in report and registers <= 255
    assert "serialized" not in report  # ptxas would say so if it serialized the wgmmas


def test_a_nest_whose_epilogue_scratch_would_not_fit_stays_a_nest():
    """128x256x64, 3 stages, an f32 tile stored: rings of 147456 bytes and a 131072-byte
    conversion in the epilogue do not fit the 232448 an sm_90 block has; unfused, the
    conversion comes after the K loop's rings are freed, and the kernel compiles as before."""
    kernel = compiled(blocks=(128, 256, 64), warps=8, out="fp32")
    assert nested(kernel.asm["gir"])
    assert "flatten" in kernel.asm["gir"]  # the mark stays on the nest left alone
    assert kernel.metadata["shared_bytes"] <= 232448


@pytest.mark.parametrize(("m", "n", "k", "target"), [
    (128, 192, 96, "sm_90a"), (64, 128, 32, "sm_90a"), (96, 64, 0, "sm_90a"),
    (128, 128, 200, "sm_90a"), (128, 128, 64, "sm_80"), (96, 64, 0, "sm_80"),
])  # fmt: skip
def test_fused_persistent_matmul_on_the_emulator(m, n, k, target):
    """More tiles than programs, K of 0, 1 and several tiles (ragged too); wgmma in flight on
    sm_90a, mma.sync from ldmatrix on sm_80."""
    kernel = compiled(target=target)
    assert not nested(kernel.asm["gir"])
    a, b, a64, b64 = _operands("fp16", m, n, max(k, 1))
    a, b = a[:, :k].copy(), b[:k].copy()
    c = np.full(m * n, np.nan, np.float32)
    args = [a.reshape(-1), b.reshape(-1), c, m, n, k]
    if target == "sm_90a":
        run_emulated(kernel, args, (PROGRAMS,))
    else:
        emulate(kernel, args, (PROGRAMS,))
    np.testing.assert_allclose(c.reshape(m, n), a64[:, :k] @ b64[:k], rtol=1e-5, atol=1e-4)


gpu = pytest.mark.skipif(not _nvidia_available(), reason="needs an NVIDIA GPU")


@gpu
@pytest.mark.gpu
@pytest.mark.parametrize(("blocks", "warps", "stages"), [((64, 64, 32), 4, 3),
                                                         ((128, 256, 64), 8, 3),
                                                         ((128, 128, 64), 8, 4)])  # fmt: skip
@pytest.mark.parametrize(("m", "n", "k"), [(512, 768, 640), (200, 136, 1064), (256, 256, 0)])
def test_fused_persistent_matmul_on_the_gpu(blocks, warps, stages, m, n, k):
    """The fused, pipelined kernel on the GPU against the interpreter (which runs the fused
    loop unpipelined) and NumPy."""
    rng = np.random.default_rng(m + n + k)
    a = rng.standard_normal((m, k)).astype(np.float16)
    b = rng.standard_normal((k, n)).astype(np.float16)
    kernel = compiled(blocks=blocks, warps=warps, stages=stages, target=None, out="fp16")
    c = np.full(m * n, np.nan, np.float16)
    check.run_checked(kernel, (PROGRAMS,), [a.reshape(-1), b.reshape(-1), c, m, n, k],
                      lambda: compiled(blocks=blocks, backend="interp", out="fp16"))  # fmt: skip
    expected = a.astype(np.float64) @ b.astype(np.float64)
    np.testing.assert_allclose(c.reshape(m, n), expected, rtol=1e-2, atol=5e-2)


@tilec.jit
def branchy(a_ptr, b_ptr, c_ptr, K):
    """A K loop whose column offset comes from an `if` on a run-time value (an scf.if)."""
    offs = tl.arange(0, 64)
    rk = tl.arange(0, 32)
    acc = tl.zeros((64, 64), dtype=tl.float32)
    for k in range(0, K // 32):
        if k % 2 == 0:
            col = k * 32
        else:
            col = (k - 1) * 32 + 32
        a = tl.load(a_ptr + offs[:, None] * K + (col + rk)[None, :])
        b = tl.load(b_ptr + (col + rk)[:, None] * 64 + offs[None, :])
        acc = tl.dot(a, b, acc)
    tl.store(c_ptr + offs[:, None] * 64 + offs[None, :], acc)


def test_a_loop_of_no_flattened_nest_keeps_its_scf_if_unpipelined():
    """pipeline-loops takes an scf.if into an address slice only in a fused loop: elsewhere
    (no flatten) such a loop is left as before, unpipelined."""
    kernel = tilec.compile(branchy, {"a_ptr": "*fp16", "b_ptr": "*fp16", "c_ptr": "*fp32",
                                     "K": "i32"}, divisibility=("a_ptr", "b_ptr", "c_ptr", "K"),
                           backend="nvidia", target="sm_90a", num_warps=4, num_stages=3)  # fmt: skip
    gir = kernel.asm["gir"]
    assert "scf.if" in gir.split("scf.for", 1)[1]
    assert "gpu.async_copy_global_to_local" not in gir and "fused_nest" not in gir
