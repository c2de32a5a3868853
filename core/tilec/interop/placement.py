"""The device a launch runs on: that of its array arguments (torch tensors, DLPack arrays on a
GPU), else `tilec.driver.current_device()` (`tilec.set_device`, else torch's current device)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from tilec.driver import current_device
from tilec.interop.device_array import DeviceArray
from tilec.interop.dlpack_devices import KDL_CUDA, KDL_CUDA_MANAGED, KDL_ROCM
from tilec.interop.pointers import is_torch_tensor

GPU_DLPACK_TYPES = (KDL_CUDA, KDL_CUDA_MANAGED, KDL_ROCM)


def argument_device(value: Any) -> int | None:
    """The GPU index of an array argument that says which (None for NumPy, host memory, ...)."""
    if is_torch_tensor(value):
        index = value.get_device()
        return index if index >= 0 else None
    if isinstance(value, DeviceArray):
        return value.runtime.properties.ordinal
    device = getattr(value, "__dlpack_device__", None)
    if device is None or isinstance(value, type):
        return None
    device_type, device_id = device()
    return int(device_id) if int(device_type) in GPU_DLPACK_TYPES else None


def launch_device(args: Sequence[Any]) -> int:
    """The device of the first argument that has one, else `current_device()`. Arguments on
    other devices are reported by the pointer getters (`copies.mixed_devices_error`)."""
    for value in args:
        index = argument_device(value)
        if index is not None:
            return index
    return current_device()
