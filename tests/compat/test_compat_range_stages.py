"""`tl.range(num_stages=S)` is honoured (issue 11): Triton's per-loop override of the launch's
`num_stages`, taken by `pipeline-loops` (compiled for nvidia here, no GPU needed)."""

import re

import pytest

import tilec
import tilec.language as tl


@tilec.jit
def staged_matmul(a_ptr, b_ptr, c_ptr, K, STAGES: tl.constexpr):
    offs = tl.arange(0, 32)
    a_ptrs = a_ptr + offs[:, None] * 32 + offs[None, :]
    b_ptrs = b_ptr + offs[:, None] * 32 + offs[None, :]
    acc = tl.zeros((32, 32), dtype=tl.float32)
    for _ in tl.range(0, K, 32, num_stages=STAGES):
        acc = tl.dot(tl.load(a_ptrs), tl.load(b_ptrs), acc)
        a_ptrs += 32
        b_ptrs += 32 * 32
    tl.store(c_ptr + offs[:, None] * 32 + offs[None, :], acc)


@pytest.mark.parametrize(("loop_stages", "launch_stages"), [(3, 1), (2, 4), (1, 3)])
def test_range_num_stages_overrides_the_launch_for_its_loop(loop_stages, launch_stages):
    """As in Triton, `tl.range(num_stages=S)` pipelines its loop's tensor-core operand loads in
    S stages whatever the launch's `num_stages` (a ring of S slots; no ring for S = 1)."""
    signature = {"a_ptr": "*fp16", "b_ptr": "*fp16", "c_ptr": "*fp32", "K": "i32"}
    gir = tilec.compile(
        staged_matmul, signature, {"STAGES": loop_stages}, backend="nvidia", target="sm_80",
        divisibility=("a_ptr", "b_ptr", "c_ptr", "K"), num_stages=launch_stages,
    ).asm["gir"]  # fmt: skip
    rings = set(re.findall(r"gpu.local_alloc : !gpu.memdesc<(\d+)x32x32xf16>", gir))
    assert rings == (set() if loop_stages == 1 else {str(loop_stages)}), rings
