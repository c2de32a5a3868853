"""`tl.dot_scaled` on NVIDIA targets without a GPU: Hopper and Ampere have no scaled MMA, so the
operands are decoded and scaled in bf16/f16 and multiplied on the ordinary tensor cores (wgmma on
sm_90a, mma.sync on sm_80), and ptxas assembles the result. The numerics are checked on every
backend against NumPy by tests/language/test_language_dot_scaled.py (on the GPU too, with
TILEC_TEST_BACKEND=nvidia)."""

from __future__ import annotations

import pytest

import tilec
import tilec.language as tl
from tilec_nvidia.codegen import find_ptxas


@tilec.jit
def scaled_dot_kernel(a_ptr, sa_ptr, b_ptr, sb_ptr, c_ptr, FMT_A: tl.constexpr,
                      FMT_B: tl.constexpr, A_ROWS: tl.constexpr, A_COLS: tl.constexpr,
                      B_ROWS: tl.constexpr, B_COLS: tl.constexpr, B_K_PACK: tl.constexpr):  # fmt: skip
    a = tl.load(a_ptr + tl.arange(0, A_ROWS)[:, None] * A_COLS + tl.arange(0, A_COLS)[None, :])
    b = tl.load(b_ptr + tl.arange(0, B_ROWS)[:, None] * B_COLS + tl.arange(0, B_COLS)[None, :])
    r, g = tl.arange(0, 64), tl.arange(0, 2)
    sa = tl.load(sa_ptr + r[:, None] * 2 + g[None, :])
    sb = tl.load(sb_ptr + r[:, None] * 2 + g[None, :])
    c = tl.dot_scaled(a, sa, FMT_A, b, sb, FMT_B, rhs_k_pack=B_K_PACK)
    tl.store(c_ptr + r[:, None] * 64 + r[None, :], c)


CASES = {  # name: (fmt_a, a dtype, a shape, fmt_b, b dtype, b shape, rhs_k_pack, mma operands)
    "e2m1-bf16": ("e2m1", "u8", (64, 32), "bf16", "u16", (64, 64), True, "bf16.bf16"),
    "e4m3-e5m2": ("e4m3", "u8", (64, 64), "e5m2", "fp8e5", (64, 64), True, "bf16.bf16"),
    "fp16-e2m1-mn": ("fp16", "fp16", (64, 64), "e2m1", "u8", (64, 32), False, "f16.f16"),
}


def compile_case(case: str, target: str):
    fmt_a, a_dtype, a_shape, fmt_b, b_dtype, b_shape, b_k_pack, _ = CASES[case]
    signature = {"a_ptr": f"*{a_dtype}", "sa_ptr": "*u8", "b_ptr": f"*{b_dtype}",
                 "sb_ptr": "*u8", "c_ptr": "*fp32"}  # fmt: skip
    constexprs = dict(FMT_A=fmt_a, FMT_B=fmt_b, A_ROWS=a_shape[0], A_COLS=a_shape[1],
                      B_ROWS=b_shape[0], B_COLS=b_shape[1], B_K_PACK=b_k_pack)  # fmt: skip
    return tilec.compile(scaled_dot_kernel, signature, constexprs, backend="nvidia",
                         target=target)  # fmt: skip


@pytest.mark.parametrize("case", sorted(CASES))
@pytest.mark.parametrize(
    ("target", "instruction"),
    [("sm_90a", r"wgmma.mma_async.sync.aligned.m64n64k16.f32.{}"),
     ("sm_80", r"mma.sync.aligned.m16n8k16.row.col.f32.{}.f32")],
)  # fmt: skip
def test_dot_scaled_runs_on_the_tensor_cores(case, target, instruction):
    compiled = compile_case(case, target)
    assert instruction.format(CASES[case][-1]) in compiled.asm["ptx"]
    if find_ptxas() is not None:
        assert compiled.asm.get("cubin"), "ptxas gave no cubin"
