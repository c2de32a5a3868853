"""Launch arguments as device addresses, and the signature types of array arguments.

Objects with `__cuda_array_interface__` (CuPy, Numba, `DeviceArray`) and torch tensors on the
device are passed by address, no copy. Objects with only `__dlpack__` are read from their DLPack
capsule without consuming it: the producer keeps ownership, and the argument object stays
referenced until the launch has been issued. NumPy arrays are copied (see `copies`).

A pointer getter is chosen once per argument type (`GETTERS_BY_TYPE`) and called as
`getter(runtime, value, param, kernel_name, stream)`.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any

import numpy as np

from tilec.errors import LaunchArgumentError
from tilec.interop.device_array import DeviceArray
from tilec.interop.dlpack_devices import DEVICE_NAMES
from tilec.runtime.specialization import DTYPES, TORCH_DTYPES

PointerGetter = Callable[[Any, Any, str, str, "int | None"], int]
GETTERS_BY_TYPE: dict[type, PointerGetter] = {}


def where(param: str, kernel_name: str) -> str:
    """`argument 'x' of kernel`, the subject of argument errors."""
    return f"argument '{param}' of {kernel_name}" if kernel_name else f"argument '{param}'"


def _device_error(runtime: Any, param: str, kernel_name: str, device: str) -> LaunchArgumentError:
    kind = runtime.kind
    return LaunchArgumentError(
        f"{where(param, kernel_name)} lives on {device}, but the {kind.backend} backend launches "
        f"on {kind.label}:{runtime.properties.ordinal}. Move it there (e.g. tensor.cuda()) or "
        "pass a NumPy array."
    )


def device_name(value: Any) -> str | None:
    """`cuda:1`, `cpu:0`, ... for a torch tensor or a `__dlpack_device__` object; else None."""
    if is_torch_tensor(value):
        return str(value.device)
    device = getattr(value, "__dlpack_device__", None)
    if device is None:
        return None
    device_type, device_id = device()
    return _dlpack_device_name(int(device_type), int(device_id))


def mixed_devices_error(names: Any, args: Any, kernel_name: str) -> LaunchArgumentError | None:
    """A LaunchArgumentError naming each array argument and its GPU where they are on several
    GPUs (a launch runs on one); None where they are not (host memory is reported per argument,
    with its own fix)."""
    devices = {name: device_name(arg) for name, arg in zip(names, args, strict=False)}
    devices = {
        name: device
        for name, device in devices.items()
        if device is not None and not device.startswith("cpu")
    }
    if len(set(devices.values())) < 2:
        return None
    listed = ", ".join(f"'{name}' on {device}" for name, device in devices.items())
    return LaunchArgumentError(
        f"the arguments of {kernel_name} are on different devices ({listed}); a launch runs on "
        "one device: move them to one (e.g. tensor.to('cuda:0'))"
    )


def dlpack_tensor(value: Any, stream: int | None = None, default_stream: int = 1) -> Any:
    """`tilec.interop.dlpack.dlpack_tensor`: the capsule read of an object with `__dlpack__`."""
    # deferred: the capsule reader (ctypes structures, an attrs class: about 1 ms) waits for
    # an array that only DLPack describes; torch tensors and CuPy arrays are read without it
    from tilec.interop.dlpack import dlpack_tensor as read

    return read(value, stream, default_stream)


def _dlpack_device_name(device_type: int, device_id: int) -> str:
    return f"{DEVICE_NAMES.get(device_type, f'DLPack device type {device_type}')}:{device_id}"


def _check_dlpack_device(runtime: Any, value: Any, param: str, kernel_name: str) -> None:
    device = getattr(value, "__dlpack_device__", None)
    if device is None:
        return
    device_type, device_id = device()
    device_type, device_id = int(device_type), int(device_id)
    if device_type not in runtime.kind.dlpack_types:
        name = _dlpack_device_name(device_type, device_id)
        raise _device_error(runtime, param, kernel_name, name)
    if device_id != runtime.properties.ordinal:
        raise _device_error(runtime, param, kernel_name, f"{runtime.kind.label}:{device_id}")


def _dlpack_pointer(runtime: Any, value: Any, param: str, kernel: str, stream: int | None) -> int:
    _check_dlpack_device(runtime, value, param, kernel)
    tensor = dlpack_tensor(value, stream, runtime.kind.dlpack_default_stream)
    if tensor.device_type not in runtime.kind.dlpack_types:
        name = _dlpack_device_name(tensor.device_type, tensor.device_id)
        raise _device_error(runtime, param, kernel, name)
    return tensor.data


def _torch_pointer(runtime: Any, value: Any, param: str, kernel: str, stream: int | None) -> int:
    if value.get_device() != runtime.properties.ordinal:  # -1 for a CPU tensor
        raise _device_error(runtime, param, kernel, str(value.device))
    return value.data_ptr()


def _cai_pointer(runtime: Any, value: Any, param: str, kernel: str, stream: int | None) -> int:
    try:
        interface = value.__cuda_array_interface__
    except (AttributeError, TypeError) as error:  # torch: a CPU tensor, a dtype CAI lacks
        if hasattr(value, "__dlpack__"):
            return _dlpack_pointer(runtime, value, param, kernel, stream)
        raise LaunchArgumentError(f"{where(param, kernel)}: {error}") from None
    return int(interface["data"][0])


def _device_array_pointer(
    runtime: Any, value: Any, param: str, kernel: str, stream: int | None
) -> int:
    address = value.ptr
    if address is None:
        raise value.freed_error(where(param, kernel))
    return address


def _int_pointer(runtime: Any, value: Any, param: str, kernel: str, stream: int | None) -> int:
    return int(value)


def _null_pointer(runtime: Any, value: Any, param: str, kernel: str, stream: int | None) -> int:
    return 0


def is_torch_tensor(value: Any) -> bool:
    torch = sys.modules.get("torch")
    return torch is not None and isinstance(value, torch.Tensor)


def pointer_getter(kind: type, value: Any) -> PointerGetter | None:
    """The getter for `value`, cached by type where the type alone decides it."""
    getter = GETTERS_BY_TYPE.get(kind)
    if getter is not None:
        return getter
    if issubclass(kind, DeviceArray):
        getter = _device_array_pointer
    elif is_torch_tensor(value):
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
    GETTERS_BY_TYPE[kind] = getter
    return getter


def device_array_getter(runtime: Any, value: Any) -> Callable[[Any], int] | None:
    """A fast `value -> device address` for device arrays of `value`'s type whose device and
    type the caller has already checked (the launcher's key holds both); None for NumPy arrays
    (copied in and out) and types without a cheap getter."""
    if isinstance(value, np.ndarray):
        return None
    if isinstance(value, DeviceArray):
        return _ptr_attribute
    if is_torch_tensor(value):
        if value.get_device() != runtime.properties.ordinal:
            return None  # the general path reports it
        return type(value).data_ptr
    if hasattr(type(value), "__cuda_array_interface__"):
        return _interface_pointer
    return None


def _ptr_attribute(value: Any) -> int:
    address = value.ptr
    if address is None:  # freed; a launch's key (its spec_token) has refused it already
        raise value.freed_error()
    return address


def _interface_pointer(value: Any) -> int:
    return int(value.__cuda_array_interface__["data"][0])


def device_pointer(
    runtime: Any, value: Any, param: str, kernel_name: str = "", stream: int | None = None
) -> int:
    """The device address of a device-resident argument (not a NumPy array: see
    `copies.prepare_arguments`); an int is taken as an address, None as the null pointer.

    Raises LaunchArgumentError (a TypeError) naming the parameter for host memory, another
    device or another type.
    """
    getter = pointer_getter(type(value), value)
    if getter is None:
        raise LaunchArgumentError(
            f"{where(param, kernel_name)}: cannot pass a {type(value).__name__} as a pointer; "
            f"pass a NumPy array, a tilec DeviceArray (tilec.to_device), or {runtime.kind.tensors}"
        )
    return getter(runtime, value, param, kernel_name, stream)


def arg_signature_type(
    runtime: Any, value: Any, param: str = "", kernel_name: str = ""
) -> tuple[str, bool]:
    """The signature type (`*fp32`, `*bf16`, ...) of an array argument, and whether its address
    is 16-byte aligned. Raises LaunchArgumentError for a value that is not an array tilec can
    pass."""
    if isinstance(value, np.ndarray):
        element = DTYPES.get(value.dtype.name)
        address = value.__array_interface__["data"][0]
    elif isinstance(value, DeviceArray):
        element, address = DTYPES.get(value.dtype.name), value.ptr
        if address is None:
            raise value.freed_error(where(param or "?", kernel_name))
    elif is_torch_tensor(value):
        element = TORCH_DTYPES.get(str(value.dtype).removeprefix("torch."))
        address = value.data_ptr()
    else:
        element, address = _foreign_array_type(runtime, value, param, kernel_name)
    if element is None:
        raise LaunchArgumentError(
            f"{where(param or '?', kernel_name)}: unsupported array element type"
        )
    return "*" + element, address % 16 == 0


def _foreign_array_type(
    runtime: Any, value: Any, param: str, kernel_name: str
) -> tuple[str | None, int]:
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
        _check_dlpack_device(runtime, value, param or "?", kernel_name)
        tensor = dlpack_tensor(value)
        return tensor.element_type, tensor.data
    raise LaunchArgumentError(
        f"{where(param or '?', kernel_name)}: a {type(value).__name__} is not an array "
        "(expected a NumPy array, a DeviceArray, or an object with __cuda_array_interface__ "
        "or __dlpack__)"
    )
