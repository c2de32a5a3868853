"""The `num_stages` software pipeline (`pipeline-loops`, cp.async): matmuls compiled by the nvidia
backend with num_stages 1..4, checked in gir and PTX, assembled by ptxas for sm_80 and sm_90a,
and run on the CPU emulator, whose cp.async performs each group only when a `wait_group` forces
it (`mma_emulator`), against NumPy: masked tiles, and the tutorial's loop over `cdiv(K, BLOCK_K)`
with loop-carried pointers (a trip count unknown at compile time). The unit strides are written
into that kernel, as a launch specializes an argument equal to 1, so that its loads are 16-byte
vectors; the other kernel's are not, and its copies take the synchronous form."""

from __future__ import annotations

import numpy as np
import pytest
from cpu_emulator import compile_kernel, launch
from gir_check import needs_ptxas
from mma_emulator import MmaHostTargetInfo
from test_lower_mma import _bits, _floats, _nvidia_available, matmul_kernel

import tilec
import tilec.language as tl
from tilec.ir.parser import parse_module
from tilec.lowering import lower_module
from tilec_nvidia.codegen import ptx_to_cubin

RNG = np.random.default_rng(11)


@tilec.jit
def tutorial_kernel(a_ptr, b_ptr, c_ptr, M, N, K, stride_am, stride_ak, stride_bk, stride_bn,
                    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):  # fmt: skip
    offs_am = (tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)) % M
    offs_bn = (tl.program_id(1) * BLOCK_N + tl.arange(0, BLOCK_N)) % N
    offs_k = tl.arange(0, BLOCK_K)
    a_ptrs = a_ptr + (offs_am[:, None] * stride_am + offs_k[None, :])  # stride_ak = 1
    b_ptrs = b_ptr + (offs_k[:, None] * stride_bk + offs_bn[None, :])  # stride_bn = 1
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k in range(0, tl.cdiv(K, BLOCK_K)):
        a = tl.load(a_ptrs, mask=offs_k[None, :] < K - k * BLOCK_K, other=0.0)
        b = tl.load(b_ptrs, mask=offs_k[:, None] < K - k * BLOCK_K, other=0.0)
        acc = tl.dot(a, b, acc)
        a_ptrs += BLOCK_K
        b_ptrs += BLOCK_K * stride_bk
    offs_cm = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_cn = tl.program_id(1) * BLOCK_N + tl.arange(0, BLOCK_N)
    c_mask = (offs_cm[:, None] < M) & (offs_cn[None, :] < N)
    tl.store(c_ptr + offs_cm[:, None] * N + offs_cn[None, :], acc, mask=c_mask)


SIGNATURE = {"a_ptr": "*fp16", "b_ptr": "*fp16", "c_ptr": "*fp32", "M": "i32", "N": "i32",
             "K": "i32", "stride_am": "i32", "stride_ak": "i32", "stride_bk": "i32",
             "stride_bn": "i32"}  # fmt: skip
DIVISIBLE = ("a_ptr", "b_ptr", "c_ptr", "M", "N", "K", "stride_am", "stride_bk")
"""As a launch specializes them when they are multiples of 16: 16-byte cp.async vectors."""


def compiled(kernel, stages: int, blocks=(64, 64, 32), warps=4, target="sm_80", dtype="fp16"):
    signature = {**SIGNATURE, "a_ptr": f"*{dtype}", "b_ptr": f"*{dtype}"}
    block_m, block_n, block_k = blocks
    return tilec.compile(
        kernel, signature, dict(BLOCK_M=block_m, BLOCK_N=block_n, BLOCK_K=block_k),
        divisibility=DIVISIBLE, backend="nvidia", target=target, num_warps=warps,
        num_stages=stages,
    )  # fmt: skip


@pytest.mark.parametrize("stages", [1, 2, 3, 4])
def test_gir_and_ptx_per_num_stages(stages: int):
    kernel = compiled(tutorial_kernel, stages)
    gir, ptx = kernel.asm["gir"], kernel.asm["ptx"]
    if stages == 1:
        assert "gpu.local_alloc" not in gir and "cp.async" not in ptx
        return
    assert gir.count(f"gpu.local_alloc : !gpu.memdesc<{stages}x64x32xf16>") == 1
    assert gir.count(f"gpu.local_alloc : !gpu.memdesc<{stages}x32x64xf16>") == 1
    assert gir.count("gpu.async_commit_group") == stages  # the prologue's, the loop's
    assert f"gpu.async_wait {{num = {stages - 2} : i32}}" in gir
    assert "gpu.async_wait {num = 0 : i32}" in gir
    assert "cp.async.cg.shared.global" in ptx and f"cp.async.wait_group \t{stages - 2};" in ptx
    ring = stages * (64 * 32 + 32 * 64) * 2
    assert kernel.metadata["shared_bytes"] == max(ring, 64 * 64 * 4)


@pytest.mark.parametrize("target", ["sm_80", "sm_90a"])
@pytest.mark.parametrize("dtype", ["fp16", "bf16"])
def test_pipelined_ptx_assembles(target: str, dtype: str):
    needs_ptxas()
    blocks = (128, 128, 32) if target == "sm_80" else (32, 128, 32)  # mma.sync on sm_90a too
    ptx = compiled(tutorial_kernel, 3, blocks, 4, target, dtype).asm["ptx"]
    assert ptx.count("cp.async.cg.shared.global") >= 4 and "cp.async.commit_group" in ptx
    assert "mma.sync.aligned.m16n8k16" in ptx
    assert ptx_to_cubin(ptx, target)


def test_a_ring_larger_than_the_arch_allows_is_an_error():
    with pytest.raises(RuntimeError, match=r"more than the \d+ a block may use on sm_86"):
        compiled(tutorial_kernel, 4, (128, 256, 64), 8, target="sm_86")


def _run(kernel, stages, blocks, warps, sizes, dtype="fp16"):
    compiled_kernel = compiled(kernel, stages, blocks, warps, dtype=dtype)
    assert ("gpu.async_copy_global_to_local" in compiled_kernel.asm["gir"]) == (stages > 1)
    module = parse_module(compiled_kernel.asm["gir"], "matmul.gir")
    lowered = lower_module(module, MmaHostTargetInfo(), compiled_kernel.metadata["kernel"])
    address = compile_kernel(lowered.llvm_ir, lowered.name)
    m, n, k = sizes
    a = _bits(RNG.standard_normal((m, k)), dtype)
    b = _bits(RNG.standard_normal((k, n)), dtype)
    c = np.full(m * n, np.nan, np.float32)
    grid = (-(-m // blocks[0]), -(-n // blocks[1]))
    args = [a.reshape(-1), b.reshape(-1), c, m, n, k, k, 1, n, 1]
    launch(address, lowered.params, args, grid, lowered.num_warps * 32)
    expected = _floats(a, dtype).astype(np.float64) @ _floats(b, dtype)
    np.testing.assert_allclose(c.reshape(m, n), expected, rtol=1e-5, atol=1e-4)


@pytest.mark.parametrize("stages", [1, 2, 3, 4])
def test_tutorial_loop_on_the_cpu_emulator(stages: int):
    """K = 80 with BLOCK_K 32: three iterations, the last masked; with 4 stages the prologue's
    third copy lies past the end (zeros that nobody reads)."""
    _run(tutorial_kernel, stages, (64, 64, 32), 4, (64, 64, 80))


@pytest.mark.parametrize(("stages", "sizes"), [(2, (48, 40, 16)), (3, (64, 64, 96))])
def test_masked_loop_on_the_cpu_emulator(stages: int, sizes):
    """The test_lower_mma kernel (masks from the induction variable, `range(0, K, BLOCK_K)`):
    a single iteration, and M, N not multiples of the blocks."""
    _run(matmul_kernel, stages, (64, 64, 32), 4, sizes)


gpu = pytest.mark.skipif(not _nvidia_available(), reason="needs an NVIDIA GPU")


@gpu
@pytest.mark.gpu
@pytest.mark.parametrize("stages", [1, 2, 3, 4])
@pytest.mark.parametrize("dtype", ["fp16", "bf16"])
def test_pipelined_matmul_on_the_gpu(stages: int, dtype: str):
    m, n, k = 200, 136, 328
    a = _bits(RNG.standard_normal((m, k)), dtype)
    b = _bits(RNG.standard_normal((k, n)), dtype)
    c = np.full(m * n, np.nan, np.float32)
    kernel = compiled(tutorial_kernel, stages, (64, 64, 32), 4, target=None, dtype=dtype)
    kernel.run((4, 3), [a.reshape(-1), b.reshape(-1), c, m, n, k, k, 1, n, 1])
    expected = _floats(a, dtype).astype(np.float64) @ _floats(b, dtype)
    np.testing.assert_allclose(c.reshape(m, n), expected, rtol=1e-5, atol=1e-4)
