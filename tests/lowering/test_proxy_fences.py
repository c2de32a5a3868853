"""The proxy fence between shared memory written by ordinary stores and wgmma reading it.

On sm_90 wgmma reads its shared-memory operands through the async proxy; a thread's ordinary
(generic-proxy) stores into them must be followed by `fence.proxy.async.shared::cta` before the
barrier that orders them before the wgmma (PTX ISA, memory consistency model: proxies; Triton's
`fence-insertion` puts one between registers stored to shared memory and the dot reading them).
A pipelined matmul whose operand rows no `cp.async` can copy (8-bit or 16-bit elements at strides
without alignment: the sweep's e4m3 4095^3, a ragged fp16 matmul) fills its rings with loads and
`st.shared`: each batch of them is now fenced, once for A and B together (the ring's copies
of one iteration: `shared_memory._fenced_later`). Rings that `cp.async` fills get no fence, as
in Triton (their wait and barrier order them; a fence's `MEMBAR` would also wait for the copies
still in flight)."""

from __future__ import annotations

import re

import pytest
from fp8_matmul_kernels import compile_fp8
from test_attention_bwd_sm90 import _ptx_loops
from test_lower_pipeline import DIVISIBLE, SIGNATURE, tutorial_kernel

import tilec

FENCE = "fence.proxy.async.shared::cta;"


def _fp16_ptx(aligned: bool) -> str:
    compiled = tilec.compile(
        tutorial_kernel, SIGNATURE, {"BLOCK_M": 64, "BLOCK_N": 64, "BLOCK_K": 32},
        divisibility=DIVISIBLE if aligned else ("a_ptr", "b_ptr", "c_ptr"), backend="nvidia",
        target="sm_90a", num_warps=4, num_stages=3,
    )  # fmt: skip
    return compiled.asm["ptx"]


def _fp8_ptx(aligned: bool) -> str:
    return compile_fp8("fp8e4nv", "fp8e4nv", (64, 128, 64), 4, 4, divisible=aligned).asm["ptx"]


KERNELS = {"e4m3 4095^3 (64x128x64, 4 stages)": _fp8_ptx, "fp16 (64x64x32, 3 stages)": _fp16_ptx}


def _operand_stores_fenced(lines: list[str]) -> None:
    """Every `st.shared` before a wgmma is followed by a fence before the next barrier."""
    last_wgmma = max(i for i, line in enumerate(lines) if line.startswith("wgmma.mma_async"))
    for i, line in enumerate(lines[:last_wgmma]):
        if not line.startswith("st.shared"):
            continue
        barrier = next(j for j in range(i, len(lines)) if lines[j].startswith("bar.sync"))
        assert FENCE in lines[i:barrier], f"line {i}: {line} not fenced before {barrier}"


@pytest.mark.parametrize("kernel", KERNELS)
def test_operands_stored_by_threads_are_fenced_before_wgmma_reads_them(kernel):
    ptx = KERNELS[kernel](aligned=False)
    assert "cp.async.cg" not in ptx and "cp.async.ca" not in ptx  # loads and st.shared
    assert "wgmma.mma_async" in ptx
    _operand_stores_fenced([line.strip() for line in ptx.splitlines()])
    loop = max(_ptx_loops(ptx), key=len).splitlines()
    stores = [i for i, line in enumerate(loop) if line.startswith("st.shared")]
    fences = [i for i, line in enumerate(loop) if line == FENCE]
    assert len(fences) == 1 and fences[0] > max(stores)  # one for A and B, after them


@pytest.mark.parametrize("kernel", KERNELS)
def test_operands_copied_by_cp_async_get_no_fence(kernel):
    ptx = KERNELS[kernel](aligned=True)
    assert re.search(r"cp\.async\.c[ag]\.shared\.global", ptx)
    assert "fence.proxy.async" not in ptx
