"""`pipeline-loops` gives a vector load used in registers a ring when a dot of the loop depends on
it and the kernel runs one block an SM (issue 23: the attention backward's m and Delta rows,
loaded with a synchronous `ld.global` whose latency nothing hid at d128, one block an SM; with
two, at d64, the rings measured slower): its copies go with the operands', and a
`gpu.local_load` in the load's own layout reads the slot where the load stood. Checked in gir
(a ring where one block has the SM, a load where several share it) and run on the CPU emulator
(cp.async performed when a `wait_group` forces it) against NumPy, masked tail included; a vector
no dot depends on stays a load."""

from __future__ import annotations

import re

import numpy as np
import pytest
from cpu_emulator import compile_kernel, launch
from mma_emulator import MmaHostTargetInfo
from test_lower_mma import _bits, _floats

import tilec
import tilec.language as tl
from tilec.ir.parser import parse_module
from tilec.lowering import lower_module

RNG = np.random.default_rng(29)


@tilec.jit
def rescaled_matmul(a_ptr, b_ptr, s_ptr, t_ptr, c_ptr, M, N, K, L, BLOCK_M: tl.constexpr,
                    BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):  # fmt: skip
    """Over K blocks k: acc = acc * s_k[None, :] + A_k B_k, s_k a float32 vector of BLOCK_N from
    `s_ptr + k BLOCK_N` (zeros from L on); t sums a vector that no dot reads (it stays a load)."""
    offs_m = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = tl.program_id(1) * BLOCK_N + tl.arange(0, BLOCK_N)
    offs_k = tl.arange(0, BLOCK_K)
    offs_s = tl.arange(0, BLOCK_N)
    a_ptrs = a_ptr + offs_m[:, None] * K + offs_k[None, :]
    b_ptrs = b_ptr + offs_k[:, None] * N + offs_n[None, :]
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    total = tl.zeros((BLOCK_K,), dtype=tl.float32)
    for k in range(0, tl.cdiv(K, BLOCK_K)):
        inside = offs_k < K - k * BLOCK_K
        a = tl.load(a_ptrs, mask=inside[None, :], other=0.0)
        b = tl.load(b_ptrs, mask=inside[:, None], other=0.0)
        s = tl.load(s_ptr + k * BLOCK_N + offs_s, mask=k * BLOCK_N + offs_s < L, other=0.0)
        total += tl.load(t_ptr + k * BLOCK_K + offs_k, mask=inside, other=0.0)
        acc = tl.dot(a, b, acc * s[None, :])
        a_ptrs += BLOCK_K
        b_ptrs += BLOCK_K * N
    acc += tl.sum(total, axis=0)
    tl.store(c_ptr + offs_m[:, None] * N + offs_n[None, :], acc)


SIGNATURE = {"a_ptr": "*fp16", "b_ptr": "*fp16", "s_ptr": "*fp32", "t_ptr": "*fp32",
             "c_ptr": "*fp32", "M": "i32", "N": "i32", "K": "i32", "L": "i32"}  # fmt: skip
BLOCKS = dict(BLOCK_M=64, BLOCK_N=64, BLOCK_K=32)
"""8 KiB of operands a stage: at 3 stages an sm_80 SM holds six blocks (the vector stays a load)."""
ONE_BLOCK = dict(BLOCK_M=64, BLOCK_N=64, BLOCK_K=64)
"""16 KiB a stage, on sm_86 (an SM of 100 KiB, 1 KiB reserved a block): one block an SM from 4
stages on (64 KiB), where the vector gets a ring (`tilec.layout.residency`); two at 3 stages,
where it does not."""


def _compiled(stages: int, blocks: dict = BLOCKS, target: str = "sm_80"):
    return tilec.compile(
        rescaled_matmul, SIGNATURE, blocks, divisibility=("a_ptr", "b_ptr", "s_ptr", "t_ptr",
        "c_ptr", "M", "N", "K"), backend="nvidia", target=target, num_warps=4,
        num_stages=stages,
    )  # fmt: skip


def _one_block(stages: int):
    return _compiled(stages, ONE_BLOCK, "sm_86")


def _loop(text: str) -> str:
    """The body of the kernel's (only) `scf.for`."""
    start = text.index("scf.for")
    return text[start : text.index("scf.yield", start)]


def test_the_vector_a_dot_depends_on_is_read_from_a_ring():
    compiled = _one_block(4)
    gir = compiled.asm["gir"]
    assert gir.count("gpu.local_alloc : !gpu.memdesc<4x64xf32>") == 1
    body = _loop(gir)
    loads = re.findall(r"= tile\.load .* : tensor<(\w+)", body)
    assert loads == ["64xf32"], loads  # t's: no dot reads it
    assert re.search(r"gpu\.local_load %\S+, %slot : tensor<64xf32, #", body), body
    assert body.count("gpu.async_copy_global_to_local") == 3  # A, B and s of iteration i + 3
    # the estimate the decision read is the lowering's: 4 x 16 KiB and 4 x 256 bytes of s
    assert compiled.metadata["shared_bytes"] == 4 * 16384 + 4 * 256


def test_a_kernel_of_several_blocks_an_sm_keeps_the_vector_a_load():
    """Two or more blocks an SM: the other blocks' warps run while one waits for the vector,
    which stays a load (the attention backward at d64: two blocks an SM, where the rings
    measured slower); the operands are pipelined as ever."""
    # sm_80, 3 x 8 KiB: six blocks an SM; sm_86, 3 x 16 KiB: two
    for compiled, block_k in ((_compiled(3), 32), (_one_block(3), 64)):
        body = _loop(compiled.asm["gir"])
        loads = re.findall(r"= tile\.load .* : tensor<(\w+)", body)
        assert sorted(loads) == sorted([f"{block_k}xf32", "64xf32"]), loads
        assert body.count("gpu.async_copy_global_to_local") == 2, body  # A and B


def test_one_stage_leaves_the_vector_a_load():
    body = _loop(_compiled(1).asm["gir"])
    loads = re.findall(r"= tile\.load .* : tensor<(\w+)", body)
    assert sorted(loads) == ["32x64xf16", "32xf32", "64x32xf16", "64xf32"], loads


@tilec.jit
def gathered_scale(a_ptr, b_ptr, s_ptr, i_ptr, c_ptr, K, BLOCK: tl.constexpr):
    """acc = acc * s[i_k + offs] + A_k B_k: the vector's pointer depends on a loaded index."""
    offs = tl.arange(0, BLOCK)
    a_ptrs = a_ptr + offs[:, None] * K + offs[None, :]
    b_ptrs = b_ptr + offs[:, None] * BLOCK + offs[None, :]
    acc = tl.zeros((BLOCK, BLOCK), dtype=tl.float32)
    for k in range(0, K // BLOCK):
        s = tl.load(s_ptr + tl.load(i_ptr + k) + offs)
        acc = tl.dot(tl.load(a_ptrs), tl.load(b_ptrs), acc * s[None, :])
        a_ptrs += BLOCK
        b_ptrs += BLOCK * BLOCK
    tl.store(c_ptr + offs[:, None] * BLOCK + offs[None, :], acc)


def test_a_gathered_vector_stays_a_load_and_the_operands_are_pipelined():
    """128 x 128 fp16 operands, 2 stages: 128 KiB, one block an sm_80 SM, where a vector a dot
    depends on would get a ring."""
    signature = {"a_ptr": "*fp16", "b_ptr": "*fp16", "s_ptr": "*fp32", "i_ptr": "*i32",
                 "c_ptr": "*fp32", "K": "i32"}  # fmt: skip
    gir = tilec.compile(gathered_scale, signature, {"BLOCK": 128}, backend="nvidia",
                        target="sm_80", num_warps=4, num_stages=2).asm["gir"]  # fmt: skip
    body = _loop(gir)
    assert body.count("gpu.async_copy_global_to_local") == 2, body  # A and B
    assert re.search(r"= tile\.load .* : tensor<128xf32", body), body


@pytest.mark.parametrize("stages", [3, 4, 5])
def test_rescaled_matmul_on_the_cpu_emulator(stages: int):
    """K = 160 with BLOCK_K 64: three iterations, the last masked; L = 2 BLOCK_N + 40: the last
    s is zero from column 40 on (its masked copies fill zeros). At 4 and 5 stages s comes
    through its ring, at 3 it stays a load (`ONE_BLOCK`)."""
    compiled = _one_block(stages)
    module = parse_module(compiled.asm["gir"], "scaled.gir")
    lowered = lower_module(module, MmaHostTargetInfo(), compiled.metadata["kernel"])
    address = compile_kernel(lowered.llvm_ir, lowered.name)
    m, n, k, block_k = 64, 128, 160, ONE_BLOCK["BLOCK_K"]
    a = _bits(RNG.standard_normal((m, k)), "fp16")
    b = _bits(RNG.standard_normal((k, n)), "fp16")
    length = 2 * 64 + 40
    s = RNG.uniform(0.5, 2.0, 3 * 64).astype(np.float32)
    t = RNG.standard_normal(k).astype(np.float32)
    c = np.full(m * n, np.nan, np.float32)
    args = [a.reshape(-1), b.reshape(-1), s, t, c, m, n, k, length]
    launch(address, lowered.params, args, (1, 2), lowered.num_warps * 32)
    a64, b64 = _floats(a, "fp16").astype(np.float64), _floats(b, "fp16").astype(np.float64)
    expected = np.zeros((m, n))
    for step in range(3):
        scale = np.where(np.arange(64) + step * 64 < length, s[step * 64 : step * 64 + 64], 0)
        block = slice(step * block_k, step * block_k + block_k)
        expected = expected * np.tile(scale, 2)[None, :] + a64[:, block] @ b64[block]
    expected += t.astype(np.float64).sum()
    np.testing.assert_allclose(c.reshape(m, n), expected, rtol=1e-4, atol=1e-3)
