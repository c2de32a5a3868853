"""Triton's cache modifiers on AMD, end to end from `tl.load`/`tl.store` (the golden test is
tests/filecheck/amd/cache-hints.gir): Triton 3.6's (volatile, nontemporal) table, whose bits
LLVM sets for the arch; eviction policies have no effect, as in Triton's AMD backend."""

from __future__ import annotations

import re

import pytest

import tilec
import tilec.language as tl


@tilec.jit
def copy_kernel(x_ptr, y_ptr, BLOCK: tl.constexpr, LOAD_CACHE: tl.constexpr,
                STORE_CACHE: tl.constexpr, EVICTION: tl.constexpr):  # fmt: skip
    offsets = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offsets, cache_modifier=LOAD_CACHE, eviction_policy=EVICTION)
    tl.store(y_ptr + offsets, x + 1, cache_modifier=STORE_CACHE, eviction_policy=EVICTION)


def _amdgcn(target: str, load: str, store: str, eviction: str = "") -> tuple[list, list]:
    constexprs = {"BLOCK": 256, "LOAD_CACHE": load, "STORE_CACHE": store, "EVICTION": eviction}
    signature = {"x_ptr": "*fp32", "y_ptr": "*fp32"}
    compiled = tilec.compile(copy_kernel, signature, constexprs, backend="amd", target=target)
    asm = compiled.asm["amdgcn"]
    return re.findall(r"global_load_\w+.*", asm), re.findall(r"global_store_\w+.*", asm)


@pytest.mark.parametrize(
    ("load", "store", "load_bits", "store_bits"),
    [
        ("", "", "", ""),
        (".ca", ".wb", "", ""),
        (".cg", ".cg", "nt", ""),
        (".cv", ".cs", "sc0 sc1", "nt"),
        ("", ".wt", "", "sc0 sc1"),
    ],
)
def test_gfx942_cache_bits(private_cache, load, store, load_bits, store_bits):
    loads, stores = _amdgcn("gfx942", load, store)
    assert loads and {_bits(line) for line in loads} == {load_bits}, loads
    assert stores and {_bits(line) for line in stores} == {store_bits}, stores


def _bits(line: str) -> str:
    """The cache bits after an access's three operands."""
    return " ".join(line.replace(",", " ").split()[4:])


@pytest.mark.parametrize("target", ["gfx942", "gfx1100"])
@pytest.mark.parametrize("eviction", ["evict_first", "evict_last"])
def test_eviction_policies_have_no_effect(private_cache, target, eviction):
    assert _amdgcn(target, ".cg", "", eviction) == _amdgcn(target, ".cg", "")


@tilec.jit
def volatile_kernel(x_ptr, y_ptr):
    offsets = tl.arange(0, 256)
    tl.store(y_ptr + offsets, tl.load(x_ptr + offsets, volatile=True))


def test_volatile_loads_are_system_coherent(private_cache):
    compiled = tilec.compile(volatile_kernel, {"x_ptr": "*fp32", "y_ptr": "*fp32"}, {},
                             backend="amd", target="gfx942")  # fmt: skip
    assert "load volatile" in compiled.asm["llir"]
    loads = re.findall(r"global_load_\w+.*", compiled.asm["amdgcn"])
    assert loads and {_bits(line) for line in loads} == {"sc0 sc1"}, loads
