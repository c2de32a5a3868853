"""tilec: a plugin-based, multi-backend tile-level GPU kernel compiler framework."""

import importlib

from tilec import logs
from tilec.driver import set_device
from tilec.errors import (
    AllConfigsFailed,
    ArgumentValueError,
    BackendError,
    BackendUnavailableError,
    DecoratorError,
    DecoratorTypeError,
    DecoratorValueError,
    DeviceIndexError,
    DeviceLimitError,
    DeviceNotFoundError,
    FreedArrayError,
    GraphCaptureError,
    GridError,
    GridTypeError,
    GridValueError,
    InvalidDeviceIndexError,
    KernelCallError,
    LaunchArgumentError,
    LaunchError,
    OptionError,
    OptionTypeError,
    OptionValueError,
    TensorDescriptorError,
    TilecError,
    UnknownBackendError,
)
from tilec.frontend import CompilationError
from tilec.language import cdiv, next_power_of_2
from tilec.runtime import entry as _entry
from tilec.runtime.compiler import compile, get_backend, set_backend
from tilec.runtime.jit import jit
from tilec.tools.tensor_descriptor import TensorDescriptor
from tilec.version import __version__

logs.configure()


def to_device(array, backend: str | None = None):
    """A copy of the NumPy `array` in the memory of `backend` (default: the selected backend's
    device), usable as a kernel argument without copies; `.numpy()` copies it back. On the interp
    backend the array itself is returned."""
    return get_backend(backend).driver.to_device(array)


_allocator = None


@_entry.user_entry
def set_allocator(allocator) -> None:
    """Triton's `triton.set_allocator(fn)`: the function that gives a kernel scratch memory,
    `fn(size, alignment, stream)` returning an address or an object with `data_ptr()`. A kernel
    that builds tensor maps itself (a `tl.make_tensor_descriptor` of values the kernel computes,
    through TMA on sm_90a: docs/tma.md) asks it at each launch for 128 bytes a map and program,
    as Triton's launcher does; without one (None) such a kernel uses memory of its own, where
    Triton raises. Anything else than a function or None is an `OptionTypeError` (a
    `TypeError`), and so is a return value that gives no address (None, no `data_ptr()`:
    `tilec_nvidia.tma_launch.GlobalScratch`), at the launch."""
    global _allocator
    if allocator is not None and not callable(allocator):
        raise OptionTypeError(
            "tilec.set_allocator takes a function fn(size, alignment, stream) that returns the "
            f"memory, or None; got {allocator!r}"
        )
    _allocator = allocator


def get_allocator():
    """The function `set_allocator` set, or None: what a backend's launcher asks for a kernel's
    global scratch (docs/backend-guide.md)."""
    return _allocator


_LAZY = {
    "Config": ("tilec.runtime.autotune", "Config"),
    "autotune": ("tilec.runtime.autotune", "autotune"),
    "heuristics": ("tilec.runtime.autotune", "heuristics"),
    "testing": ("tilec.testing", None),
}
"""Names loaded on first use: `import tilec` (every launch's process) does not pay for the
autotuner (worker processes) or the benchmarking helpers."""


def __getattr__(name: str):
    if name not in _LAZY:
        raise AttributeError(f"module 'tilec' has no attribute {name!r}")
    module_name, attribute = _LAZY[name]
    module = importlib.import_module(module_name)
    return module if attribute is None else getattr(module, attribute)


__all__ = [
    "AllConfigsFailed",
    "ArgumentValueError",
    "BackendError",
    "BackendUnavailableError",
    "CompilationError",
    "Config",
    "DecoratorError",
    "DecoratorTypeError",
    "DecoratorValueError",
    "DeviceIndexError",
    "DeviceLimitError",
    "DeviceNotFoundError",
    "FreedArrayError",
    "GraphCaptureError",
    "GridError",
    "GridTypeError",
    "GridValueError",
    "InvalidDeviceIndexError",
    "KernelCallError",
    "LaunchArgumentError",
    "LaunchError",
    "OptionError",
    "OptionTypeError",
    "OptionValueError",
    "TensorDescriptor",
    "TensorDescriptorError",
    "TilecError",
    "UnknownBackendError",
    "__version__",
    "autotune",
    "cdiv",
    "compile",
    "heuristics",
    "jit",
    "next_power_of_2",
    "set_allocator",
    "set_backend",
    "set_device",
    "testing",
    "to_device",
]
