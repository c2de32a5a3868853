"""Host memory that a kernel reaches through an address it computed rather than through a
pointer argument: an int64 cast to a pointer, such as the `tensor.data_ptr()` of CPU tensors
that Triton's grouped-GEMM tutorial passes in a tensor of addresses (Triton's interpreter reads
such addresses directly).

An address is taken only where this process's memory map (`/proc/self/maps`, Linux) holds a
readable and writable mapping around the whole access, which is where NumPy arrays and torch
tensors live; the mapping is then read and written in place like a registered buffer. Any
other address (0, freed or unmapped memory, code, read-only data, an address past the end of
its mapping) stays the interpreter's located "belongs to no buffer" error, never a crash. The
registered buffers live at fake addresses above the user address space (`memory.SHIFT`), so
the two never overlap.
"""

from __future__ import annotations

import ctypes
from pathlib import Path

import numpy as np

MAPS = Path("/proc/self/maps")


def writable_mappings() -> list[tuple[int, int]]:
    """The (start, end) byte ranges of this process's readable and writable mappings, sorted;
    none where the memory map cannot be read (not Linux)."""
    try:
        lines = MAPS.read_text().splitlines()
    except OSError:
        return []
    ranges = []
    for line in lines:
        fields = line.split()
        if len(fields) < 2 or not fields[1].startswith("rw"):
            continue
        start, end = (int(bound, 16) for bound in fields[0].split("-"))
        ranges.append((start, end))
    return sorted(ranges)


def mapping_array(start: int, end: int) -> np.ndarray:
    """The bytes of the mapping [start, end) as a writable uint8 array (no copy)."""
    return np.ctypeslib.as_array((ctypes.c_uint8 * (end - start)).from_address(start))
