"""The warpgroup offsets of wgmma's descriptors come from a warp id read back from lane 0
(`LoweringContext.uniform_warp_id`, once in the kernel's prologue), as Triton reads its warp id:
ptxas then keeps the descriptors in uniform registers. From `tid / 32` it could not tell that
the value is the same in every lane, and moved each wgmma's descriptor into uniform registers
with two `R2UR` (8 a loop iteration of the sweep's 128x256x64 matmul, whose loop went from 157
to 142 SASS instructions; attention forward d128 128x32: 162 -> 142 registers)."""

from __future__ import annotations

from test_lower_pipeline import compiled, tutorial_kernel


def test_the_descriptors_use_a_warp_id_read_from_lane_0():
    kernel = compiled(tutorial_kernel, 3, blocks=(128, 128, 64), warps=8, target="sm_90a")
    ptx = kernel.asm["ptx"]
    assert ptx.count("shfl.sync.idx.b32") == 1
    shuffle, fence = ptx.index("shfl.sync.idx.b32"), ptx.index("wgmma.fence.sync.aligned")
    loop = ptx.index("$L__BB0_2:")
    assert shuffle < loop < fence  # in the prologue, not in the loop with the wgmmas
    assert ", 0, 31, -1;" in ptx[shuffle : ptx.index("\n", shuffle)]  # lane 0, the whole warp
