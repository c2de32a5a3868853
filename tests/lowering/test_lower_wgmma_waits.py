"""`tilec_nvidia.wgmma.wgmma_wait` emits no `wgmma.wait_group` where an earlier wait of the same LLVM
block, with no group committed since, already bounds the groups in flight (issue 23): the
attention forward's loop waited for Q K^T, then again for the last iteration's P @ V right after.
The registers are still threaded through an (empty) asm statement. A wait after a commit stays,
even one an exact count would drop (ptxas allocated the backward's d64 kernels worse without).
"""

from __future__ import annotations

from llvmlite import ir

from tilec.lowering.context import F32
from tilec_nvidia.target_info import NvidiaTargetInfo
from tilec_nvidia.wgmma import wgmma_commit, wgmma_wait

TARGET = NvidiaTargetInfo("sm_90a")


def _builder() -> ir.IRBuilder:
    module = ir.Module("waits", context=ir.Context())
    function = ir.Function(module, ir.FunctionType(ir.VoidType(), [F32]), "kernel")
    return ir.IRBuilder(function.append_basic_block("entry"))


def _waits(builder: ir.IRBuilder) -> list[int]:
    """The pendings of each `wgmma.wait_group` of the function, in order."""
    text = str(builder.function)
    found = []
    for line in text.splitlines():
        if "wgmma.wait_group.sync.aligned" in line:
            if "llvm.nvvm.wgmma.wait_group" in line:
                found.append(int(line.split("i64 ")[-1].rstrip(")")))
            else:
                found.append(int(line.split("wgmma.wait_group.sync.aligned ")[1].split(";")[0]))
    return found


def test_a_wait_the_last_wait_already_satisfies_is_not_emitted():
    b = _builder()
    acc = [b.function.args[0]]
    first = wgmma_wait(TARGET, b, acc, 0)  # Q K^T
    second = wgmma_wait(TARGET, b, acc, 0)  # the last iteration's P @ V: nothing in flight
    third = wgmma_wait(TARGET, b, second, 1)
    wgmma_commit(TARGET, b)  # P @ V
    wgmma_wait(TARGET, b, third, 1)  # after a commit: emitted
    assert _waits(b) == [0, 1]
    # still threaded: each result comes from its own asm statement, the empty ones included
    assert len({id(v) for v in (*first, *second, *third)}) == 3
    assert str(b.function).count('asm sideeffect ""') == 2


def test_a_stricter_wait_or_one_after_more_commits_is_emitted():
    b = _builder()
    acc = [b.function.args[0]]
    wgmma_wait(TARGET, b, acc, 1)
    wgmma_wait(TARGET, b, acc, 0)  # stricter
    wgmma_commit(TARGET, b)
    wgmma_commit(TARGET, b)
    wgmma_wait(TARGET, b, acc, 1)  # committed since the wait for none
    wgmma_wait(TARGET, b, [], 1)  # satisfied, no commit since: no registers, no instruction
    assert _waits(b) == [1, 0, 1]


def test_a_new_block_knows_nothing():
    """A block may follow any other (a loop's body follows its own end): its first wait is
    emitted, whatever the block before it waited for."""
    b = _builder()
    acc = [b.function.args[0]]
    wgmma_wait(TARGET, b, acc, 0)
    body = b.function.append_basic_block("body")
    b.branch(body)
    b.position_at_end(body)
    wgmma_wait(TARGET, b, acc, 0)
    wgmma_wait(TARGET, b, [], 0)
    assert _waits(b) == [0, 0]
