"""`pipeline-loops` loads a vector used in registers that a dot of the loop depends on one iteration
ahead in registers (issue 23: the attention backward's m and Delta rows, whose synchronous
`ld.global` exposed its latency at d64, two blocks an SM, and whose rings cost more than the
loads ahead at d128, one block): the first before the loop, carried, the next at the end of each
iteration under `k + 1 < ub`, whatever the blocks an SM; no ring. Checked in gir and run on the
CPU emulator against NumPy and, bit for bit, against the same kernel with the vector loaded in
place (masked tail, zero-trip and one-trip loops); a vector no dot depends on stays a load."""

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
from tilec.layout import pipeline_loops
from tilec.lowering import lower_module
from tilec.runtime import cache

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
stages on (64 KiB), where the vector had a ring before it was loaded ahead; two at 3 stages."""


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


@pytest.mark.parametrize("where", ["one block", "two blocks", "six blocks"])
def test_the_vector_a_dot_depends_on_is_loaded_an_iteration_ahead(where: str):
    """One block an SM (sm_86, 4 x 16 KiB), where it had a ring, two (sm_86, 3 stages) and six
    (sm_80, 3 x 8 KiB), where it was loaded in place: `s` is loaded before the loop and carried
    (`%s`, an iter-arg), the next one at the end of the body; t's load stays where it is."""
    compiled = {"one block": lambda: _one_block(4), "two blocks": lambda: _one_block(3),
                "six blocks": lambda: _compiled(3)}[where]()  # fmt: skip
    gir = compiled.asm["gir"]
    assert not re.search(r"gpu\.local_alloc : !gpu\.memdesc<\dx64xf32>", gir), gir  # no ring
    before = gir[: gir.index("scf.for")]
    assert re.search(r"= tile\.load %\S+, %\S+, %\S+ : tensor<64xf32, #slice", before), before
    body = _loop(gir)
    assert re.search(r"\^bb0\(.*%s: tensor<64xf32, #slice>", body), body
    loads = re.findall(r"= tile\.load .* : tensor<(\w+), #(\w+)", body)
    t_elements = "64" if where != "six blocks" else "32"
    assert sorted(loads) == sorted([(f"{t_elements}xf32", "blocked"), ("64xf32", "slice")]), loads
    # the ahead load is the body's last load, after the dot
    assert body.rindex("tile.load") > body.index("tile.dot"), body
    assert "gpu.local_load %" in body and body.count("gpu.async_copy_global_to_local") == 2  # A, B
    if where == "one block":  # no ring bytes for s
        assert compiled.metadata["shared_bytes"] == 4 * 16384


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


def _lowered(stages: int, ahead: bool, monkeypatch, tmp_path):
    """The one-block kernel on the CPU emulator, with `s` loaded ahead or (`ahead` False) in
    place (`prefetch_vectors` off; a cache of its own)."""
    if not ahead:
        monkeypatch.setattr(pipeline_loops, "prefetch_vectors", lambda loop: loop)
    monkeypatch.setenv("TILEC_CACHE_DIR", str(tmp_path / f"{stages}-{ahead}"))
    cache.clear_memory()
    try:
        compiled = _one_block(stages)
    finally:
        cache.clear_memory()
        monkeypatch.undo()
    assert ("%s: tensor<64xf32" in _loop(compiled.asm["gir"])) == ahead
    module = parse_module(compiled.asm["gir"], "scaled.gir")
    lowered = lower_module(module, MmaHostTargetInfo(), compiled.metadata["kernel"])
    return lowered, compile_kernel(lowered.llvm_ir, lowered.name)


@pytest.mark.parametrize("stages", [3, 4])
def test_rescaled_matmul_on_the_cpu_emulator(stages: int, monkeypatch, tmp_path):
    """K = 160 with BLOCK_K 64: three iterations, the last masked; L = 2 BLOCK_N + 40: the last
    s is zero from column 40 on (its masked lanes take `other`); K = 64: one iteration (the
    ahead load of iteration 1 entirely masked off); K = 0: none (the load before the loop masked
    off, its value unused). Against NumPy, and bit for bit against `s` loaded in place."""
    kernels = {ahead: _lowered(stages, ahead, monkeypatch, tmp_path) for ahead in (True, False)}
    m, n, block_k = 64, 128, ONE_BLOCK["BLOCK_K"]
    length = 2 * 64 + 40
    s = RNG.uniform(0.5, 2.0, 3 * 64).astype(np.float32)
    for k in (160, 64, 0):
        a = _bits(RNG.standard_normal((m, k)), "fp16")
        b = _bits(RNG.standard_normal((k, n)), "fp16")
        t = RNG.standard_normal(k).astype(np.float32)
        results = {}
        for ahead, (lowered, address) in kernels.items():
            c = np.full(m * n, np.nan, np.float32)
            flat = [x.reshape(-1) if x.size else np.zeros(1, x.dtype) for x in (a, b)]
            args = [*flat, s, t if t.size else np.zeros(1, np.float32), c, m, n, k, length]
            launch(address, lowered.params, args, (1, 2), lowered.num_warps * 32)
            results[ahead] = c.reshape(m, n)
        a64, b64 = _floats(a, "fp16").astype(np.float64), _floats(b, "fp16").astype(np.float64)
        expected = np.zeros((m, n))
        for step in range(-(-k // block_k)):
            scale = np.where(np.arange(64) + step * 64 < length, s[step * 64 : step * 64 + 64], 0)
            block = slice(step * block_k, step * block_k + block_k)
            expected = expected * np.tile(scale, 2)[None, :] + a64[:, block] @ b64[block]
        expected += t.astype(np.float64).sum()
        np.testing.assert_allclose(results[True], expected, rtol=1e-4, atol=1e-3, err_msg=f"K={k}")
        assert results[True].tobytes() == results[False].tobytes(), f"K={k}"
