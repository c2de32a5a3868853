"""A pipelined load keeps its cache modifier and eviction policy (`pipeline-loops`): its copies
carry them (`gpu.async_copy_global_to_local {cache, eviction}`), cp.async keeps its own cache
operator (16 bytes `.cg`, as Triton's) and takes the eviction policy as an L2 cache policy
(`cp.async.cg.shared.global.L2::cache_hint`, ptxas-checked for sm_80 and sm_90a); AMD's
register-staged copies are `tile.load`s with the hints (nontemporal loads on gfx942)."""

from __future__ import annotations

import re

import pytest
from gir_check import needs_ptxas
from test_lower_pipeline import DIVISIBLE, SIGNATURE

import tilec
import tilec.language as tl
from tilec_nvidia.codegen import ptx_to_cubin


@tilec.jit
def hinted_kernel(a_ptr, b_ptr, c_ptr, M, N, K, stride_am, stride_ak, stride_bk, stride_bn,
                  BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
                  CACHE: tl.constexpr, EVICTION: tl.constexpr):  # fmt: skip
    offs_am = (tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)) % M
    offs_bn = (tl.program_id(1) * BLOCK_N + tl.arange(0, BLOCK_N)) % N
    offs_k = tl.arange(0, BLOCK_K)
    a_ptrs = a_ptr + (offs_am[:, None] * stride_am + offs_k[None, :])
    b_ptrs = b_ptr + (offs_k[:, None] * stride_bk + offs_bn[None, :])
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k in range(0, tl.cdiv(K, BLOCK_K)):
        a = tl.load(a_ptrs, mask=offs_k[None, :] < K - k * BLOCK_K, other=0.0,
                    cache_modifier=CACHE, eviction_policy=EVICTION)  # fmt: skip
        b = tl.load(b_ptrs, mask=offs_k[:, None] < K - k * BLOCK_K, other=0.0,
                    cache_modifier=CACHE, eviction_policy=EVICTION)  # fmt: skip
        acc = tl.dot(a, b, acc)
        a_ptrs += BLOCK_K
        b_ptrs += BLOCK_K * stride_bk
    offs_cm = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_cn = tl.program_id(1) * BLOCK_N + tl.arange(0, BLOCK_N)
    tl.store(c_ptr + offs_cm[:, None] * N + offs_cn[None, :], acc)


def _compiled(backend: str, target: str, cache: str, eviction: str, warps: int = 4):
    constexprs = dict(BLOCK_M=64, BLOCK_N=64, BLOCK_K=32, CACHE=cache, EVICTION=eviction)
    return tilec.compile(hinted_kernel, SIGNATURE, constexprs, divisibility=DIVISIBLE,
                         backend=backend, target=target, num_warps=warps, num_stages=3)  # fmt: skip


@pytest.mark.parametrize("target", ["sm_80", "sm_90a"])
@pytest.mark.parametrize(("cache", "eviction"), [(".cg", "evict_last"), (".ca", "evict_first")])
def test_cp_async_keeps_its_cache_operator_and_takes_the_l2_policy(target, cache, eviction):
    kernel = _compiled("nvidia", target, cache, eviction)
    gir, ptx = kernel.asm["gir"], kernel.asm["ptx"]
    hints = f'{{cache = "{cache}", eviction = "{eviction}"}}'
    copies = re.findall(r"gpu\.async_copy_global_to_local .*", gir)
    assert len(copies) == 6 and all(hints in c for c in copies), copies
    assert "tile.load" not in gir.split("scf.for")[1].split("scf.yield")[0]
    assert re.search(rf"createpolicy\.fractional\.L2::{eviction}\.b64", ptx)
    copies = re.findall(r"cp\.async\.c[ag]\S+", ptx)
    assert copies and set(copies) == {"cp.async.cg.shared.global.L2::cache_hint"}, set(copies)


def test_cache_modifier_alone_leaves_cp_async_as_it_was():
    kernel = _compiled("nvidia", "sm_80", ".cv", "")
    assert '{cache = ".cv"}' in kernel.asm["gir"]
    assert set(re.findall(r"cp\.async\.c[ag]\S+", kernel.asm["ptx"])) == {
        "cp.async.cg.shared.global"
    }


@pytest.mark.parametrize("target", ["sm_80", "sm_90a"])
def test_ptxas_assembles_the_hinted_pipeline(target):
    needs_ptxas()
    ptx = _compiled("nvidia", target, ".cg", "evict_first").asm["ptx"]
    assert ptx_to_cubin(ptx, target)


def test_amd_register_staged_copies_are_hinted_loads(tmp_path, monkeypatch):
    monkeypatch.setenv("TILEC_CACHE_DIR", str(tmp_path / "cache"))
    kernel = _compiled("amd", "gfx942", ".cg", "evict_last")
    gir, asm = kernel.asm["gir"], kernel.asm["amdgcn"]
    assert "gpu.local_store" in gir, "not pipelined"
    loads = re.findall(r"tile\.load .*", gir)
    assert loads and all('{cache = ".cg", eviction = "evict_last"}' in load for load in loads)
    global_loads = re.findall(r"global_load_\w+.*", asm)
    assert global_loads and all(line.rstrip().endswith(" nt") for line in global_loads)
