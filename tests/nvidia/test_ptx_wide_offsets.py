"""The loops' 64-bit offsets scaled from 32-bit indices reach ptxas as a widening and a shift
(`codegen.widen_then_shift`), not as LLVM's `mul.wide.s32` by a power of two, which ptxas turns
into `IMAD.WIDE`s in the loop that stall the pipelined matmul and attention on dispatch
(benchmarks/RESULTS.md, ninth session); where that form spills, the `ptx` stage keeps LLVM's
(`codegen.keep_widened_unless_it_spills`), and the cubin stage reuses the cubin assembled to
decide."""

from __future__ import annotations

import re

import pytest

import tilec
import tilec.language as tl
import tilec_nvidia.codegen as codegen
from tilec_nvidia.codegen import (
    PtxasInfo,
    find_ptxas,
    keep_widened_unless_it_spills,
    llir_to_ptx,
    ptx_to_cubin,
    widen_then_shift,
)

LOOP = """\
\tmul.wide.s32 \t%rd11, %r126, 2;
\tmul.wide.s32 \t%rd12, %r127, 2;
\t@%p2 bra \t$L__BB0_5;
$L__BB0_2:
\tmul.wide.s32 \t%rd3, %r4, 16;
\tmul.wide.s32 \t%rd5, %r6, 1;
\tmul.wide.s32 \t%rd7, %r8, 12;
\tmul.wide.u32 \t%rd67, %r7, 16;
\tmad.wide.s32 \t%rd48, %r94, 2, %rd47;
\tmul.wide.s32 \t%rd9, %r10, %r11;
\tadd.s64 \t%rd13, %rd11, %rd3;
\t@%p1 bra \t$L__BB0_2;
$L__BB0_5:
\tmul.wide.s32 \t%rd14, %r9, 2;
\tadd.s64 \t%rd15, %rd12, %rd14;
"""


def test_the_wide_multiplies_of_loops_become_a_widening_and_a_shift():
    out = widen_then_shift(LOOP)
    # outside the loop, read in it (a loop-invariant offset): rewritten
    assert "\tcvt.s64.s32 \t%rd11, %r126;\n\tshl.b64 \t%rd11, %rd11, 1;\n" in out
    # inside the loop: rewritten, by one with no shift
    assert "\tcvt.s64.s32 \t%rd3, %r4;\n\tshl.b64 \t%rd3, %rd3, 4;\n" in out
    assert "\tcvt.s64.s32 \t%rd5, %r6;\n\tmul.wide.s32 \t%rd7" in out
    left = [
        "mul.wide.s32 \t%rd12, %r127, 2;",  # outside, read only after the loop
        "mul.wide.s32 \t%rd14, %r9, 2;",  # after the loop (a forward branch is no loop)
        "mul.wide.s32 \t%rd7, %r8, 12;",  # not a power of two
        "mul.wide.u32 \t%rd67, %r7, 16;",
        "mad.wide.s32 \t%rd48, %r94, 2, %rd47;",
        "mul.wide.s32 \t%rd9, %r10, %r11;",  # a register factor
    ]
    for line in left:
        assert line in out
    assert widen_then_shift(LOOP.replace("\t@%p1 bra \t$L__BB0_2;\n", "")) == LOOP.replace(
        "\t@%p1 bra \t$L__BB0_2;\n", ""
    )  # no loop: nothing changes


def test_the_rewrite_can_be_turned_off(monkeypatch):
    monkeypatch.setattr(codegen, "WIDE_AS_SHIFT", False)
    assert widen_then_shift(LOOP) == LOOP


class FakePtxas:
    """ptx_to_cubin's stand-in: a cubin naming the text it was given, spills where asked."""

    def __init__(self, spills: dict[str, int]):
        self.spills, self.calls = spills, []

    def __call__(self, ptx, arch, *, info=None):
        kind = "widened" if "cvt.s64.s32" in ptx else "plain"
        self.calls.append(kind)
        if info is not None:
            info["k"] = PtxasInfo(registers=255, spill_stores=self.spills[kind])
        return kind.encode()


@pytest.mark.parametrize(
    ("spills", "kept", "assembled"),
    [
        ({"widened": 0, "plain": 0}, "widened", ["widened"]),
        ({"widened": 28, "plain": 0}, "plain", ["widened", "plain"]),
        ({"widened": 28, "plain": 40}, "widened", ["widened", "plain"]),
    ],
)
def test_the_widened_form_is_kept_unless_it_spills_more(monkeypatch, spills, kept, assembled):
    fake = FakePtxas(spills)
    monkeypatch.setattr(codegen, "ptx_to_cubin", fake)
    monkeypatch.setattr(codegen, "find_ptxas", lambda: "ptxas")
    chosen = keep_widened_unless_it_spills(LOOP, "sm_90a")
    assert ("cvt.s64.s32" in chosen) == (kept == "widened")
    assert fake.calls == assembled
    assert codegen._ASSEMBLED[codegen.assembly_key(chosen, "sm_90a")][0] == kept.encode()
    codegen._ASSEMBLED.clear()


def test_without_a_rewrite_or_a_ptxas_nothing_is_assembled(monkeypatch):
    fake = FakePtxas({"widened": 0, "plain": 0})
    monkeypatch.setattr(codegen, "ptx_to_cubin", fake)
    monkeypatch.setattr(codegen, "find_ptxas", lambda: None)
    assert keep_widened_unless_it_spills(LOOP, "sm_90a") == widen_then_shift(LOOP)
    monkeypatch.setattr(codegen, "find_ptxas", lambda: "ptxas")
    no_loop = "\tmul.wide.s32 \t%rd11, %r126, 2;\n"
    assert keep_widened_unless_it_spills(no_loop, "sm_90a") == no_loop
    assert fake.calls == []


@tilec.jit
def k_loop_matmul(a_ptr, b_ptr, c_ptr, K, stride_am, stride_bk, stride_cm,
                  BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):  # fmt: skip
    rm = tl.arange(0, BLOCK_M)
    rn = tl.arange(0, BLOCK_N)
    rk = tl.arange(0, BLOCK_K)
    acc = tl.zeros([BLOCK_M, BLOCK_N], dtype=tl.float32)
    for k in range(0, K, BLOCK_K):
        a = tl.load(a_ptr + rm[:, None] * stride_am + (k + rk)[None, :])
        b = tl.load(b_ptr + (k + rk)[:, None] * stride_bk + rn[None, :])
        acc += tl.dot(a, b)
    tl.store(c_ptr + rm[:, None] * stride_cm + rn[None, :], acc.to(tl.float16))


SIGNATURE = {"a_ptr": "*fp16", "b_ptr": "*fp16", "c_ptr": "*fp16", "K": "i32", "stride_am": "i32",
             "stride_bk": "i32", "stride_cm": "i32"}  # fmt: skip
WIDE_BY_TWO = re.compile(r"mul\.wide\.s32\s+%rd\d+, %r\d+, 2;")


@pytest.mark.parametrize("target", ["sm_80", "sm_90a"])
def test_a_matmul_hands_ptxas_its_loop_offsets_widened_then_shifted(monkeypatch, target):
    compiled = tilec.compile(k_loop_matmul, SIGNATURE, {"BLOCK_M": 128, "BLOCK_N": 128, "BLOCK_K": 64},
                             backend="nvidia", target=target, num_warps=8, num_stages=3)  # fmt: skip
    llvm_form = llir_to_ptx(compiled.asm["llir"], target, widen=False)
    assert WIDE_BY_TWO.search(llvm_form)  # what LLVM emits: the test can fail
    widened = widen_then_shift(llvm_form)
    assert re.search(r"cvt\.s64\.s32\s+(%rd\d+), %r\d+;\n\s*shl\.b64\s+\1, \1, 1;", widened)
    assert compiled.asm["ptx"] in (widened, llvm_form)
    if find_ptxas() is None:
        assert compiled.asm["ptx"] == widened
        pytest.skip("ptxas is not installed: the PTX was generated but not assembled")
    info: dict = {}
    assert ptx_to_cubin(widened, target, info=info)
    spills = sum(i.spill_stores for i in info.values())
    assert compiled.asm["ptx"] == (widened if spills == 0 else llvm_form)
