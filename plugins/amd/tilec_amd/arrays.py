"""How launch arguments become device addresses on the AMD backend.

- NumPy arrays are copied to device memory before the launch and back after it where the kernel
  may write them.
- ROCm torch tensors (`data_ptr`), objects with `__cuda_array_interface__` (ROCm CuPy,
  `DeviceArray`) and objects with `__dlpack__` on a ROCm device (kDLROCM) are passed by address.
- `DeviceArray` (`to_device`) is device memory for users without torch or CuPy.
"""

from __future__ import annotations

import contextlib
import ctypes
import math
import sys
import weakref
from collections.abc import Collection, Sequence
from typing import Any

import numpy as np

from tilec_amd import driver as hip_driver

KDL_ROCM, KDL_ROCM_HOST = 10, 11


class _DLDevice(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int32), ("device_id", ctypes.c_int32)]


class _DLTensor(ctypes.Structure):
    _fields_ = [
        ("data", ctypes.c_void_p),
        ("device", _DLDevice),
        ("ndim", ctypes.c_int32),
        ("dtype", ctypes.c_uint32),
        ("shape", ctypes.c_void_p),
        ("strides", ctypes.c_void_p),
        ("byte_offset", ctypes.c_uint64),
    ]


class _DLManagedTensorVersioned(ctypes.Structure):
    _fields_ = [
        ("version", ctypes.c_uint32 * 2),
        ("manager_ctx", ctypes.c_void_p),
        ("deleter", ctypes.c_void_p),
        ("flags", ctypes.c_uint64),
        ("dl_tensor", _DLTensor),
    ]


_is_valid = ctypes.pythonapi.PyCapsule_IsValid
_is_valid.argtypes, _is_valid.restype = [ctypes.py_object, ctypes.c_char_p], ctypes.c_int
_get_pointer = ctypes.pythonapi.PyCapsule_GetPointer
_get_pointer.argtypes, _get_pointer.restype = [ctypes.py_object, ctypes.c_char_p], ctypes.c_void_p


def dlpack_address(value: Any, name: str) -> int:
    """The data address of a ROCm DLPack tensor (the capsule is read, not consumed)."""
    device_type, _ = value.__dlpack_device__()
    if int(device_type) != KDL_ROCM:
        raise TypeError(
            f"argument '{name}' is not in ROCm device memory (DLPack device {device_type})"
        )
    try:
        capsule = value.__dlpack__(max_version=(1, 0))
    except TypeError:
        capsule = value.__dlpack__()
    if _is_valid(capsule, b"dltensor_versioned"):
        address = _get_pointer(capsule, b"dltensor_versioned")
        tensor = _DLManagedTensorVersioned.from_address(address).dl_tensor
    else:  # DLManagedTensor starts with its DLTensor
        tensor = _DLTensor.from_address(_get_pointer(capsule, b"dltensor"))
    return (tensor.data or 0) + tensor.byte_offset


def device_pointer(value: Any, name: str) -> int:
    """The device address of a device-resident argument; an int is an address, None null."""
    if value is None:
        return 0
    if isinstance(value, DeviceArray):
        return value.ptr
    torch = sys.modules.get("torch")
    if torch is not None and isinstance(value, torch.Tensor):
        if value.device.type != "cuda":  # ROCm torch calls HIP devices "cuda"
            raise TypeError(f"argument '{name}' lives on {value.device}; move it to the GPU")
        return value.data_ptr()
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    interface = getattr(value, "__cuda_array_interface__", None)
    if isinstance(interface, dict):
        return int(interface["data"][0])
    if hasattr(value, "__dlpack__"):
        return dlpack_address(value, name)
    raise TypeError(
        f"argument '{name}': cannot pass a {type(value).__name__} as a pointer; pass a NumPy "
        "array, a tilec DeviceArray (tilec.to_device), or a ROCm tensor (torch, CuPy)"
    )


def run_kernel(
    kernel: hip_driver.LoadedKernel,
    grid: Any,
    args: Sequence[Any],
    *,
    threads: int,
    written: Collection[int] = (),
    stream: Any = None,
) -> None:
    """Launch with user arguments: NumPy arrays copied in (and back where written), device
    arrays by address, scalars as they are."""
    packer = kernel.packer
    if packer is None or len(args) != len(packer.signature):
        expected = "?" if packer is None else len(packer.signature)
        raise TypeError(f"{kernel.name} takes {expected} arguments; got {len(args)}")
    driver = hip_driver.get_driver()
    values = list(args)
    copies: list[tuple[np.ndarray, int, bool]] = []
    try:
        for i in packer.pointer_indices:
            value, name = values[i], packer.names[i]
            if isinstance(value, np.ndarray):
                copies.append(_copy_in(driver, kernel.name, name, value, i in written, stream))
                values[i] = copies[-1][1]
            else:
                values[i] = device_pointer(value, name)
        driver.launch(kernel, grid, threads, values, stream)
        for array, address, write_back in copies:
            if write_back and array.nbytes:
                driver.copy_to_host(array.ctypes.data, address, array.nbytes, stream)
        if copies:
            driver.synchronize(stream)
    finally:
        for _, address, _ in copies:
            driver.mem_free(address)


def _copy_in(
    driver: Any, kernel: str, name: str, array: np.ndarray, write_back: bool, stream: Any
) -> tuple[np.ndarray, int, bool]:
    if not (array.flags.c_contiguous or array.flags.f_contiguous):
        raise TypeError(
            f"argument '{name}' of {kernel} is a non-contiguous NumPy array; pass "
            "np.ascontiguousarray(...) and copy the result back yourself"
        )
    if write_back and not array.flags.writeable:
        raise TypeError(f"argument '{name}' of {kernel} is read-only, but the kernel stores to it")
    address = driver.mem_alloc(array.nbytes)
    try:
        driver.copy_to_device(address, array.ctypes.data, array.nbytes, stream)
    except BaseException:
        driver.mem_free(address)
        raise
    return array, address, write_back


class DeviceArray:
    """A C-contiguous array in AMD device memory, freed when garbage collected; shared with
    ROCm CuPy or torch through `__cuda_array_interface__`."""

    def __init__(self, shape: int | Sequence[int], dtype: Any = np.float32):
        self.shape = (int(shape),) if isinstance(shape, (int, np.integer)) else tuple(shape)
        self.dtype = np.dtype(dtype)
        driver = hip_driver.get_driver()
        self.ptr = driver.mem_alloc(self.nbytes)
        self._finalizer = weakref.finalize(self, _free, driver, self.ptr)
        self._finalizer.atexit = False

    @property
    def nbytes(self) -> int:
        return math.prod(self.shape) * self.dtype.itemsize

    @property
    def __cuda_array_interface__(self) -> dict[str, Any]:
        return {
            "shape": self.shape,
            "typestr": self.dtype.str,
            "data": (self.ptr, False),
            "version": 3,
            "strides": None,
        }

    def __repr__(self) -> str:
        return f"DeviceArray(shape={self.shape}, dtype={self.dtype}, ptr={self.ptr:#x}, amd)"

    def numpy(self) -> np.ndarray:
        """A host copy (waits for the work queued on the null stream)."""
        host = np.empty(self.shape, self.dtype)
        hip_driver.get_driver().copy_to_host(host.ctypes.data, self.ptr, self.nbytes)
        return host

    def copy_from(self, array: Any) -> DeviceArray:
        source = np.ascontiguousarray(array, dtype=self.dtype)
        if source.shape != self.shape:
            raise ValueError(f"DeviceArray.copy_from: shape {source.shape} != {self.shape}")
        driver = hip_driver.get_driver()
        driver.copy_to_device(self.ptr, source.ctypes.data, self.nbytes)
        driver.synchronize()
        return self


def _free(driver: Any, address: int) -> None:
    with contextlib.suppress(Exception):  # the runtime is gone (interpreter exit)
        driver.mem_free(address)


def to_device(array: Any) -> DeviceArray:
    """A DeviceArray holding a copy of `array` (anything np.asarray takes)."""
    host = np.asarray(array)
    return DeviceArray(host.shape, host.dtype).copy_from(host)


def to_host(value: Any) -> np.ndarray:
    """A NumPy copy of a device array argument (bf16 torch tensors as their uint16 bits)."""
    if isinstance(value, DeviceArray):
        return value.numpy()
    torch = sys.modules.get("torch")
    if torch is not None and isinstance(value, torch.Tensor):
        tensor = value.detach()
        if tensor.dtype == torch.bfloat16:
            return tensor.view(torch.int16).cpu().numpy().view(np.uint16)
        return tensor.cpu().numpy()
    interface = getattr(value, "__cuda_array_interface__", None)
    if not isinstance(interface, dict) or interface.get("strides") not in (None, ()):
        raise TypeError(f"cannot copy a {type(value).__name__} to the host")
    host = np.empty(interface["shape"], np.dtype(interface["typestr"]))
    if host.nbytes:
        driver = hip_driver.get_driver()
        driver.synchronize()
        driver.copy_to_host(host.ctypes.data, int(interface["data"][0]), host.nbytes)
    return host
