"""examples/attention.py compiled for NVIDIA without a GPU: the key loops stay in the tensor-core
layouts (the one conversion left in a loop is p's, to the second dot's operand, which picks
registers), and the PTX uses the tensor cores (mma.sync, ldmatrix and cp.async on sm_80; wgmma
with p in registers, K and V in cp.async rings and q in shared memory once, on sm_90a) and
assembles without spills."""

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


@pytest.fixture(scope="module", params=["sm_80", "sm_90a"])
def kernel(request):
    sys.path.insert(0, str(ROOT / "examples"))
    try:
        from attention import attn_fwd
    finally:
        sys.path.remove(str(ROOT / "examples"))
    return tilec.compile(
        attn_fwd, SIGNATURE, dict(HEAD_DIM=64, BLOCK_M=128, BLOCK_N=64, CAUSAL=True),
        backend="nvidia", target=request.param, num_warps=8, num_stages=3,
        divisibility=["Q", "K", "V", "Out", *(s for s in STRIDES if not s.endswith("k"))],
        equal_to_1=[s for s in STRIDES if s.endswith("k")],
    )  # fmt: skip


def _loop_bodies(gir: str) -> list[str]:
    """The text of each outermost `scf.for` of the kernel (an asynchronous wgmma's loop sits
    inside an `scf.if` guard)."""
    loops = re.finditer(r"^( *)%[^\n]*= scf\.for .*?^\1  scf\.yield [^\n]*$", gir, re.M | re.S)
    return [m.group(0) for m in loops]


def _wgmma(kernel) -> bool:
    return kernel.metadata["target"] == "sm_90a"


def test_attention_loops_stay_in_tensor_core_layouts(kernel):
    gir = kernel.asm["gir"]
    if _wgmma(kernel):
        assert "#gpu.mma<{version = 3, warpsPerCTA = [8, 1], instrShape = [16, 64, 16]}>" in gir
    else:
        assert "#gpu.mma<{version = 2, warpsPerCTA = [8, 1], instrShape = [16, 8]}>" in gir
    loops = _loop_bodies(gir)
    assert len(loops) == 2  # the unmasked blocks, then the diagonal
    # The second loop's prologue reuses the first loop's ring: a barrier comes before each.
    assert len(re.findall(r"tile\.barrier\n\s*%\S+ = gpu\.local_alloc", gir)) == 2
    dot = "gpu.warp_group_dot " if _wgmma(kernel) else "tile.dot"
    for body in loops:
        assert body.count(dot) == 2
        conversions = re.findall(r"gpu\.convert_layout .*", body)
        assert len(conversions) == 1 and "#dot_op" in conversions[0], conversions
        assert re.search(r"tile\.reduce .*tensor<128xf32, #slice", body)
        if _wgmma(kernel):  # K and V from their rings; p @ v stays in flight into the next
            # iteration, whose copies wait for it behind a second barrier
            assert body.count("gpu.local_load") == 2 and body.count("tile.barrier") == 2
            assert "{pendings = 1 : i32}" in body and "gpu.warp_group_dot_wait" in body


def test_attention_ptx_uses_tensor_cores_and_assembles_without_spills(kernel):
    from tilec_nvidia.codegen import find_ptxas, ptx_to_cubin

    ptx = kernel.asm["ptx"]
    if _wgmma(kernel):
        assert "wgmma.mma_async.sync.aligned.m64n64k16.f32.f16.f16" in ptx
        assert re.search(r"\{%r\d+,%r\d+,%r\d+,%r\d+\}, %rd\d+, p, 1, 1, 1;", ptx)  # p
    else:
        assert "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32" in ptx
        assert "ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16" in ptx
    assert "cp.async.cg.shared.global" in ptx
    # the dots are no FMA loops (thousands of fma): the only ones are the softmax's multiply-adds,
    # contracted under enable_fp_fusion (Triton's default)
    assert ptx.count("fma.rn.f32") < 100
    if find_ptxas() is None:
        pytest.skip("ptxas is not installed: the PTX was generated but not assembled")
    info = {}
    assert ptx_to_cubin(ptx, kernel.metadata["target"], info=info)
    (report,) = info.values()
    assert report.spill_stores == 0 and report.spill_loads == 0, report
