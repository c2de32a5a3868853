"""The AMD CDNA configs of the autotuned examples (`examples/matmul_autotune.py`,
`examples/attention_autotune.py`) compiled for gfx942 without a GPU: each fits the 64 KB LDS,
spills no registers and runs on the matrix cores, so that tuning on a CDNA GPU times every config
instead of skipping the ones that can never compile there."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest

import tilec
import tilec.runtime.compiler
from tilec_amd.arch import ARCHS

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
sys.path.insert(0, str(EXAMPLES))
try:
    import attention_autotune
    import matmul_autotune
finally:
    sys.path.remove(str(EXAMPLES))

ARCH = "gfx942"
MATMUL = {"a_ptr": "*fp16", "b_ptr": "*fp16", "c_ptr": "*fp32", "bias_ptr": "*fp32"}
MATMUL |= {name: "i32" for name in ("M", "N", "K", "stride_am", "stride_ak", "stride_bk",
                                    "stride_bn", "stride_cm", "stride_cn")}  # fmt: skip
STRIDES = [f"stride_{t}{d}" for t in "qkvo" for d in ("z", "h", "n" if t in "kv" else "m", "k")]
ATTENTION = {**{p: "*fp16" for p in ("Q", "K", "V", "Out")}, "sm_scale": "fp32",
             **{s: "i32" for s in [*STRIDES, "H", "N_CTX"]}}  # fmt: skip

MATMUL_CONFIGS = [config for target, config in matmul_autotune.TARGETS if target == "amd"]
ATTENTION_CONFIGS = [
    (config, head_dim)
    for target, (lowest, highest), config in attention_autotune.TARGETS
    if target == "amd"
    for head_dim in (64, 128)
    if lowest <= head_dim <= highest
]


def _check(kernel) -> None:
    assembly = kernel.asm["amdgcn"]
    assert 0 < kernel.metadata["shared_bytes"] <= ARCHS.check(ARCH).shared_memory_bytes
    assert re.search(r"\.vgpr_spill_count:\s+0\b", assembly), "registers spilled"
    assert re.search(r"\bv_mfma_f32_\w+_f16\b", assembly), "the dots left the matrix cores"


def test_every_head_dim_has_amd_configs(monkeypatch):
    """The attention example's pruning leaves AMD configs for every head dim, only AMD's."""
    amd = tilec.runtime.compiler.get_backend("amd", require_available=False)
    monkeypatch.setattr(attention_autotune, "get_backend", lambda name: amd)
    for head_dim in (16, 32, 64, 128, 256):
        chosen = attention_autotune.for_this_launch(
            attention_autotune.CONFIGS, {}, HEAD_DIM=head_dim, CAUSAL=True
        )
        expected = [c for c, d in ATTENTION_CONFIGS if d == (64 if head_dim <= 64 else 128)]
        assert chosen == expected, head_dim


@pytest.mark.parametrize("config", MATMUL_CONFIGS, ids=str)
def test_amd_matmul_configs_fit_gfx942(config):
    kernel = tilec.compile(
        matmul_autotune.matmul_kernel, MATMUL, dict(config.kwargs), backend="amd", target=ARCH,
        num_warps=config.num_warps, num_stages=config.num_stages,
    )  # fmt: skip
    _check(kernel)


@pytest.mark.parametrize(("config", "head_dim"), ATTENTION_CONFIGS, ids=str)
def test_amd_attention_configs_fit_gfx942(config, head_dim):
    constexprs = dict(config.kwargs, HEAD_DIM=head_dim, CAUSAL=True)
    kernel = tilec.compile(
        attention_autotune.attn_fwd, ATTENTION, constexprs, backend="amd", target=ARCH,
        num_warps=config.num_warps, num_stages=config.num_stages,
    )  # fmt: skip
    _check(kernel)
