"""Triton's cache modifiers and eviction policies on NVIDIA (`tilec_nvidia.cache_hints`): each
becomes its PTX (`ld.global.cg`, `st.global.cs`, `L1::evict_first` with an L2 cache policy),
which ptxas assembles for sm_80 and sm_90a; on the GPU each gives the interpreter's results."""

from __future__ import annotations

import re

import numpy as np
import pytest

import tilec
import tilec.language as tl
from tilec_nvidia.codegen import find_ptxas


@tilec.jit
def copy_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr, LOAD_CACHE: tl.constexpr,
                STORE_CACHE: tl.constexpr, EVICTION: tl.constexpr):  # fmt: skip
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    x = tl.load(x_ptr + offsets, mask=mask, other=0, cache_modifier=LOAD_CACHE,
                eviction_policy=EVICTION)  # fmt: skip
    tl.store(y_ptr + offsets, x + 1, mask=mask, cache_modifier=STORE_CACHE,
             eviction_policy=EVICTION)  # fmt: skip


@tilec.jit
def scalar_kernel(x_ptr, y_ptr, LOAD_CACHE: tl.constexpr, STORE_CACHE: tl.constexpr,
                  EVICTION: tl.constexpr):  # fmt: skip
    x = tl.load(x_ptr + 3, cache_modifier=LOAD_CACHE, eviction_policy=EVICTION)
    tl.store(y_ptr + 1, x, cache_modifier=STORE_CACHE, eviction_policy=EVICTION)


LOAD_CACHES = ["", ".ca", ".cg", ".cv"]
STORE_CACHES = ["", ".wb", ".cg", ".cs", ".wt"]
EVICTIONS = ["", "evict_first", "evict_last"]
DTYPES = {"fp32": np.float32, "fp16": np.float16, "i8": np.int8, "fp64": np.float64,
          "i64": np.int64, "bf16": None, "i1": np.bool_}  # fmt: skip

needs_ptxas = pytest.mark.skipif(find_ptxas() is None, reason="no ptxas here")


def _compile(kernel, dtype: str, target: str, **constexprs):
    signature = {"x_ptr": f"*{dtype}", "y_ptr": f"*{dtype}"}
    if kernel is copy_kernel:
        signature["n"] = "i32"
        constexprs.setdefault("BLOCK", 512)
    return tilec.compile(kernel, signature, constexprs, backend="nvidia", target=target)


def _hints(load: str, store: str, eviction: str) -> dict:
    return {"LOAD_CACHE": load, "STORE_CACHE": store, "EVICTION": eviction}


@pytest.mark.parametrize("load", LOAD_CACHES)
@pytest.mark.parametrize("store", STORE_CACHES)
def test_cache_modifiers_are_the_ptx_cache_operators(load, store):
    ptx = _compile(copy_kernel, "fp32", "sm_90a", **_hints(load, store, "")).asm["ptx"]
    loads = re.findall(r"\bld\.global\.[\w:.]+", ptx)
    stores = re.findall(r"\bst\.global\.[\w:.]+", ptx)
    assert loads and stores
    if load:
        assert all(op.startswith(f"ld.global{load}.") for op in loads), loads
    else:
        assert not any(re.match(r"ld\.global\.c[agsv]\.", op) for op in loads), loads
    if store:
        assert all(op.startswith(f"st.global{store}.") for op in stores), stores
    else:
        assert not any(re.match(r"st\.global\.(wb|cg|cs|wt)\.", op) for op in stores), stores
    assert "createpolicy" not in ptx and "L1::" not in ptx


@pytest.mark.parametrize("eviction", ["evict_first", "evict_last"])
@pytest.mark.parametrize("target", ["sm_80", "sm_90a"])
def test_eviction_policy_is_an_l1_priority_and_an_l2_policy(eviction, target):
    ptx = _compile(copy_kernel, "fp32", target, **_hints("", "", eviction)).asm["ptx"]
    assert re.search(r"^\.version (7\.[4-9]|[89]\.\d)", ptx, re.MULTILINE), "PTX 7.4 or later"
    assert re.search(rf"createpolicy\.fractional\.L2::{eviction}\.b64", ptx)
    loads = re.findall(r"\bld\.global\.[\w:.]+", ptx)
    stores = re.findall(r"\bst\.global\.[\w:.]+", ptx)
    expected = f".L1::{eviction}.L2::cache_hint."
    assert loads and all(expected in op for op in loads), loads
    assert stores and all(expected in op for op in stores), stores


def test_a_cache_operator_and_an_eviction_policy_share_only_the_l2_policy():
    """ptxas refuses `ld.global.cg.L1::evict_first`; the eviction is the L2 policy then."""
    ptx = _compile(copy_kernel, "fp32", "sm_90a", **_hints(".cg", ".cs", "evict_first"))
    ptx = ptx.asm["ptx"]
    assert re.search(r"\bld\.global\.cg\.L2::cache_hint\.", ptx)
    assert re.search(r"\bst\.global\.cs\.L2::cache_hint\.", ptx)
    assert "L1::" not in ptx


@tilec.jit
def volatile_kernel(x_ptr, y_ptr, CACHE: tl.constexpr, EVICTION: tl.constexpr):
    offsets = tl.arange(0, 512)
    x = tl.load(x_ptr + offsets, volatile=True, cache_modifier=CACHE, eviction_policy=EVICTION)
    tl.store(y_ptr + offsets, x)


@pytest.mark.parametrize("target", ["sm_80", "sm_90a"])
@pytest.mark.parametrize(("cache", "eviction"), [("", ""), (".cg", "evict_first")])
def test_volatile_loads_are_ld_volatile(target, cache, eviction):
    """`ld.volatile` takes no cache operator or eviction priority (ptxas refuses them)."""
    compiled = tilec.compile(volatile_kernel, {"x_ptr": "*fp32", "y_ptr": "*fp32"},
                             {"CACHE": cache, "EVICTION": eviction}, backend="nvidia",
                             target=target)  # fmt: skip
    loads = re.findall(r"\bld\.(?!param)[\w:.]+", compiled.asm["ptx"])
    assert loads and all(op.startswith("ld.volatile.global.") for op in loads), loads
    assert "createpolicy" not in compiled.asm["ptx"]
    if find_ptxas() is not None:
        assert compiled.asm.get("cubin")


def test_sm_75_has_the_l1_priority_alone():
    ptx = _compile(copy_kernel, "fp32", "sm_75", **_hints("", "", "evict_last")).asm["ptx"]
    assert re.search(r"\bld\.global\.L1::evict_last\.", ptx) and "createpolicy" not in ptx


def test_kernels_without_hints_keep_the_arch_ptx_version():
    ptx = _compile(copy_kernel, "fp32", "sm_80", **_hints("", "", "")).asm["ptx"]
    assert re.search(r"^\.version 7\.0$", ptx, re.MULTILINE)
    assert "createpolicy" not in ptx


@needs_ptxas
@pytest.mark.parametrize("dtype", sorted(DTYPES))
@pytest.mark.parametrize("target", ["sm_80", "sm_90a"])
@pytest.mark.parametrize(
    "hints",
    [(".cg", ".cs", ""), (".cv", ".wt", "evict_first"), ("", "", "evict_last"), (".ca", ".wb", "")],
)
def test_ptxas_assembles_every_width(dtype, target, hints):
    for kernel in (copy_kernel, scalar_kernel):
        compiled = _compile(kernel, dtype, target, **_hints(*hints))
        assert compiled.asm.get("cubin"), "ptxas gave no cubin"


# On the GPU ----------------------------------------------------------------------------------

GPU_CACHE_PAIRS = [("", ""), (".ca", ".wb"), (".cg", ".cg"), (".cv", ".cs"), ("", ".wt")]
"""Every load and store cache modifier at least once, each with every eviction policy."""


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", ["fp32", "fp16", "i8", "fp64"])
@pytest.mark.parametrize(
    "hints",
    [(load, store, eviction) for load, store in GPU_CACHE_PAIRS for eviction in EVICTIONS],
)
def test_hints_give_the_interpreters_results_on_the_gpu(dtype, hints, rng):
    from tilec.plugin.manager import load_backends

    availability = load_backends()["nvidia"].is_available()
    if not availability:
        pytest.skip(f"needs an NVIDIA GPU ({availability.reason})")
    n = 1000
    x = (rng.standard_normal(n) * 20).astype(DTYPES[dtype])
    results = {}
    for backend in ("interp", "nvidia"):
        y = np.zeros_like(x)
        copy_kernel[(triton_cdiv(n, 256),)](x, y, n, BLOCK=256, **_hints(*hints), backend=backend)
        scalars = np.zeros_like(x[:4])
        scalar_kernel[(1,)](x, scalars, **_hints(*hints), backend=backend)
        results[backend] = (y, scalars)
    np.testing.assert_array_equal(results["nvidia"][0], results["interp"][0])
    np.testing.assert_array_equal(results["nvidia"][1], results["interp"][1])
    np.testing.assert_array_equal(results["nvidia"][1][1], x[3])


def triton_cdiv(a: int, b: int) -> int:
    return (a + b - 1) // b


@pytest.mark.gpu
def test_volatile_loads_on_the_gpu(rng):
    from tilec.plugin.manager import load_backends

    availability = load_backends()["nvidia"].is_available()
    if not availability:
        pytest.skip(f"needs an NVIDIA GPU ({availability.reason})")
    x = rng.standard_normal(512).astype(np.float32)
    for cache, eviction in [("", ""), (".cg", "evict_first")]:
        y = np.zeros_like(x)
        volatile_kernel[(1,)](x, y, CACHE=cache, EVICTION=eviction, backend="nvidia")
        np.testing.assert_array_equal(y, x)
