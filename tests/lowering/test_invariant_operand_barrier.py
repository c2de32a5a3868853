"""A wgmma operand converted to shared memory before a loop (the attention forward's Q) is stored
without a barrier before its stores where no thread can have touched those bytes yet (issue 23:
the kernel's first shared-memory access, as in Triton), and after one where an earlier use of
shared memory may still be read (a reduction through the scratch buffer before it)."""

from __future__ import annotations

import pytest

import tilec
import tilec.language as tl


@tilec.jit
def invariant_a(A, B, C, X, Y, REDUCE_FIRST: tl.constexpr):
    rows = tl.arange(0, 64)
    cols = tl.arange(0, 64)
    if REDUCE_FIRST:  # a reduction across warps: through the scratch buffer
        tl.store(Y + cols, tl.sum(tl.load(X + rows[:, None] * 64 + cols[None, :]), 0))
    a = tl.load(A + rows[:, None] * 64 + cols[None, :])
    acc = tl.zeros([64, 64], dtype=tl.float32)
    for k in range(0, 4):
        b = tl.load(B + (k * 64 + rows[:, None]) * 64 + cols[None, :])
        acc = tl.dot(a, b, acc)
    tl.store(C + rows[:, None] * 64 + cols[None, :], acc)


def _prologue(reduce_first: bool) -> str:
    """The PTX up to the operand's publication (`fence.proxy.async` after its stores)."""
    signature = {"A": "*fp16", "B": "*fp16", "C": "*fp32", "X": "*fp32", "Y": "*fp32"}
    compiled = tilec.compile(
        invariant_a, signature, {"REDUCE_FIRST": reduce_first}, backend="nvidia",
        target="sm_90a", num_warps=4, num_stages=3, divisibility=tuple(signature),
    )  # fmt: skip
    ptx = compiled.asm["ptx"]
    assert "wgmma.mma_async" in ptx
    return ptx[: ptx.index("fence.proxy.async")]


@pytest.mark.parametrize("reduce_first", [False, True])
def test_the_barrier_before_the_stores_is_there_only_after_another_use(reduce_first):
    prologue = _prologue(reduce_first)
    # the stores follow the loop's prologue (wgmma_lowering._Publication)
    copies = prologue.rindex("cp.async.commit_group")
    stores = prologue.index("st.shared.v4", copies)
    before = prologue[:stores]
    if reduce_first:  # the reduction's scratch bytes are the operand's: a barrier in between
        last_read = before.rindex("ld.shared")
        assert before[last_read:].count("bar.sync") == 1
    else:  # the kernel's first shared-memory use: no barrier, the ring's neither
        assert "bar.sync" not in before and "ld.shared" not in before
