"""The memory a strided NumPy view spans, as one C-contiguous view of it (no copy)."""

from __future__ import annotations

import numpy as np


def host_span(array: np.ndarray) -> tuple[np.ndarray, int]:
    """A C-contiguous view of every byte from `array`'s lowest to its highest element
    (the gaps between its elements included) and the byte offset of its first element (index
    `(0, ..., 0)`) in it, which is not 0 where a stride is negative. A kernel given that
    element's address and the view's strides addresses the right elements, as on a GPU (Triton
    passes a tensor's data pointer and its strides). Writes to the span land in `array`."""
    if array.flags.c_contiguous or array.size == 0:
        return array, 0
    itemsize = array.itemsize
    dims = list(zip(array.shape, array.strides, strict=True))
    low = sum((n - 1) * st for n, st in dims if st < 0)
    high = sum((n - 1) * st for n, st in dims if st > 0)
    if low % itemsize or high % itemsize:
        raise TypeError(
            f"an array with strides {array.strides} that are not multiples of its element "
            f"size {itemsize} cannot be a kernel argument"
        )
    strided = np.lib.stride_tricks.as_strided
    first = strided(array, shape=(1,) * array.ndim, strides=array.strides).reshape(1)
    lowest = strided(first, shape=(2,), strides=(low,))[1:] if low else first  # `low` bytes back
    count = (high - low) // itemsize + 1
    return strided(lowest, shape=(count,), strides=(itemsize,)), -low
