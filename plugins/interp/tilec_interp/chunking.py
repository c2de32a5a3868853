"""How many programs of a grid the interpreter runs at once (a chunk), so that its memory is
bounded whatever the grid.

The interpreter holds every SSA value of a chunk as an array of (P, *shape), and a block's
values stay alive until the block ends; so one program holds at most the sum of the module's
tensors (each value counted once: a loop body's values are replaced on each iteration), plus the
temporaries of the op being run. A chunk has as many programs as fit `MEMORY_BUDGET` bytes (and,
for speed, as keep the largest tensor of the chunk under the interpreter's `MAX_CHUNK_ELEMENTS`).
Peak memory is then the arguments (used in place) plus about `MEMORY_BUDGET`, whatever the grid.
A program too large for the memory the machine has free is refused before it runs, at the line
of its largest tensor, rather than left to the system's out-of-memory killer.
"""

from __future__ import annotations

import math
import os

from tilec.ir.core import Operation, Value
from tilec.ir.types import TensorType
from tilec_interp.context import location_text
from tilec_interp.memory import InterpreterError

__all__ = ["MEMORY_BUDGET", "ProgramFootprint", "available_memory", "check_fits", "chunk_size"]

MEMORY_BUDGET = 256 << 20
"""Bytes of tensors one chunk of programs may hold."""
BYTES_PER_ELEMENT = 8
"""The widest element the interpreter holds (f64, i64, the int64 addresses of pointers)."""
TEMPORARIES = 4
"""Arrays of the largest tensor's size an op may hold while it runs (addresses, index and mask
arrays of a load, the f64 products of a dot), beside the values."""


class ProgramFootprint:
    """The bytes one program holds at most, and the op of its largest tensor (for errors)."""

    def __init__(self, module: Operation):
        self.elements = 0
        self.largest = 1
        self.largest_value: Value | None = None
        for op in module.walk():
            for value in _defined(op):
                if not isinstance(value.type, TensorType):
                    continue
                numel = value.type.numel
                self.elements += numel
                if numel > self.largest:
                    self.largest, self.largest_value = numel, value
        self.bytes = (self.elements + TEMPORARIES * self.largest) * BYTES_PER_ELEMENT


def _defined(op: Operation) -> list[Value]:
    values: list[Value] = list(op.results)
    for region in op.regions:
        for block in region.blocks:
            values.extend(block.args)
    return values


def available_memory() -> float:
    """Bytes of memory this machine has free (`MemAvailable`); infinite where unknown."""
    try:
        with open("/proc/meminfo", encoding="ascii") as meminfo:
            for line in meminfo:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    try:
        return os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError, AttributeError):
        return math.inf


def chunk_size(module: Operation, function_name: str, total: int, max_chunk_elements: int) -> int:
    """Programs a chunk runs: within `MEMORY_BUDGET` and `max_chunk_elements` of the largest
    tensor, at least one. Raises InterpreterError when one program cannot fit in free memory."""
    program = ProgramFootprint(module)
    check_fits(program, function_name)
    by_memory = MEMORY_BUDGET // program.bytes
    by_cache = max_chunk_elements // program.largest
    return max(1, min(total, by_memory, by_cache))


def check_fits(program: ProgramFootprint, function_name: str) -> None:
    free = available_memory()
    if program.bytes <= free:
        return
    value = program.largest_value
    where = location_text(_defining_op(value)) if value is not None else f"@{function_name}"
    raise InterpreterError(
        f"{where}: one program of @{function_name} holds up to {_mib(program.bytes)} of "
        f"tensors ({value.type if value is not None else 'its values'} the largest, here), more "
        f"than the {_mib(free)} of memory free; the interpreter runs at least one program at a "
        "time: use a smaller BLOCK, or split the work over more programs"
    )


def _defining_op(value: Value) -> Operation:
    op = getattr(value, "op", None)
    if op is not None:
        return op
    return value.block.parent_op  # type: ignore[attr-defined]


def _mib(n: float) -> str:
    return f"{n / 2**20:,.0f} MiB"
