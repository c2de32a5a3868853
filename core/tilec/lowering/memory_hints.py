"""Triton's cache modifiers and eviction policies of `tile.load`/`tile.store`, for the targets.

`tl.load(..., cache_modifier=".cg", eviction_policy="evict_first")` leaves `cache = ".cg"` and
`eviction = "evict_first"` on the op (`volatile=True` leaves `volatile`); the core lowering hands
them, as a `MemoryHints`, to the
target's `global_load`/`global_store` (`tilec.lowering.target.TargetInfo`), which emits them as
its hardware has them (NVIDIA: `ld.global.cg`, `L1::evict_first`, an L2 cache policy; AMD: the
nontemporal and volatile bits). They change speed, never results, so a target that has no such
instructions loads and stores plainly (the base class's default), as Triton's backends do with
hints of another vendor's hardware.

llvmlite's `load`/`store` have no `volatile` flag; `volatile_load`/`volatile_store` add it.
"""

from __future__ import annotations

from typing import Any

import attrs
from llvmlite import ir


@attrs.frozen
class MemoryHints:
    """The hints of one load or store: `cache` ("" or Triton's `.ca`, `.cg`, `.cv` for loads,
    `.wb`, `.cg`, `.cs`, `.wt` for stores), `eviction` ("", `evict_first`, `evict_last`), and
    `prepared`: what the target's `prepare_memory_hints` computed once for the op (NVIDIA: the
    L2 cache-policy register), handed to each of its accesses."""

    cache: str = ""
    eviction: str = ""
    store: bool = False
    prepared: Any = None
    volatile: bool = False
    """A volatile load (`tl.load(..., volatile=True)`): every access reads memory."""


def hints_of(op: Any, store: bool) -> MemoryHints | None:
    """The op's hints, or None where it carries none (a plain access)."""
    cache = op.attributes.get("cache")
    eviction = op.attributes.get("eviction")
    cache_value = cache.value if cache is not None else ""
    eviction_value = eviction.value if eviction is not None else ""
    if eviction_value == "evict_normal":  # the IR's spelling of the default
        eviction_value = ""
    volatile = "volatile" in op.attributes
    if not cache_value and not eviction_value and not volatile:
        return None
    return MemoryHints(cache_value, eviction_value, store, volatile=volatile)


class _VolatileLoad(ir.LoadInstr):
    def descr(self, buf: list[str]) -> None:
        text: list[str] = []
        super().descr(text)
        buf.append("".join(text).replace("load ", "load volatile ", 1))


class _VolatileStore(ir.StoreInstr):
    def descr(self, buf: list[str]) -> None:
        text: list[str] = []
        super().descr(text)
        buf.append("".join(text).replace("store ", "store volatile ", 1))


def volatile_load(
    builder: ir.IRBuilder, address: ir.Value, typ: ir.Type, align: int
) -> ir.Instruction:
    """`load volatile typ, ptr address, align align` at the builder's position."""
    instr = _VolatileLoad(builder.block, address, typ=typ)
    instr.align = align
    builder._insert(instr)
    return instr


def volatile_store(
    builder: ir.IRBuilder, value: ir.Value, address: ir.Value, align: int
) -> ir.Instruction:
    """`store volatile value, ptr address, align align` at the builder's position."""
    instr = _VolatileStore(builder.block, value, address)
    instr.align = align
    builder._insert(instr)
    return instr


def nontemporal(instr: ir.Instruction, module: ir.Module) -> ir.Instruction:
    """Mark a load or store `!nontemporal` (LLVM's hint that the data is not reused soon)."""
    instr.set_metadata("nontemporal", module.add_metadata([ir.Constant(ir.IntType(32), 1)]))
    return instr


__all__ = ["MemoryHints", "hints_of", "nontemporal", "volatile_load", "volatile_store"]
