"""Argument -> signature type and specialization facts, as Triton infers them at launch.

NumPy arrays (and CPU DLPack producers, read through `np.from_dlpack`) are pointers typed by
dtype (bool -> `*i1`); bf16 has no NumPy dtype, so a bf16
pointer cannot be inferred: compile with `tilec.compile(signature=...)` instead. Python ints are
`i32` when they fit, else `i64`; floats are `fp32`; bools `i1`. An int equal to 1 is specialized
(its value is part of the key); ints divisible by 16 and 16-byte aligned arrays get
`tile.divisibility = 16` on their argument.
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Any

from tilec.errors import FreedArrayError, LaunchArgumentError
from tilec.ir.type_names import BY_IR_TYPE, SIGNATURE_BY_NUMPY, SIGNATURE_BY_TORCH
from tilec.tools.tensor_descriptor import TensorDescriptor

if TYPE_CHECKING:
    import numpy as np

DTYPES = SIGNATURE_BY_NUMPY
"""NumPy dtype name -> element type (`float32` -> `fp32`)."""

I32 = (-(2**31), 2**31 - 1)
I64 = (-(2**63), 2**63 - 1)
TORCH_DTYPES = SIGNATURE_BY_TORCH
"""torch dtype name -> element type (`bfloat16` -> `bf16`)."""


def loaded_numpy() -> Any:
    """NumPy's module where the program has imported it, else None. Without it no argument can
    be a NumPy array or scalar, so the checks here skip NumPy's types rather than import it:
    `import tilec` does not load NumPy (tens of milliseconds)."""
    return sys.modules.get("numpy")


def device_array_info(value: Any) -> tuple[str, int] | None:
    """For an array that is not a NumPy array (a torch tensor, an object with
    `__cuda_array_interface__` such as CuPy arrays and `tilec.to_device` arrays): its element
    type (`fp32`, `bf16`, ...) and data address; None for anything else."""
    data_ptr = getattr(value, "data_ptr", None)
    if callable(data_ptr) and hasattr(value, "dtype"):  # torch.Tensor, on any device
        scalar = BY_IR_TYPE.get(getattr(value.dtype, "ir_type", None))  # a tl dtype (TensorWrapper)
        if scalar is not None:
            return scalar.signature, data_ptr()
        elem = TORCH_DTYPES.get(str(value.dtype).rsplit(".", 1)[-1])
        return (elem or f"unsupported dtype {value.dtype}"), data_ptr()
    interface = getattr(value, "__cuda_array_interface__", None)
    if isinstance(interface, dict):
        import numpy as np  # deferred: NumPy reads the typestr; `import tilec` does not load it

        try:
            elem = DTYPES.get(np.dtype(interface["typestr"]).name)
        except TypeError:
            elem = None
        if interface.get("typestr") in ("<V2", "|V2") and "bf16" in str(interface.get("descr")):
            elem = "bf16"
        return (elem or f"unsupported dtype {interface.get('typestr')}"), interface["data"][0]
    return None


def _ndarray_token(value: np.ndarray) -> Any:
    # by its type: an ndarray subclass (numpy.ma.MaskedArray, np.matrix) keys apart from plain
    # arrays, so that its first launch goes through `arg_type`, which may refuse it
    return (type(value), value.dtype, value.__array_interface__["data"][0] & 15 == 0)


def _int_token(value: Any) -> Any:
    value = int(value)
    return (int, value == 1, value & 15 == 0, I32[0] <= value <= I32[1])


def _tensor_token(value: Any) -> Any:
    # torch tensors: the hot path of GPU launches. The device index is part of the key, so a
    # tensor on another device (or the CPU: -1) takes the slow path, which reports it.
    return (type(value), value.dtype, value.get_device(), value.data_ptr() & 15 == 0)


def _interface_token(value: Any) -> Any:
    info = device_array_info(value)
    return (type(value), info) if info is None else (type(value), info[0], info[1] & 15 == 0)


def host_dlpack_array(value: Any) -> np.ndarray | None:
    """A zero-copy NumPy view of a CPU DLPack producer that is neither a NumPy array nor a torch
    tensor (None for anything else, or where NumPy cannot read it)."""
    device = getattr(value, "__dlpack_device__", None)
    if not hasattr(value, "__dlpack__") or not callable(device) or device()[0] != 1:
        return None
    import numpy as np  # deferred: NumPy views the host memory; `import tilec` does not load it

    try:
        return np.from_dlpack(value)
    except (TypeError, BufferError, RuntimeError):
        return None


def _dlpack_token(value: Any) -> Any:
    array = host_dlpack_array(value)
    return (type(value), None) if array is None else (type(value), _ndarray_token(array))


def _type_token(value: Any) -> Any:
    return type(value)


def _tuple_token(value: tuple) -> Any:
    return (type(value), *map(spec_token, value))


_TOKENS: dict[type, Any] = {
    int: _int_token, float: _type_token, bool: _type_token, tuple: _tuple_token,
}  # fmt: skip


def _token_function(kind: type) -> Any:
    np = loaded_numpy()
    if np is not None and issubclass(kind, np.ndarray):
        return _ndarray_token
    if issubclass(kind, tuple):  # a namedtuple: its elements are arguments too
        return _tuple_token
    if issubclass(kind, TensorDescriptor):
        return _descriptor_token
    integers, booleans = ((int, np.integer), (bool, np.bool_)) if np is not None else (int, bool)
    if issubclass(kind, integers) and not issubclass(kind, booleans):
        return _int_token
    if callable(getattr(kind, "data_ptr", None)) and callable(getattr(kind, "get_device", None)):
        return _tensor_token
    if hasattr(kind, "__cuda_array_interface__"):
        return _interface_token
    if hasattr(kind, "__dlpack__"):
        return _dlpack_token
    return _generic_token


def _descriptor_token(value: TensorDescriptor) -> Any:
    # every element's token (`tuple_params.flatten`), the block shape and padding
    return (
        type(value), spec_token(value.base), tuple(map(_int_token, value.shape)),
        tuple(map(_int_token, value.strides)), tuple(value.block_shape), value.padding,
    )  # fmt: skip


def _generic_token(value: Any) -> Any:
    if hasattr(value, "__cuda_array_interface__"):  # set on the instance, not the type
        return _interface_token(value)
    return type(value)


def spec_token(value: Any) -> Any:
    """A small hashable summary of a runtime argument: what the compiled code depends on
    (type, dtype, 16-byte alignment, an int's 1 / multiple-of-16 / i32 facts). One dictionary
    lookup by type picks how, so that a launch like an earlier one costs little."""
    token = _TOKENS.get(type(value))
    if token is None:
        token = _TOKENS[type(value)] = _token_function(type(value))
    return token(value)


def _check_host_array(kernel_name: str, param: str, value: np.ndarray) -> None:
    """NumPy arrays whose memory a kernel would misread: big-endian bytes (a kernel reads the
    machine's order), masked arrays (a kernel sees the data under the mask)."""
    if not value.dtype.isnative:
        raise LaunchArgumentError(
            f"argument '{param}' of {kernel_name}: the array's elements are in non-native byte "
            f"order ({value.dtype.str}), which a kernel would misread; pass "
            "array.astype(array.dtype.newbyteorder('='))"
        )
    masked = sys.modules.get("numpy.ma")  # not loaded: no masked array (it costs ~20 ms)
    if masked is not None and isinstance(value, masked.MaskedArray):
        raise LaunchArgumentError(
            f"argument '{param}' of {kernel_name}: a masked array (numpy.ma), whose mask a "
            "kernel cannot see; pass its data (array.data, or array.filled(value)) and the mask "
            "as an array of its own"
        )


def arg_type(kernel_name: str, param: str, value: Any) -> tuple[str, bool]:
    """The signature type of `value` for `param`, and whether it is divisible by 16.

    Raises LaunchArgumentError (a TypeError) naming the parameter for a value that cannot be a
    kernel argument.
    """
    np = loaded_numpy()
    if np is not None and isinstance(value, np.ndarray):
        elem = DTYPES.get(value.dtype.name)
        if elem is None:
            raise LaunchArgumentError(
                f"argument '{param}' of {kernel_name}: unsupported array dtype {value.dtype}"
            )
        _check_host_array(kernel_name, param, value)
        return "*" + elem, value.__array_interface__["data"][0] % 16 == 0
    if isinstance(value, bool) or (np is not None and isinstance(value, np.bool_)):
        return "i1", False
    if isinstance(value, int) or (np is not None and isinstance(value, np.integer)):
        value = int(value)
        if I32[0] <= value <= I32[1]:
            return "i32", value % 16 == 0
        if I64[0] <= value <= I64[1]:
            return "i64", value % 16 == 0
        raise LaunchArgumentError(
            f"argument '{param}' of {kernel_name}: {value} does not fit in 64 bits"
        )
    if isinstance(value, float) or (np is not None and isinstance(value, np.floating)):
        return "fp32", False
    host = None if hasattr(value, "data_ptr") else host_dlpack_array(value)
    if host is not None:
        return arg_type(kernel_name, param, host)
    try:
        info = device_array_info(value)
    except FreedArrayError as error:  # a freed tilec.to_device array
        raise FreedArrayError(f"argument '{param}' of {kernel_name}: {error}") from None
    if info is not None:
        elem, address = info
        if elem.startswith("unsupported"):
            raise LaunchArgumentError(f"argument '{param}' of {kernel_name}: {elem}")
        return "*" + elem, address % 16 == 0
    if isinstance(value, list):
        raise LaunchArgumentError(
            f"argument '{param}' of {kernel_name}: a list; kernels take tuples (as Triton), "
            "pass tuple(values)"
        )
    raise LaunchArgumentError(
        f"argument '{param}' of {kernel_name}: expected an array (a NumPy array, a torch tensor "
        f"or a DLPack producer) for a pointer, an int, float or bool; got {type(value).__name__}"
    )
