"""DLPack capsules read without being consumed: the producer keeps ownership of its memory.

Both forms are read: `DLManagedTensor` (capsule name `dltensor`) and, from DLPack 1.0,
`DLManagedTensorVersioned` (`dltensor_versioned`, with a read-only flag). The device types are
`tilec.interop.dlpack_devices`'.
"""

from __future__ import annotations

import ctypes
from typing import Any

import attrs

from tilec.ir.type_names import SIGNATURE_BY_DLPACK

DLPACK_DTYPES = SIGNATURE_BY_DLPACK
"""(DLDataTypeCode, bits) -> element type: kDLInt, kDLUInt, kDLFloat, kDLBfloat, kDLBool."""


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


def dlpack_tensor(value: Any, stream: int | None = None, default_stream: int = 1) -> DLPackTensor:
    """Ask `value.__dlpack__` for a capsule (versioned where the producer can) and read it.

    `stream` is the stream the consumer will use (the producer orders its work before it); the
    default stream (0) is `default_stream` in DLPack: 1 (legacy default) on CUDA, 0 on ROCm.
    """
    dl_stream = None if stream is None else (default_stream if stream == 0 else stream)
    try:
        capsule = value.__dlpack__(stream=dl_stream, max_version=(1, 0))
    except TypeError:  # a producer from before DLPack 1.0
        capsule = value.__dlpack__(stream=dl_stream)
    return read_dlpack_capsule(capsule)
