"""examples/attention.py compiled for NVIDIA without a GPU: the key loops stay in the tensor-core
layouts (the one conversion left in a loop is p's, to the second dot's operand, which picks
registers), and the PTX uses mma.sync, ldmatrix and cp.async and assembles without spills."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest

import tilec

ROOT = Path(__file__).resolve().parents[2]
STRIDES = [f"stride_{t}{d}" for t in "qkvo" for d in ("z", "h", "n" if t in "kv" else "m", "k")]
SIGNATURE = {**{p: "*fp16" for p in ("Q", "K", "V", "Out")}, "sm_scale": "fp32",
             **{s: "i32" for s in [*STRIDES, "H", "N_CTX"]}}  # fmt: skip


@pytest.fixture(scope="module")
def kernel():
    sys.path.insert(0, str(ROOT / "examples"))
    try:
        from attention import attn_fwd
    finally:
        sys.path.remove(str(ROOT / "examples"))
    return tilec.compile(
        attn_fwd, SIGNATURE, dict(HEAD_DIM=64, BLOCK_M=128, BLOCK_N=64, CAUSAL=True),
        backend="nvidia", target="sm_90a", num_warps=8, num_stages=3,
        divisibility=["Q", "K", "V", "Out", *(s for s in STRIDES if not s.endswith("k"))],
        equal_to_1=[s for s in STRIDES if s.endswith("k")],
    )  # fmt: skip


def _loop_bodies(gir: str) -> list[str]:
    """The text of each top-level `scf.for` of the kernel."""
    return re.findall(r"^  %[^\n]*= scf\.for .*?^    scf\.yield [^\n]*$", gir, re.M | re.S)


def test_attention_loops_stay_in_tensor_core_layouts(kernel):
    gir = kernel.asm["gir"]
    assert "#gpu.mma<{version = 2, warpsPerCTA = [8, 1], instrShape = [16, 8]}>" in gir
    loops = _loop_bodies(gir)
    assert len(loops) == 2  # the unmasked blocks, then the diagonal
    # The second loop's prologue reuses the first loop's ring: a barrier comes before each.
    assert len(re.findall(r"tile\.barrier\n\s*%\S+ = gpu\.local_alloc", gir)) == 2
    for body in loops:
        assert body.count("tile.dot") == 2
        conversions = re.findall(r"gpu\.convert_layout .*", body)
        assert len(conversions) == 1 and "#dot_op" in conversions[0], conversions
        assert re.search(r"tile\.reduce .*tensor<128xf32, #slice", body)


def test_attention_ptx_uses_tensor_cores_and_assembles_without_spills(kernel):
    from tilec_nvidia.codegen import find_ptxas, ptx_to_cubin

    ptx = kernel.asm["ptx"]
    assert "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32" in ptx
    assert "ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16" in ptx
    assert "cp.async.cg.shared.global" in ptx
    assert "fma.rn.f32" not in ptx
    if find_ptxas() is None:
        pytest.skip("ptxas is not installed: the PTX was generated but not assembled")
    info = {}
    assert ptx_to_cubin(ptx, "sm_90a", info=info)
    (report,) = info.values()
    assert report.spill_stores == 0 and report.spill_loads == 0, report
