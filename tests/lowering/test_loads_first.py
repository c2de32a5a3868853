"""pipeline-loops' loads-first order (`pipeline_loops.LOADS_FIRST`; by default in matmul loops of
kernels of three or more blocks an SM, issue 23):
each iteration waits for the previous iteration's asynchronous dots, refills the slot they read,
then waits for its own tile and issues its dots. Checked in the gir, in the sm_90a PTX of the
sweep's matmul (the order benchmarks/matmul_ptx_variants.py's `loads-first` makes by hand, which
ptxas assembles), on the CPU wgmma emulator against NumPy at 3 and 4 stages, and on the GPU
(`-m gpu`). Compiles go to
a private cache (the flag is not part of the cache key) and the in-memory cache is cleared
around each test."""

from __future__ import annotations

import re

import numpy as np
import pytest
from sweep_matmul_case import compile_case
from test_attention_bwd_sm90 import _ptx_loops
from test_attention_fwd_sm90 import compile_fwd
from test_lower_mma import _bits, _floats, _nvidia_available
from test_lower_pipeline import compiled, tutorial_kernel
from test_lower_wgmma_emulated import _operands, run_emulated

from tilec.layout import pipeline_loops
from tilec.runtime import cache

RNG = np.random.default_rng(23)


@pytest.fixture
def loads_first(monkeypatch, tmp_path):
    monkeypatch.setenv("TILEC_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setattr(pipeline_loops, "LOADS_FIRST", True)
    cache.clear_memory()
    yield
    cache.clear_memory()


def _order(text: str, marks: dict[str, str]) -> list[str]:
    """The names of `marks` (name: regex) in the order their first matches appear in `text`."""
    found = {name: re.search(pattern, text) for name, pattern in marks.items()}
    assert all(found.values()), {name: bool(m) for name, m in found.items()}
    return sorted(found, key=lambda name: found[name].start())  # type: ignore[union-attr]


def test_the_gir_loop_refills_before_it_waits_for_its_tile(loads_first):
    kernel = compiled(tutorial_kernel, 3, (64, 64, 32), 4, target="sm_90a")
    body = kernel.asm["gir"].split("scf.for", 1)[1]
    marks = {"dot wait": r"gpu\.warp_group_dot_wait %acc\w* \{pendings = 0", "copies":
             r"gpu\.async_copy_global_to_local", "tile wait": r"gpu\.async_wait \{num = 2",
             "dot": r"= gpu\.warp_group_dot "}  # fmt: skip
    assert _order(body, marks) == ["dot wait", "copies", "tile wait", "dot"]


DEFAULT_ORDER = {"tile wait": r"gpu\.async_wait \{num = \d", "dot": r"= gpu\.warp_group_dot ",
                 "copies": r"gpu\.async_copy_global_to_local"}  # fmt: skip


def _gir_loop(kernel) -> str:
    return kernel.asm["gir"].split("scf.for", 1)[1]


@pytest.mark.parametrize(("blocks", "warps", "stages", "first"), [
    ((64, 128, 32), 4, 4, True),  # 48 KB of rings: four blocks an SM
    ((64, 64, 32), 4, 3, True),
    ((128, 128, 64), 8, 3, False),  # 96 KB: two blocks
    ((128, 256, 64), 8, 3, False),  # one block: the tensor cores are the limit
])  # fmt: skip
def test_by_default_a_matmul_refills_first_from_three_blocks_an_sm(blocks, warps, stages, first):
    assert pipeline_loops.LOADS_FIRST is None and pipeline_loops.LOADS_FIRST_BLOCKS == 3
    kernel = compile_case((4096, 4096, 4096), "fp16", "fp16", blocks, warps, stages, False,
                          target="sm_90a")  # fmt: skip
    body = _gir_loop(kernel)
    if first:
        marks = {"dot wait": r"gpu\.warp_group_dot_wait %acc\w* \{pendings = 0",
                 **DEFAULT_ORDER}  # fmt: skip
        assert _order(body, marks) == ["dot wait", "copies", "tile wait", "dot"]
    else:
        assert _order(body, DEFAULT_ORDER) == ["tile wait", "dot", "copies"]


def test_by_default_a_loop_of_two_dots_keeps_its_order(monkeypatch, tmp_path):
    """The attention forward (Q K^T and P V in one loop, several blocks an SM at d64) compiles
    as with `LOADS_FIRST` False (the rule was measured on matmuls alone); its P V alone could
    refill first (it did, with a wait more an iteration, before the rule counted dots)."""
    ptx = {}
    for setting in (None, False):
        monkeypatch.setattr(pipeline_loops, "LOADS_FIRST", setting)
        monkeypatch.setenv("TILEC_CACHE_DIR", str(tmp_path / str(setting)))
        cache.clear_memory()
        try:
            ptx[setting] = compile_fwd(64, False, (64, 64, 4, 3)).asm["ptx"]
        finally:
            cache.clear_memory()
    assert ptx[None] == ptx[False]


def test_loads_first_false_keeps_the_default_order_everywhere(monkeypatch, tmp_path):
    monkeypatch.setenv("TILEC_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setattr(pipeline_loops, "LOADS_FIRST", False)
    cache.clear_memory()
    try:
        kernel = compile_case((4096, 4096, 4096), "fp16", "fp16", (64, 128, 32), 4, 4, False,
                              target="sm_90a")  # fmt: skip
    finally:
        cache.clear_memory()
    assert _order(_gir_loop(kernel), DEFAULT_ORDER) == ["tile wait", "dot", "copies"]


def test_the_sweep_matmul_ptx_in_loads_first_order(loads_first):
    kernel = compile_case(
        (1024, 1024, 32768), "bf16", "bf16", (128, 128, 64), 8, 3, False, target="sm_90a"
    )
    loop = max(_ptx_loops(kernel.asm["ptx"]), key=len)
    marks = {"dot wait": r"wgmma\.wait_group\.sync\.aligned 0;", "copies": r"cp\.async\.cg",
             "tile wait": r"cp\.async\.wait_group \s*2;", "dot": r"wgmma\.mma_async"}  # fmt: skip
    assert _order(loop, marks) == ["dot wait", "copies", "tile wait", "dot"]
    assert kernel.asm["cubin"][:4] == b"\x7fELF"  # ptxas assembles it


@pytest.mark.parametrize(("dtype", "stages", "blocks", "warps", "sizes"), [
    ("fp16", 3, (64, 64, 32), 4, (80, 96, 80)),
    ("bf16", 3, (128, 64, 64), 8, (128, 64, 144)),
    ("fp16", 4, (64, 64, 32), 4, (64, 64, 160)),
])  # fmt: skip
def test_loads_first_matmul_on_the_emulator(loads_first, dtype, stages, blocks, warps, sizes):
    m, n, k = sizes
    kernel = compiled(tutorial_kernel, stages, blocks, warps, target="sm_90a", dtype=dtype)
    assert "gpu.warp_group_dot_wait" in kernel.asm["gir"].split("scf.for", 1)[1]
    a, b, a64, b64 = _operands(dtype, m, n, k)
    c = np.full(m * n, np.nan, np.float32)
    grid = (-(-m // blocks[0]), -(-n // blocks[1]))
    run_emulated(kernel, [a.reshape(-1), b.reshape(-1), c, m, n, k, k, 1, n, 1], grid)
    np.testing.assert_allclose(c.reshape(m, n), a64 @ b64, rtol=1e-5, atol=1e-4)


gpu = pytest.mark.skipif(not _nvidia_available(), reason="needs an NVIDIA GPU")


@gpu
@pytest.mark.gpu
@pytest.mark.parametrize(("stages", "blocks", "warps"), [
    (3, (64, 64, 32), 4), (4, (64, 64, 32), 4), (3, (128, 128, 64), 8),
])  # fmt: skip
@pytest.mark.parametrize("dtype", ["fp16", "bf16"])
def test_loads_first_matmul_on_the_gpu(loads_first, stages, blocks, warps, dtype):
    """As test_lower_pipeline's GPU matmul, in the loads-first order (the sweep's long-K
    config among them), K long enough for every slot to be refilled many times."""
    m, n, k = 200, 136, 1064
    a = _bits(RNG.standard_normal((m, k)), dtype)
    b = _bits(RNG.standard_normal((k, n)), dtype)
    c = np.full(m * n, np.nan, np.float32)
    kernel = compiled(tutorial_kernel, stages, blocks, warps, target=None, dtype=dtype)
    grid = (-(-m // blocks[0]), -(-n // blocks[1]))
    kernel.run(grid, [a.reshape(-1), b.reshape(-1), c, m, n, k, k, 1, n, 1])
    expected = _floats(a, dtype).astype(np.float64) @ _floats(b, dtype)
    np.testing.assert_allclose(c.reshape(m, n), expected, rtol=1e-5, atol=1e-4)
