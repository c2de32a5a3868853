"""`tl.range(..., flatten=True)` on AMD: the persistent matmul of
tests/lowering/test_fused_loops_sm90.py fused (`fuse-nested-loops`) and pipelined across its
tiles through the registers -> LDS ring (gfx9's and gfx11's stream pipeline: the prologue's
`scf.if` cloned for the iteration the loads are for), run on the CPU emulator with AMD's matrix
instructions against NumPy: more tiles than programs, K of 0 and of several tiles."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest
from amd_mma_emulator import AmdMmaHostTargetInfo

sys.path.insert(0, str(Path(__file__).parent.parent / "lowering"))
from cpu_emulator import compile_kernel, launch
from test_fused_loops_emulated import nested
from test_fused_loops_sm90 import PROGRAMS, SIGNATURE, persistent_matmul
from test_lower_wgmma_emulated import _operands

import tilec
from tilec.ir.parser import parse_module
from tilec.lowering import lower_module


@pytest.mark.parametrize(("arch", "lanes"), [("gfx1100", 32), ("gfx942", 64)])
@pytest.mark.parametrize(("m", "n", "k"), [(128, 128, 64), (64, 128, 0)])
def test_fused_persistent_matmul_on_the_emulator(arch, lanes, m, n, k):
    kernel = tilec.compile(
        persistent_matmul, SIGNATURE, dict(BM=64, BN=64, BK=32, PROGRAMS=PROGRAMS, GROUP=1, B_NK=False, FLAT=True),
        backend="amd", target=arch, num_warps=4, num_stages=2, divisibility=list(SIGNATURE),
    )  # fmt: skip
    gir = kernel.asm["gir"]
    assert not nested(gir) and "gpu.local_store" in gir  # fused, its ring staged
    module = parse_module(gir, "k.gir")
    lowered = lower_module(module, AmdMmaHostTargetInfo(lanes), kernel.metadata["kernel"])
    a, b, a64, b64 = _operands("fp16", m, n, max(k, 1))
    a, b = a[:, :k].copy(), b[:k].copy()
    c = np.full(m * n, np.nan, np.float32)
    launch(compile_kernel(lowered.llvm_ir, lowered.name), lowered.params,
           [a.reshape(-1), b.reshape(-1), c, m, n, k], (PROGRAMS,), 4 * lanes, lanes)  # fmt: skip
    np.testing.assert_allclose(c.reshape(m, n), a64[:, :k] @ b64[:k], rtol=1e-5, atol=1e-4)
