"""The memory a strided NumPy view spans: as one C-contiguous view of it (no copy), as a host
address range, and the arguments of a launch grouped by the memory they share."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np


def host_span(array: np.ndarray) -> tuple[np.ndarray, int]:
    """A C-contiguous view of every byte from `array`'s lowest to its highest element
    (the gaps between its elements included) and the byte offset of its first element (index
    `(0, ..., 0)`) in it, which is not 0 where a stride is negative. A kernel given that
    element's address and the view's strides addresses the right elements, as on a GPU (Triton
    passes a tensor's data pointer and its strides). Writes to the span land in `array`."""
    if array.flags.c_contiguous or array.size == 0:
        return array, 0
    low, high = _reach(array)
    strided = np.lib.stride_tricks.as_strided
    first = strided(array, shape=(1,) * array.ndim, strides=array.strides).reshape(1)
    lowest = strided(first, shape=(2,), strides=(low,))[1:] if low else first  # `low` bytes back
    count = (high - low) // array.itemsize + 1
    return strided(lowest, shape=(count,), strides=(array.itemsize,)), -low


def host_extent(array: np.ndarray) -> tuple[int, int, int]:
    """The host memory `host_span` gives, as numbers: the address of its lowest byte, its
    length in bytes and the byte offset of `array`'s first element in it."""
    address = array.__array_interface__["data"][0]
    if array.flags.c_contiguous or array.size == 0:
        return address, array.nbytes, 0
    low, high = _reach(array)
    return address + low, high - low + array.itemsize, -low


def _reach(array: np.ndarray) -> tuple[int, int]:
    """The byte offsets of `array`'s lowest and highest element from its first one."""
    itemsize = array.itemsize
    dims = list(zip(array.shape, array.strides, strict=True))
    low = sum((n - 1) * st for n, st in dims if st < 0)
    high = sum((n - 1) * st for n, st in dims if st > 0)
    if low % itemsize or high % itemsize:
        raise TypeError(
            f"an array with strides {array.strides} that are not multiples of its element "
            f"size {itemsize} cannot be a kernel argument"
        )
    return low, high


def shared_spans(extents: Sequence[tuple[int, int]]) -> list[tuple[int, int, list[int]]]:
    """Group host byte ranges `(address, nbytes)` that overlap, directly or through others:
    `(address, nbytes, indices)` of each group's union, in address order. Ranges that only
    touch, or are empty, share no byte and stay apart; so do views of one base that do not
    overlap, which keeps the memory between them out of the copies. Address ranges, not
    `ndarray.base`, decide: two arrays over one buffer share it whatever their bases."""
    order = sorted(range(len(extents)), key=lambda i: extents[i][0])
    groups: list[tuple[int, int, list[int]]] = []
    end = None
    for i in order:
        address, nbytes = extents[i]
        if end is not None and address < end:
            start, _, members = groups[-1]
            end = max(end, address + nbytes)
            groups[-1] = (start, end - start, [*members, i])
            continue
        groups.append((address, nbytes, [i]))
        end = address + nbytes
    return groups
