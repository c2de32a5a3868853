"""Tensors of pointers kept as one base address per program plus element offsets.

`splat(p) + offsets` is the shape of nearly every pointer tensor in a kernel. Materialized, it is
an int64 array of byte addresses that costs several passes to build and several more to check and
turn into buffer indices. `Pointers` defers that: `base` holds each program's byte address (shape
`(P, 1, ..., 1)`), `offset` the integer offsets in elements (any integer dtype, broadcastable to
`(P, *shape)`; None means 0). A load or store then checks bounds from the offsets' range and
gathers with `base_index + offset`, one pass. Ops that do not understand `Pointers` get the int64
addresses (`materialize`), so the semantics are those of byte addresses everywhere.
"""

from __future__ import annotations

import numpy as np

from tilec_interp.memory import HALF, SHIFT, Buffer, Memory


class Pointers:
    __slots__ = ("base", "itemsize", "offset", "shape")

    def __init__(self, base: np.ndarray, offset: np.ndarray | None, itemsize: int, shape: tuple):
        self.base = base  # int64 (P, 1, ..., 1): byte addresses
        self.offset = offset  # integers broadcastable to `shape`, in elements; None: all 0
        self.itemsize = itemsize
        self.shape = shape  # (P, *tensor shape)

    def materialize(self) -> np.ndarray:
        """The C-ordered int64 byte addresses, shape `(P, *shape)`."""
        out = np.empty(self.shape, np.int64)
        if self.offset is None:
            out[...] = self.base
            return out
        out[...] = self.offset
        if self.itemsize != 1:
            np.multiply(out, self.itemsize, out=out)
        np.add(out, self.base, out=out)
        return out

    def add(self, offset: np.ndarray, shape: tuple) -> Pointers:
        """`self + offset` (in elements), sign- or zero-extended as the offset's dtype says."""
        offset = _as_offset(offset)
        if self.offset is not None:
            offset = np.add(self.offset, offset, dtype=np.int64)
        return Pointers(self.base, offset, self.itemsize, shape)

    def reshaped(self, fn, shape: tuple) -> Pointers:
        """Apply a shape op `fn` (broadcast, expand_dims, reshape, transpose) to the offsets."""
        base = self.base.reshape((shape[0],) + (1,) * (len(shape) - 1))
        if self.offset is None:
            return Pointers(base, None, self.itemsize, shape)
        offset = np.broadcast_to(self.offset, self.shape)
        return Pointers(base, fn(offset), self.itemsize, shape)


def splat(addresses: np.ndarray, itemsize: int, shape: tuple) -> Pointers:
    """A pointer tensor of `shape` (with P first) whose elements are the scalars `addresses`."""
    base = np.asarray(addresses, np.int64).reshape((shape[0],) + (1,) * (len(shape) - 1))
    return Pointers(base, None, itemsize, shape)


def _as_offset(offset: np.ndarray) -> np.ndarray:
    offset = np.asarray(offset)
    if offset.dtype == np.uint64:
        return offset.view(np.int64)  # wraps like the 64-bit address arithmetic it stands for
    if offset.dtype == np.bool_:
        return offset.astype(np.int8)
    return offset


def indices(
    memory: Memory, ptrs: Pointers, dtype: np.dtype, sel: np.ndarray | None
) -> tuple[Buffer, np.ndarray] | None:
    """(buffer, element indices of shape `ptrs.shape`) when every selected lane (`sel`, None:
    all) is in bounds of one buffer and aligned; None when that is not certain (then the caller
    materializes and takes the exact path, which also reports faults). Indices of lanes that are
    not selected may be out of range."""
    if dtype.itemsize != ptrs.itemsize:
        return None
    base = ptrs.base.reshape(-1)
    lo_base, hi_base = int(base.min()), int(base.max())
    k = ((lo_base + HALF) >> SHIFT) - 1
    if k != ((hi_base + HALF) >> SHIFT) - 1 or not 0 <= k < len(memory.buffers):
        return None
    buf = memory.buffers[k]
    rel = ptrs.base - buf.base
    if ptrs.itemsize > 1 and int(np.bitwise_or.reduce(rel, axis=None)) % ptrs.itemsize:
        return None
    base_index = rel // ptrs.itemsize
    size = buf.nbytes // ptrs.itemsize
    if size == 0:  # nothing can be gathered from it; the exact path handles all-masked lanes
        return None
    if ptrs.offset is None:
        lo_off = hi_off = 0
    elif sel is None:
        lo_off, hi_off = int(ptrs.offset.min()), int(ptrs.offset.max())
    else:
        offset = np.broadcast_to(ptrs.offset, ptrs.shape)
        info = np.iinfo(offset.dtype)
        lo_off = int(np.min(offset, where=sel, initial=info.max))
        hi_off = int(np.max(offset, where=sel, initial=info.min))
    if lo_off + int(base_index.min()) < 0 or hi_off + int(base_index.max()) >= size:
        return None
    if ptrs.offset is None:
        return buf, np.broadcast_to(base_index, ptrs.shape)
    index = np.empty(ptrs.shape, np.int64)
    np.add(base_index, ptrs.offset, out=index, casting="unsafe")
    return buf, index
