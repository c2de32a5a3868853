"""The barrier before a scratch use's writes (`tilec.lowering.scratch`, issue 23): left out for the
kernel's first access to shared memory and for a use placed beside the last one in straight-line
code; kept for the first use of a loop body, after another access to shared memory, and where a
use beside the last would grow the kernel's shared memory. PTX for sm_90a (the layer norm's two
sums: Triton's 5 barriers, tilec's 4 before), the results on the CPU emulator against NumPy, and
the plan's decisions one by one."""

from __future__ import annotations

import re

import numpy as np
import pytest
from cpu_emulator import HostTargetInfo, compile_kernel, launch

import tilec
import tilec.language as tl
from tilec.dialects.tile import ReduceOp
from tilec.ir.parser import parse_module
from tilec.lowering import lower_module
from tilec.lowering.scratch import SPARE_BYTES, ScratchPlan

RNG = np.random.default_rng(23)


@tilec.jit
def moments(x_ptr, out_ptr, N, BLOCK: tl.constexpr):
    """A layer norm's two sums over one row: the mean, then the variance around it."""
    cols = tl.arange(0, BLOCK)
    inside = cols < N
    x = tl.load(x_ptr + cols, mask=inside, other=0.0)
    mean = tl.sum(x, axis=0) / N
    centred = tl.where(inside, x - mean, 0.0)
    tl.store(out_ptr, mean)
    tl.store(out_ptr + 1, tl.sum(centred * centred, axis=0) / N)


@tilec.jit
def moments_of_rows(x_ptr, out_ptr, rows, N, BLOCK: tl.constexpr):
    """The same two sums for each row, in a loop: out[2 r], out[2 r + 1]."""
    cols = tl.arange(0, BLOCK)
    inside = cols < N
    for r in range(0, rows):
        x = tl.load(x_ptr + r * N + cols, mask=inside, other=0.0)
        mean = tl.sum(x, axis=0) / N
        centred = tl.where(inside, x - mean, 0.0)
        tl.store(out_ptr + 2 * r, mean)
        tl.store(out_ptr + 2 * r + 1, tl.sum(centred * centred, axis=0) / N)


def _compiled(kernel, signature: dict):
    divisible = [name for name, kind in signature.items() if kind.startswith("*")]
    return tilec.compile(kernel, signature, {"BLOCK": 1024}, backend="nvidia", target="sm_90a",
                         num_warps=4, divisibility=divisible)  # fmt: skip


def _run(compiled, args: list) -> None:
    module = parse_module(compiled.asm["gir"], "kernel.gir")
    lowered = lower_module(module, HostTargetInfo(), compiled.metadata["kernel"])
    address = compile_kernel(lowered.llvm_ir, lowered.name)
    launch(address, lowered.params, args, (1,), lowered.num_warps * 32)


ONE_ROW = {"x_ptr": "*fp32", "out_ptr": "*fp32", "N": "i32"}
ROWS = {"x_ptr": "*fp32", "out_ptr": "*fp32", "rows": "i32", "N": "i32"}


def test_two_sums_in_straight_line_code_take_a_barrier_each():
    ptx = _compiled(moments, ONE_ROW).asm["ptx"]
    shared = re.findall(r"bar\.sync|st\.shared\S*\s+\[[^\]]+\]", ptx)
    # no barrier before the first sum's stores; the second sum's go beside the first's
    assert [s.split()[0] for s in shared] == ["st.shared.b32", "bar.sync"] * 2, shared
    assert shared[0].endswith("]") and "+16]" in shared[2], shared


def test_the_first_sum_of_a_loop_body_keeps_its_barrier():
    ptx = _compiled(moments_of_rows, ROWS).asm["ptx"]
    shared = re.findall(r"bar\.sync|st\.shared", ptx)
    assert shared == ["bar.sync", "st.shared", "bar.sync", "st.shared", "bar.sync"], shared


@pytest.mark.parametrize("n", [1000, 1024])
def test_two_sums_on_the_emulator(n: int):
    x = RNG.standard_normal(1024).astype(np.float32)
    out = np.full(2, np.nan, np.float32)
    _run(_compiled(moments, ONE_ROW), [x, out, n])
    np.testing.assert_allclose(out, [x[:n].mean(), x[:n].var()], rtol=1e-5)


def test_sums_in_a_loop_on_the_emulator():
    rows, n = 3, 1000
    x = RNG.standard_normal(rows * n).astype(np.float32)
    out = np.full(2 * rows, np.nan, np.float32)
    _run(_compiled(moments_of_rows, ROWS), [x, out, rows, n])
    rowwise = x.reshape(rows, n)
    expected = np.stack([rowwise.mean(axis=1), rowwise.var(axis=1)], axis=1).reshape(-1)
    np.testing.assert_allclose(out, expected, rtol=1e-5, atol=1e-6)


# The plan's decisions -----------------------------------------------------------------------


def _ops(module_text: str) -> list[ReduceOp]:
    module = parse_module(module_text, "plan.gir")
    return [op for op in module.walk() if isinstance(op, ReduceOp)]


def _two_reductions(in_loop: bool) -> list[ReduceOp]:
    gir = _compiled(moments_of_rows if in_loop else moments, ROWS if in_loop else ONE_ROW)
    return _ops(gir.asm["gir"])


def test_a_plan_places_uses_beside_the_last_in_one_block():
    first, second = _two_reductions(in_loop=False)
    plan = ScratchPlan()
    plan.start(first.parent)
    assert plan.place(first, 0, 16, 0) == (0, False)  # nothing accessed yet
    plan.used(first, 0, 0, 16)
    assert plan.place(second, 0, 16, 16) == (16, False)  # beside the first
    plan.used(second, 0, 16, 16)
    assert plan.place(first, 0, 16, 32) == (0, False)  # beside the second: back at the start
    assert plan.place(first, 0, 24, 32) == (32, False)  # overlaps the second: above it


def test_a_plan_barriers_where_it_cannot_tell():
    first, second = _two_reductions(in_loop=False)
    plan = ScratchPlan()
    assert plan.place(first, 0, 16, 0) == (0, True)  # never started
    plan.start(first.parent)
    plan.used(first, 0, 0, 16)
    assert plan.place(second, 128, 16, 256) == (128, True)  # the live buffers' extent changed
    plan.forget()  # another access to shared memory
    assert plan.place(second, 0, 16, 16) == (0, True)
    plan.start(first.parent)
    plan.used(first, 0, 0, SPARE_BYTES)
    assert plan.place(second, 0, 16, SPARE_BYTES) == (0, True)  # beside would grow the kernel
    in_loop = _two_reductions(in_loop=True)[0]
    plan.start(first.parent)
    assert plan.place(in_loop, 0, 16, 0) == (0, True)  # a loop body: the last iteration's reads
