"""Dot operands converted to shared memory one after the other before a loop (the attention
backward's K and V, then Q and dO) are published together (`wgmma_lowering._stored_together`):
one barrier before their stores where any of them needs it, then every store, one
`fence.proxy.async` and one barrier, as Triton publishes them; each had its own fence and barrier
(and the second a barrier right after the first's: `bar.sync` twice in a row). The lowered
backward still computes the attention gradients on the CPU wgmma emulator
(test_attention_bwd_sm90)."""

from __future__ import annotations

import itertools
import re

import pytest
from attention_bwd_kernels import compile_bwd

import tilec
import tilec.language as tl


@tilec.jit
def two_invariant_operands(A, C, B, X, Y, OUT, REDUCE_FIRST: tl.constexpr):
    rows = tl.arange(0, 64)
    cols = tl.arange(0, 64)
    if REDUCE_FIRST:  # a reduction across warps: through the scratch buffer
        tl.store(Y + cols, tl.sum(tl.load(X + rows[:, None] * 64 + cols[None, :]), 0))
    a = tl.load(A + rows[:, None] * 64 + cols[None, :])
    c = tl.load(C + rows[:, None] * 64 + cols[None, :])
    acc_a = tl.zeros([64, 64], dtype=tl.float32)
    acc_c = tl.zeros([64, 64], dtype=tl.float32)
    for k in range(0, 4):
        b = tl.load(B + (k * 64 + rows[:, None]) * 64 + cols[None, :])
        acc_a = tl.dot(a, b, acc_a)
        acc_c = tl.dot(c, b, acc_c)
    tl.store(OUT + rows[:, None] * 64 + cols[None, :], acc_a + acc_c)


def _prologue(reduce_first: bool) -> str:
    """The PTX up to the loop's first wait for its copies."""
    signature = {"A": "*fp16", "C": "*fp16", "B": "*fp16", "X": "*fp32", "Y": "*fp32",
                 "OUT": "*fp32"}  # fmt: skip
    compiled = tilec.compile(
        two_invariant_operands, signature, {"REDUCE_FIRST": reduce_first}, backend="nvidia",
        target="sm_90a", num_warps=4, num_stages=3, divisibility=tuple(signature),
    )  # fmt: skip
    ptx = compiled.asm["ptx"]
    assert ptx.count("wgmma.mma_async") >= 8
    return ptx[: ptx.index("cp.async.wait_group")]


@pytest.mark.parametrize("reduce_first", [False, True])
def test_two_operands_share_one_fence_and_one_barrier(reduce_first):
    prologue = _prologue(reduce_first)
    start = prologue.rindex("ld.shared") if reduce_first else 0  # after the reduction's
    stores = [m.start() for m in re.finditer(r"st\.shared\.v4", prologue) if m.start() > start]
    assert len(stores) == 8  # two 64 x 64 fp16 tiles, 4 x 16 bytes a thread each
    assert prologue.count("fence.proxy.async") == 1
    fence = prologue.index("fence.proxy.async")
    assert fence > stores[-1]
    assert "bar.sync" not in prologue[stores[0] : fence]
    assert prologue[fence:].count("bar.sync") == 1
    # the loop's prologue copies go before the stores
    before = prologue[: stores[0]]
    assert "cp.async.commit_group" in before
    if reduce_first:  # the reduction's scratch bytes are the operands': one barrier after it
        assert before[before.rindex("ld.shared") :].count("bar.sync") == 1
    else:  # the kernel's first shared-memory use: no barrier before it at all
        assert "bar.sync" not in before


@pytest.mark.parametrize("causal", [False, True])
def test_the_backwards_operands_are_published_together(causal):
    """K and V before the dK/dV loops, Q and dO before the dQ loops: one fence each pair, and
    never two barriers in a row."""
    ptx = compile_bwd(64, causal, (64, 64, 64, 64, 2, 4, 3)).asm["ptx"]
    assert ptx.count("fence.proxy.async") == 2
    instructions = [line.strip() for line in ptx.splitlines() if line.strip()]
    instructions = [i for i in instructions if not i.startswith("//")]
    pairs = itertools.pairwise(instructions)
    assert not [a for a, b in pairs if a.startswith("bar.sync") and b.startswith("bar.sync")]
