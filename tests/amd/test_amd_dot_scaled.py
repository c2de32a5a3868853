"""`tl.dot_scaled` on gfx942 (CDNA3, no scaled MFMA) without a GPU: the operands are decoded and
scaled in bf16/f16 and multiplied with the ordinary MFMA instructions; the numerics are checked
against NumPy by tests/language/test_language_dot_scaled.py."""

from __future__ import annotations

import pytest

import tilec
import tilec.language as tl


@tilec.jit
def scaled_dot_kernel(a_ptr, sa_ptr, b_ptr, c_ptr, FMT_B: tl.constexpr):
    r, g = tl.arange(0, 64), tl.arange(0, 2)
    a = tl.load(a_ptr + r[:, None] * 32 + tl.arange(0, 32)[None, :])
    b = tl.load(b_ptr + r[:, None] * 64 + r[None, :])
    sa = tl.load(sa_ptr + r[:, None] * 2 + g[None, :])
    c = tl.dot_scaled(a, sa, "e2m1", b, None, FMT_B)
    tl.store(c_ptr + r[:, None] * 64 + r[None, :], c)


@pytest.mark.parametrize(
    ("fmt_b", "b_dtype", "instruction"),
    [("bf16", "bf16", "v_mfma_f32_32x32x8_bf16"), ("fp16", "fp16", "v_mfma_f32_32x32x8_f16"),
     ("e4m3", "u8", "v_mfma_f32_32x32x8_bf16")],
)  # fmt: skip
def test_dot_scaled_runs_on_mfma(private_cache, fmt_b, b_dtype, instruction):
    signature = {"a_ptr": "*u8", "sa_ptr": "*u8", "b_ptr": f"*{b_dtype}", "c_ptr": "*fp32"}
    compiled = tilec.compile(scaled_dot_kernel, signature, {"FMT_B": fmt_b}, backend="amd",
                             target="gfx942")  # fmt: skip
    assert instruction in compiled.asm["amdgcn"]
    assert compiled.asm.get("hsaco")
