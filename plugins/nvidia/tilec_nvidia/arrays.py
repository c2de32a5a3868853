"""How launch arguments become device addresses on the NVIDIA backend.

- NumPy arrays are copied to device memory before the launch, copied back after it where the
  kernel may write them, and their device memory goes back to a small pool.
- Objects with `__cuda_array_interface__` (CuPy, Numba, `DeviceArray`) and torch CUDA tensors
  are passed by address, no copy. Objects with only `__dlpack__` are read from their DLPack
  capsule (`DLManagedTensor` or the versioned form) without consuming it: the producer keeps
  ownership, and the argument object stays referenced until the launch has been issued.
- `DeviceArray` (`to_device`, `empty`) is device memory for users without torch or CuPy.
"""

from __future__ import annotations

import contextlib
import ctypes
import math
import sys
import weakref
from collections.abc import Callable, Collection, Sequence
from typing import Any

import attrs
import numpy as np

from tilec.ir.type_names import SIGNATURE_BY_DLPACK, SIGNATURE_BY_TORCH
from tilec.runtime.specialization import DTYPES
from tilec_nvidia import driver as cuda

KDL_CPU, KDL_CUDA, KDL_CUDA_HOST, KDL_CUDA_MANAGED = 1, 2, 3, 13
DEVICE_NAMES = {
    1: "cpu", 2: "cuda", 3: "cuda_host", 4: "opencl", 7: "vulkan", 8: "metal", 10: "rocm",
    13: "cuda_managed", 14: "oneapi",
}  # fmt: skip
DLPACK_DTYPES = SIGNATURE_BY_DLPACK
"""(DLDataTypeCode, bits) -> element type: kDLInt, kDLUInt, kDLFloat, kDLBfloat, kDLBool."""


# DLPack ----------------------------------------------------------------------------------------


class DLDevice(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int32), ("device_id", ctypes.c_int32)]


class DLDataType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]


class DLTensor(ctypes.Structure):
    _fields_ = [
        ("data", ctypes.c_void_p),
        ("device", DLDevice),
        ("ndim", ctypes.c_int32),
        ("dtype", DLDataType),
        ("shape", ctypes.POINTER(ctypes.c_int64)),
        ("strides", ctypes.POINTER(ctypes.c_int64)),
        ("byte_offset", ctypes.c_uint64),
    ]


class DLManagedTensor(ctypes.Structure):
    _fields_ = [
        ("dl_tensor", DLTensor),
        ("manager_ctx", ctypes.c_void_p),
        ("deleter", ctypes.c_void_p),
    ]


class DLPackVersion(ctypes.Structure):
    _fields_ = [("major", ctypes.c_uint32), ("minor", ctypes.c_uint32)]


class DLManagedTensorVersioned(ctypes.Structure):
    _fields_ = [
        ("version", DLPackVersion),
        ("manager_ctx", ctypes.c_void_p),
        ("deleter", ctypes.c_void_p),
        ("flags", ctypes.c_uint64),
        ("dl_tensor", DLTensor),
    ]


DLPACK_FLAG_READ_ONLY = 1

_capsule_is_valid = ctypes.pythonapi.PyCapsule_IsValid
_capsule_is_valid.argtypes = [ctypes.py_object, ctypes.c_char_p]
_capsule_is_valid.restype = ctypes.c_int
_capsule_pointer = ctypes.pythonapi.PyCapsule_GetPointer
_capsule_pointer.argtypes = [ctypes.py_object, ctypes.c_char_p]
_capsule_pointer.restype = ctypes.c_void_p


@attrs.frozen
class DLPackTensor:
    """What a DLPack capsule describes (the capsule itself is left to its producer)."""

    data: int
    """The address of the first element (`data + byte_offset`)."""
    device_type: int
    device_id: int
    code: int
    bits: int
    lanes: int
    shape: tuple[int, ...]
    strides: tuple[int, ...] | None
    read_only: bool = False

    @property
    def element_type(self) -> str | None:
        """`fp32`, `bf16`, ... or None for a type tilec has no name for."""
        return DLPACK_DTYPES.get((self.code, self.bits)) if self.lanes == 1 else None


def read_dlpack_capsule(capsule: Any) -> DLPackTensor:
    """Read a `dltensor` or `dltensor_versioned` capsule without consuming it."""
    read_only = False
    if _capsule_is_valid(capsule, b"dltensor_versioned"):
        address = _capsule_pointer(capsule, b"dltensor_versioned")
        managed = DLManagedTensorVersioned.from_address(address)
        version = managed.version
        if version.major != 1:
            raise TypeError(f"unsupported DLPack version {version.major}.{version.minor}")
        tensor, read_only = managed.dl_tensor, bool(managed.flags & DLPACK_FLAG_READ_ONLY)
    elif _capsule_is_valid(capsule, b"dltensor"):
        tensor = DLManagedTensor.from_address(_capsule_pointer(capsule, b"dltensor")).dl_tensor
    else:
        raise TypeError("not an unconsumed DLPack capsule ('dltensor' or 'dltensor_versioned')")
    ndim = tensor.ndim
    shape = tuple(tensor.shape[i] for i in range(ndim))
    strides = tuple(tensor.strides[i] for i in range(ndim)) if tensor.strides else None
    return DLPackTensor(
        data=(tensor.data or 0) + tensor.byte_offset,
        device_type=tensor.device.device_type,
        device_id=tensor.device.device_id,
        code=tensor.dtype.code,
        bits=tensor.dtype.bits,
        lanes=tensor.dtype.lanes,
        shape=shape,
        strides=strides,
        read_only=read_only,
    )


def dlpack_tensor(value: Any, stream: int | None = None) -> DLPackTensor:
    """Ask `value.__dlpack__` for a capsule (versioned where the producer can) and read it.

    `stream` is the CUDA stream the consumer will use: the producer orders its work before it.
    """
    dl_stream = None if stream is None else (1 if stream == 0 else stream)  # 1: legacy default
    try:
        capsule = value.__dlpack__(stream=dl_stream, max_version=(1, 0))
    except TypeError:  # a producer from before DLPack 1.0
        capsule = value.__dlpack__(stream=dl_stream)
    return read_dlpack_capsule(capsule)


# Argument -> device address ---------------------------------------------------------------------


def _where(param: str, kernel_name: str) -> str:
    return f"argument '{param}' of {kernel_name}" if kernel_name else f"argument '{param}'"


def _device_error(param: str, kernel_name: str, device: str) -> TypeError:
    return TypeError(
        f"{_where(param, kernel_name)} lives on {device}, but the nvidia backend launches on "
        f"cuda:{_ordinal()}. Move it there (e.g. tensor.cuda()) or pass a NumPy array."
    )


def _ordinal() -> int:
    return cuda.get_driver().properties.ordinal


def _check_dlpack_device(value: Any, param: str, kernel_name: str) -> None:
    device = getattr(value, "__dlpack_device__", None)
    if device is None:
        return
    device_type, device_id = device()
    device_type, device_id = int(device_type), int(device_id)
    if device_type not in (KDL_CUDA, KDL_CUDA_MANAGED):
        name = DEVICE_NAMES.get(device_type, f"DLPack device type {device_type}")
        raise _device_error(param, kernel_name, f"{name}:{device_id}")
    if device_id != _ordinal():
        raise _device_error(param, kernel_name, f"cuda:{device_id}")


def _dlpack_pointer(value: Any, param: str, kernel_name: str, stream: int | None) -> int:
    _check_dlpack_device(value, param, kernel_name)
    tensor = dlpack_tensor(value, stream)
    if tensor.device_type not in (KDL_CUDA, KDL_CUDA_MANAGED):
        name = DEVICE_NAMES.get(tensor.device_type, f"DLPack device type {tensor.device_type}")
        raise _device_error(param, kernel_name, f"{name}:{tensor.device_id}")
    return tensor.data


def _torch_pointer(value: Any, param: str, kernel_name: str, stream: int | None) -> int:
    if value.get_device() != _ordinal():  # -1 for a CPU tensor
        raise _device_error(param, kernel_name, str(value.device))
    return value.data_ptr()


def _cai_pointer(value: Any, param: str, kernel_name: str, stream: int | None) -> int:
    try:
        interface = value.__cuda_array_interface__
    except (AttributeError, TypeError) as error:  # torch: a CPU tensor, a dtype CAI lacks
        if hasattr(value, "__dlpack__"):
            return _dlpack_pointer(value, param, kernel_name, stream)
        raise TypeError(f"{_where(param, kernel_name)}: {error}") from None
    return int(interface["data"][0])


def _device_array_pointer(value: Any, param: str, kernel_name: str, stream: int | None) -> int:
    return value.ptr


def _int_pointer(value: Any, param: str, kernel_name: str, stream: int | None) -> int:
    return int(value)


def _null_pointer(value: Any, param: str, kernel_name: str, stream: int | None) -> int:
    return 0


PointerGetter = Callable[[Any, str, str, "int | None"], int]
_pointer_getters: dict[type, PointerGetter] = {}


def _is_torch_tensor(value: Any) -> bool:
    torch = sys.modules.get("torch")
    return torch is not None and isinstance(value, torch.Tensor)


def _pointer_getter(kind: type, value: Any) -> PointerGetter | None:
    """The getter for `value`, cached by type where the type alone decides it."""
    getter = _pointer_getters.get(kind)
    if getter is not None:
        return getter
    if issubclass(kind, DeviceArray):
        getter = _device_array_pointer
    elif _is_torch_tensor(value):
        getter = _torch_pointer
    elif hasattr(kind, "__cuda_array_interface__"):
        getter = _cai_pointer
    elif hasattr(kind, "__dlpack__"):
        getter = _dlpack_pointer
    elif kind is type(None):
        getter = _null_pointer
    elif issubclass(kind, int) and not issubclass(kind, bool):
        getter = _int_pointer
    elif hasattr(value, "__cuda_array_interface__"):  # set on the instance: decide per value
        return _cai_pointer
    else:
        return None
    _pointer_getters[kind] = getter
    return getter


def device_array_getter(value: Any) -> Callable[[Any], int] | None:
    """A fast `value -> device address` for device arrays of `value`'s type whose device and
    type the caller has already checked (the launcher's key holds both); None for NumPy arrays
    (copied in and out) and types without a cheap getter."""
    if isinstance(value, np.ndarray):
        return None
    if isinstance(value, DeviceArray):
        return _ptr_attribute
    if _is_torch_tensor(value):
        if value.get_device() != _ordinal():
            return None  # the general path reports it
        return type(value).data_ptr
    if hasattr(type(value), "__cuda_array_interface__"):
        return _interface_pointer
    return None


def _ptr_attribute(value: Any) -> int:
    return value.ptr


def _interface_pointer(value: Any) -> int:
    return int(value.__cuda_array_interface__["data"][0])


def device_pointer(value: Any, param: str, kernel_name: str = "", stream: int | None = None) -> int:
    """The device address of a device-resident argument (not a NumPy array: see
    `prepare_arguments`); an int is taken as an address, None as the null pointer.

    Raises TypeError naming the parameter for host memory, another device or another type.
    """
    getter = _pointer_getter(type(value), value)
    if getter is None:
        raise TypeError(
            f"{_where(param, kernel_name)}: cannot pass a {type(value).__name__} as a pointer; "
            "pass a NumPy array, a tilec DeviceArray (tilec.to_device), or a CUDA tensor "
            "(torch, CuPy: __cuda_array_interface__ or __dlpack__)"
        )
    return getter(value, param, kernel_name, stream)


def arg_signature_type(value: Any, param: str = "", kernel_name: str = "") -> tuple[str, bool]:
    """The signature type (`*fp32`, `*bf16`, ...) of an array argument, and whether its address
    is 16-byte aligned. Raises TypeError for a value that is not an array tilec can pass."""
    if isinstance(value, np.ndarray):
        element = DTYPES.get(value.dtype.name)
        address = value.__array_interface__["data"][0]
    elif isinstance(value, DeviceArray):
        element, address = DTYPES.get(value.dtype.name), value.ptr
    elif _is_torch_tensor(value):
        element = SIGNATURE_BY_TORCH.get(str(value.dtype).removeprefix("torch."))
        address = value.data_ptr()
    else:
        element, address = _foreign_array_type(value, param, kernel_name)
    if element is None:
        raise TypeError(f"{_where(param or '?', kernel_name)}: unsupported array element type")
    return "*" + element, address % 16 == 0


def _foreign_array_type(value: Any, param: str, kernel_name: str) -> tuple[str | None, int]:
    try:
        interface = value.__cuda_array_interface__
    except (AttributeError, TypeError):
        interface = None
    if interface is not None:
        try:
            name = np.dtype(interface["typestr"]).name
        except TypeError:
            name = None
        return DTYPES.get(name) if name else None, int(interface["data"][0])
    if hasattr(value, "__dlpack__"):
        _check_dlpack_device(value, param or "?", kernel_name)
        tensor = dlpack_tensor(value)
        return tensor.element_type, tensor.data
    raise TypeError(
        f"{_where(param or '?', kernel_name)}: a {type(value).__name__} is not an array "
        "(expected a NumPy array, a DeviceArray, or an object with __cuda_array_interface__ "
        "or __dlpack__)"
    )


# Device memory ---------------------------------------------------------------------------------


class AllocationPool:
    """Device buffers for NumPy arguments, reused across launches (power-of-two size classes)."""

    MIN_BYTES = 512

    def __init__(self, driver: Any, max_bytes: int = 256 * 1024 * 1024, per_size: int = 8):
        self.driver = driver
        self.max_bytes = max_bytes
        self.per_size = per_size
        self.free: dict[int, list[int]] = {}
        self.held_bytes = 0

    @classmethod
    def size_class(cls, nbytes: int) -> int:
        return max(cls.MIN_BYTES, 1 << max(nbytes - 1, 0).bit_length())

    def take(self, nbytes: int) -> tuple[int, int]:
        """An (address, size) of at least `nbytes` bytes."""
        size = self.size_class(nbytes)
        free = self.free.get(size)
        if free:
            self.held_bytes -= size
            return free.pop(), size
        return self.driver.mem_alloc(size), size

    def give(self, address: int, size: int) -> None:
        """Return a buffer the device no longer uses."""
        free = self.free.setdefault(size, [])
        if len(free) < self.per_size and self.held_bytes + size <= self.max_bytes:
            free.append(address)
            self.held_bytes += size
        else:
            self.driver.mem_free(address)

    def clear(self) -> None:
        for size, free in self.free.items():
            for address in free:
                self.driver.mem_free(address)
            self.held_bytes -= size * len(free)
        self.free.clear()


_pools: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def pool_for(driver: Any) -> AllocationPool:
    pool = _pools.get(driver)
    if pool is None:
        pool = _pools[driver] = AllocationPool(driver)
    return pool


@attrs.define
class HostCopy:
    """A NumPy argument's device buffer."""

    array: np.ndarray
    address: int
    size: int
    write_back: bool


@attrs.define
class PreparedArguments:
    """Raw launch values (device addresses for pointers) and what to do after the launch."""

    values: list[Any]
    copies: list[HostCopy]
    keep_alive: Sequence[Any]
    """The argument objects: their memory must outlive the launch call."""


def prepare_arguments(
    kernel_name: str,
    names: Sequence[str],
    signature: Sequence[str],
    args: Sequence[Any],
    written: Collection[int] = (),
    stream: Any = None,
) -> PreparedArguments:
    """Turn `args` into raw values for `CudaDriver.launch`, copying NumPy arrays to the device.

    `written` holds the indices of the pointer parameters the kernel may store to: their NumPy
    arrays are copied back by `finish_arguments`. Call that after the launch, also on failure.
    """
    if len(args) != len(signature):
        raise TypeError(f"{kernel_name} takes {len(signature)} arguments; got {len(args)}")
    pointers = [i for i, kind in enumerate(signature) if kind[0] == "*"]
    values, copies = _prepare(kernel_name, names, pointers, args, written, stream)
    return PreparedArguments(values, copies, args)


def _prepare(
    kernel_name: str,
    names: Sequence[str],
    pointers: Sequence[int],
    args: Sequence[Any],
    written: Collection[int],
    stream: Any,
) -> tuple[list[Any], list[HostCopy]]:
    handle = stream if stream is None or type(stream) is int else cuda.stream_handle(stream)
    values: list[Any] = list(args)
    copies: list[HostCopy] = []
    try:
        for i in pointers:
            value = values[i]
            kind = type(value)
            if kind is np.ndarray or isinstance(value, np.ndarray):
                copy = _copy_in(kernel_name, names[i], value, i in written, stream)
                copies.append(copy)
                values[i] = copy.address
                continue
            getter = _pointer_getters.get(kind) or _pointer_getter(kind, value)
            if getter is None:
                device_pointer(value, names[i], kernel_name, handle)  # raises the TypeError
            values[i] = getter(value, names[i], kernel_name, handle)
    except BaseException:
        finish_arguments(PreparedArguments(values, copies, args), stream, copy_back=False)
        raise
    return values, copies


def _copy_in(
    kernel_name: str, name: str, array: np.ndarray, write_back: bool, stream: Any
) -> HostCopy:
    if not (array.flags.c_contiguous or array.flags.f_contiguous):
        raise TypeError(
            f"{_where(name, kernel_name)} is a non-contiguous NumPy array (strides "
            f"{array.strides}); pass np.ascontiguousarray(...) and copy the result back yourself"
        )
    if write_back and not array.flags.writeable:
        raise TypeError(
            f"{_where(name, kernel_name)} is a read-only NumPy array, but the kernel stores to it; "
            "pass a writeable array (array.copy())"
        )
    driver = cuda.get_driver()
    address, size = pool_for(driver).take(array.nbytes)
    copy = HostCopy(array, address, size, write_back)
    try:
        driver.copy_to_device(address, array.ctypes.data, array.nbytes, stream)
    except BaseException:
        pool_for(driver).give(address, size)
        raise
    return copy


def finish_arguments(
    prepared: PreparedArguments, stream: Any = None, *, copy_back: bool = True
) -> None:
    """Copy written NumPy arrays back (waiting for the kernel) and release their device buffers."""
    if not prepared.copies:
        return
    driver = cuda.get_driver()
    pool = pool_for(driver)
    try:
        if copy_back:
            for copy in prepared.copies:
                array = copy.array
                if copy.write_back and array.nbytes:
                    driver.copy_to_host(array.ctypes.data, copy.address, array.nbytes, stream)
        driver.synchronize(stream)
    finally:
        for copy in prepared.copies:
            pool.give(copy.address, copy.size)
        prepared.copies = []


class DeviceArray:
    """A C-contiguous array in device memory, freed when garbage collected.

    Works wherever tilec takes an array, and with CuPy, Numba or torch through
    `__cuda_array_interface__` (version 3).
    """

    def __init__(self, shape: int | Sequence[int], dtype: Any = np.float32):
        self.shape = (
            (int(shape),) if isinstance(shape, (int, np.integer)) else tuple(map(int, shape))
        )
        self.dtype = np.dtype(dtype)
        if self.dtype.name not in DTYPES:
            raise TypeError(f"DeviceArray: unsupported dtype {self.dtype}")
        if any(n < 0 for n in self.shape):
            raise ValueError(f"DeviceArray: negative dimension in shape {self.shape}")
        driver = cuda.get_driver()
        self.ptr = driver.mem_alloc(self.nbytes)
        self._finalizer = weakref.finalize(self, _free, driver, self.ptr)
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
        return {
            "shape": self.shape,
            "typestr": self.dtype.str,
            "data": (self.ptr, False),
            "version": 3,
            "strides": None,
        }

    def __len__(self) -> int:
        if not self.shape:
            raise TypeError("len() of a 0-d DeviceArray")
        return self.shape[0]

    def __repr__(self) -> str:
        return f"DeviceArray(shape={self.shape}, dtype={self.dtype}, ptr={self.ptr:#x})"

    def _check_live(self) -> None:
        if not self._finalizer.alive:
            raise ValueError("DeviceArray has been freed")

    def numpy(self) -> np.ndarray:
        """A host copy (waits for the work queued on the default stream)."""
        self._check_live()
        host = np.empty(self.shape, self.dtype)
        cuda.get_driver().copy_to_host(host.ctypes.data, self.ptr, self.nbytes)
        return host

    def copy_from(self, array: Any) -> DeviceArray:
        """Copy a host array of the same shape (and a dtype it converts to) into this one."""
        self._check_live()
        source = np.ascontiguousarray(array, dtype=self.dtype)
        if source.shape != self.shape:
            raise ValueError(f"DeviceArray.copy_from: shape {source.shape} != {self.shape}")
        driver = cuda.get_driver()
        driver.copy_to_device(self.ptr, source.ctypes.data, self.nbytes)
        driver.synchronize()
        return self

    def free(self) -> None:
        """Release the device memory now (also done when the array is garbage collected)."""
        self._finalizer()


def _free(driver: Any, address: int) -> None:
    with contextlib.suppress(Exception):  # the context is gone (interpreter exit)
        driver.mem_free(address)


def to_device(array: Any) -> DeviceArray:
    """A DeviceArray holding a copy of `array` (anything np.asarray takes)."""
    host = np.asarray(array)
    return DeviceArray(host.shape, host.dtype).copy_from(host)


def empty(shape: int | Sequence[int], dtype: Any = np.float32) -> DeviceArray:
    """An uninitialized DeviceArray."""
    return DeviceArray(shape, dtype)


def run_kernel(
    kernel: cuda.LoadedKernel,
    grid: Any,
    args: Sequence[Any],
    *,
    num_warps: int,
    threads_per_warp: int = 32,
    written: Collection[int] = (),
    stream: Any = None,
) -> None:
    """Launch a loaded kernel with user arguments (NumPy arrays, device arrays, scalars):
    `prepare_arguments`, `CudaDriver.launch`, `finish_arguments`."""
    packer = kernel.packer
    if packer is None:
        raise cuda.CudaError(f"kernel '{kernel.name}' was loaded without a signature")
    if len(args) != len(packer.signature):
        raise TypeError(f"{kernel.name} takes {len(packer.signature)} arguments; got {len(args)}")
    values, copies = _prepare(
        kernel.name, packer.names, packer.pointer_indices, args, written, stream
    )
    driver = cuda.get_driver()
    if not copies:
        driver.launch(kernel, grid, num_warps, threads_per_warp, values, stream)
        return
    prepared = PreparedArguments(values, copies, args)
    try:
        driver.launch(kernel, grid, num_warps, threads_per_warp, values, stream)
    finally:
        finish_arguments(prepared, stream)


def to_host(value: Any) -> np.ndarray:
    """A NumPy copy of a device array argument (DeviceArray, torch CUDA tensor, any contiguous
    `__cuda_array_interface__` object); bf16 elements come back as their uint16 bits."""
    if isinstance(value, DeviceArray):
        return value.numpy()
    if _is_torch_tensor(value):
        tensor = value.detach()
        if str(tensor.dtype) == "torch.bfloat16":
            tensor = tensor.view(dtype=_torch_int16(tensor))
            return tensor.cpu().numpy().view(np.uint16)
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
        driver = cuda.get_driver()
        driver.synchronize()
        driver.copy_to_host(host.ctypes.data, interface["data"][0], host.nbytes)
        driver.synchronize()
    return host


def _torch_int16(tensor: Any) -> Any:
    import torch

    return torch.int16
