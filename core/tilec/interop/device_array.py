"""`DeviceArray`: device memory for users without torch or CuPy (`tilec.to_device`), and
`to_host`, a NumPy copy of any device array argument (for `check=True`)."""

from __future__ import annotations

import contextlib
import math
import sys
import weakref
from collections.abc import Sequence
from typing import Any

import numpy as np

from tilec.errors import FreedArrayError
from tilec.runtime.specialization import DTYPES


class DeviceArray:
    """A C-contiguous array in a GPU's memory, freed when garbage collected or by `free()`.

    Works wherever tilec takes an array, and with CuPy, Numba or torch through
    `__cuda_array_interface__` (version 3). `runtime` is the vendor runtime that allocated it
    (a `tilec.interop.device.DeviceRuntime`).

    `ptr` is the device address, a plain attribute that a launch reads; `free()` sets it to None.
    Whatever would hand the address on checks for that (`__cuda_array_interface__`, which every
    launch reads, the launch's pointer getters, the copies) and raises `FreedArrayError` instead
    of passing an address whose memory is gone.
    """

    def __init__(self, runtime: Any, shape: int | Sequence[int], dtype: Any = np.float32):
        self.shape = (
            (int(shape),) if isinstance(shape, (int, np.integer)) else tuple(map(int, shape))
        )
        self.dtype = np.dtype(dtype)
        if self.dtype.name not in DTYPES:
            raise TypeError(f"DeviceArray: unsupported dtype {self.dtype}")
        if any(n < 0 for n in self.shape):
            raise ValueError(f"DeviceArray: negative dimension in shape {self.shape}")
        self.runtime = runtime
        self.ptr = runtime.mem_alloc(self.nbytes)
        self._finalizer = weakref.finalize(self, _free, runtime, self.ptr)
        self._finalizer.atexit = False  # the process's exit releases device memory anyway

    @property
    def size(self) -> int:
        return math.prod(self.shape)

    @property
    def nbytes(self) -> int:
        return self.size * self.dtype.itemsize

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def strides(self) -> tuple[int, ...]:
        """Byte strides (C order), as NumPy reports them."""
        strides, step = [], self.dtype.itemsize
        for n in reversed(self.shape):
            strides.append(step)
            step *= max(n, 1)
        return tuple(reversed(strides))

    @property
    def __cuda_array_interface__(self) -> dict[str, Any]:
        address = self.ptr
        if address is None:
            raise self.freed_error()
        return {
            "shape": self.shape,
            "typestr": self.dtype.str,
            "data": (address, False),
            "version": 3,
            "strides": None,
        }

    def __len__(self) -> int:
        if not self.shape:
            raise TypeError("len() of a 0-d DeviceArray")
        return self.shape[0]

    def __repr__(self) -> str:
        backend = self.runtime.kind.backend
        where = "freed" if self.ptr is None else f"ptr={self.ptr:#x}"
        return f"DeviceArray(shape={self.shape}, dtype={self.dtype}, {where}, {backend})"

    def freed_error(self, use: str = "") -> FreedArrayError:
        """The error of using this array once freed; `use` (a method, a launch's argument)
        begins the message."""
        return FreedArrayError(
            (f"{use}: " if use else "")
            + f"the DeviceArray of shape {self.shape} and dtype {self.dtype} was freed "
            "(DeviceArray.free()), so its device memory is gone; free it after its last use, or "
            "make a new one (tilec.to_device)"
        )

    def numpy(self) -> np.ndarray:
        """A host copy (waits for the work queued on the default stream)."""
        if self.ptr is None:
            raise self.freed_error("DeviceArray.numpy()")
        host = np.empty(self.shape, self.dtype)
        self.runtime.copy_to_host(host.ctypes.data, self.ptr, self.nbytes)
        return host

    def copy_from(self, array: Any) -> DeviceArray:
        """Copy a host array of the same shape (and a dtype it converts to) into this one."""
        if self.ptr is None:
            raise self.freed_error("DeviceArray.copy_from()")
        source = np.ascontiguousarray(array, dtype=self.dtype)
        if source.shape != self.shape:
            raise ValueError(f"DeviceArray.copy_from: shape {source.shape} != {self.shape}")
        self.runtime.copy_to_device(self.ptr, source.ctypes.data, self.nbytes)
        self.runtime.synchronize()
        return self

    def free(self) -> None:
        """Release the device memory now (also done when the array is garbage collected); `ptr`
        becomes None, and using the array raises `FreedArrayError`. Freeing twice is harmless."""
        self.ptr = None
        self._finalizer()


def _free(runtime: Any, address: int) -> None:
    with contextlib.suppress(Exception):  # the context is gone (interpreter exit)
        runtime.mem_free(address)


def to_device(runtime: Any, array: Any) -> DeviceArray:
    """A DeviceArray holding a copy of `array` (anything np.asarray takes)."""
    host = np.asarray(array)
    return DeviceArray(runtime, host.shape, host.dtype).copy_from(host)


def empty(runtime: Any, shape: int | Sequence[int], dtype: Any = np.float32) -> DeviceArray:
    """An uninitialized DeviceArray."""
    return DeviceArray(runtime, shape, dtype)


def to_host(runtime: Any, value: Any) -> np.ndarray:
    """A NumPy copy of a device array argument (DeviceArray, torch tensor on the device, any
    contiguous `__cuda_array_interface__` object); bf16 elements come back as their uint16 bits."""
    if isinstance(value, DeviceArray):
        return value.numpy()
    torch = sys.modules.get("torch")
    if torch is not None and isinstance(value, torch.Tensor):
        tensor = value.detach()
        if tensor.dtype == torch.bfloat16:
            return tensor.view(torch.int16).cpu().numpy().view(np.uint16)
        return tensor.cpu().numpy()
    interface = getattr(value, "__cuda_array_interface__", None)
    if not isinstance(interface, dict):
        raise TypeError(f"cannot copy a {type(value).__name__} to the host")
    if interface.get("strides") not in (None, ()):
        expected = np.empty(interface["shape"], np.dtype(interface["typestr"])).strides
        if tuple(interface["strides"]) != expected:
            raise TypeError("cannot copy a non-contiguous device array to the host")
    host = np.empty(interface["shape"], np.dtype(interface["typestr"]))
    if host.nbytes:
        runtime.synchronize()
        runtime.copy_to_host(host.ctypes.data, int(interface["data"][0]), host.nbytes)
        runtime.synchronize()
    return host
