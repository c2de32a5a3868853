"""What a vendor supplies to the shared launch path: primitives, data and the loaded-kernel shape."""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from typing import Any, Generic, Protocol, TypeVar

from tilec.errors import GraphCaptureError, LaunchArgumentError
from tilec.runtime.packing import Packer

T = TypeVar("T")


class DeviceKind:
    """Facts about a vendor's device memory that the shared code reports and checks.

    This class, `DeviceProperties` and `LoadedKernel` are plain classes with `__slots__`, not
    attrs classes: a launch from the disk cache imports them and the vendor's subclasses, and
    attrs generates and compiles each class's methods (0.5-1 ms a class; with the vendor's two
    subclasses, a fifth of that launch's CPU time). A kind and properties, once made, are never
    changed."""

    __slots__ = (
        "backend",
        "capture_error",
        "dlpack_default_stream",
        "dlpack_types",
        "error",
        "label",
        "pool_bytes",
        "tensors",
    )

    def __init__(
        self,
        backend: str,
        label: str,
        dlpack_types: tuple[int, ...],
        tensors: str,
        dlpack_default_stream: int = 1,
        error: type[Exception] = RuntimeError,
        capture_error: type[Exception] = GraphCaptureError,
        pool_bytes: int = 256 * 1024 * 1024,
    ):
        self.backend = backend
        """The backend's name, in errors (`the nvidia backend launches on cuda:0`)."""
        self.label = label
        """The device's DLPack name (`cuda`, `rocm`), in errors (`cuda:1`)."""
        self.dlpack_types = dlpack_types
        """The DLPack device types whose memory kernels can address (kDLCUDA, kDLROCM, ...)."""
        self.tensors = tensors
        """The device arrays a user may pass, in errors (`a CUDA tensor (torch, CuPy)`)."""
        self.dlpack_default_stream = dlpack_default_stream
        """The default stream as DLPack spells it: 1 (legacy default) on CUDA, 0 on ROCm."""
        self.error = error
        """The vendor's error class (CudaError, HipError)."""
        self.capture_error = capture_error
        """What a launch with NumPy arrays during a graph capture raises: a `GraphCaptureError`
        that is also the vendor's error (CudaCaptureError, HipCaptureError)."""
        self.pool_bytes = pool_bytes
        """The most device memory kept for reuse by NumPy copies; 0 frees each copy at once."""


class DeviceProperties:
    """What the launch path and the compiler need to know about a device, read once. Vendors
    add their own facts (a subclass whose `__init__` takes these by keyword and its own) and
    the properties `arch` (the device's own architecture name) and `target` (the arch table
    entry to compile for, None where there is none)."""

    __slots__ = (
        "max_grid",
        "max_shared_per_block",
        "max_threads_per_block",
        "name",
        "ordinal",
        "warp_size",
    )

    def __init__(
        self,
        ordinal: int,
        name: str,
        max_grid: tuple[int, int, int],
        max_threads_per_block: int,
        max_shared_per_block: int,
        warp_size: int,
    ):
        self.ordinal = ordinal
        self.name = name
        self.max_grid = max_grid
        self.max_threads_per_block = max_threads_per_block
        self.max_shared_per_block = max_shared_per_block
        self.warp_size = warp_size

    def __repr__(self) -> str:
        fields = [n for c in reversed(type(self).__mro__) for n in getattr(c, "__slots__", ())]
        return f"{type(self).__name__}({', '.join(f'{n}={getattr(self, n)!r}' for n in fields)})"


class DeviceRuntime(Protocol):
    """The primitives of a vendor's runtime (tilec_nvidia's CudaDriver, tilec_amd's HipDriver).

    Addresses are ints; `stream` is anything `stream_handle` takes (None: the default stream).
    """

    kind: DeviceKind
    properties: DeviceProperties

    def mem_alloc(self, nbytes: int) -> int: ...

    def mem_free(self, address: int) -> None: ...

    def copy_to_device(self, address: int, host: int, nbytes: int, stream: Any = None) -> None: ...

    def copy_to_host(self, host: int, address: int, nbytes: int, stream: Any = None) -> None:
        """Copy device memory to the host and wait for it."""
        ...

    def synchronize(self, stream: Any = None) -> None: ...

    def is_capturing(self, stream: Any = None) -> bool:
        """Whether `stream` is capturing a graph, or is the default stream while another stream
        captures one (its work would join that capture): no synchronizing or allocating calls
        then."""
        ...

    def launch(
        self, kernel: Any, grid: Any, num_warps: int, threads_per_warp: int, args: Sequence[Any],
        stream: Any = None,
    ) -> None:  # fmt: skip
        """Launch a loaded kernel with raw values (device addresses for pointers)."""
        ...


class LoadedKernel:
    """A kernel function in a loaded module, with its argument packer (None: no signature).
    Vendors subclass it with their kernel's facts (a plain class: see `DeviceKind`)."""

    __slots__ = ("function", "module", "name", "packer", "shared_bytes")

    def __init__(
        self, name: str, module: Any, function: Any, shared_bytes: int, packer: Packer | None
    ):
        self.name = name
        self.module = module
        self.function = function
        self.shared_bytes = shared_bytes
        """The dynamic shared memory (LDS) each launch gets."""
        self.packer = packer


def stream_handle(stream: Any) -> int:
    """The stream handle of an int, a driver stream object (CUstream, hipStream_t), a torch or
    CuPy stream (`.cuda_stream`, which ROCm builds keep) or a `__cuda_stream__` object; 0 (the
    default stream) for None."""
    if stream is None:
        return 0
    if isinstance(stream, int):
        return stream
    protocol = getattr(stream, "__cuda_stream__", None)
    if protocol is not None:
        _version, handle = protocol() if callable(protocol) else protocol
        return int(handle)
    handle = getattr(stream, "cuda_stream", None)
    if handle is not None:
        return int(handle)
    try:
        return int(stream)
    except (TypeError, ValueError):
        raise LaunchArgumentError(
            f"stream must be an int handle, a driver stream (CUstream, hipStream_t) or an object "
            f"with .cuda_stream or __cuda_stream__; got {type(stream).__name__}"
        ) from None


def stream_capturing(
    status: Callable[[], Any], error: type[Exception], implicit: str, idle: Any
) -> bool:
    """A `DeviceRuntime.is_capturing` answer from the driver's query: `status()` gives the
    stream's capture status, `idle` is the status of a stream that does not capture, and a driver
    `error` whose message names `implicit` (the driver refusing to query the default stream
    while another stream captures: its work would join that capture) counts as capturing."""
    try:
        answer = status()
    except error as refused:
        if implicit in str(refused):
            return True
        raise
    return int(answer) != int(idle)


class ProcessRuntime(Generic[T]):
    """The process's one vendor runtime, made on first use (`get`); tests `reset` it to a fake."""

    def __init__(self, make: Callable[[], T]):
        self._make = make
        self._value: T | None = None
        self._lock = threading.Lock()

    def get(self) -> T:
        value = self._value
        if value is None:
            with self._lock:
                if self._value is None:
                    self._value = self._make()
                value = self._value
        return value

    def reset(self, value: T | None = None) -> None:
        """Replace the runtime (None: make a new one on the next `get`)."""
        self._value = value


class DeviceRuntimes(Generic[T]):
    """The process's vendor runtimes, one a device: the first made on first use (`make`: the
    current device's), another made from it when a launch first asks for its device
    (`make_other(first, ordinal)`). `multi_device[0]` says whether there are several: drivers
    then make their device current around each call."""

    def __init__(self, make: Callable[[], T], make_other: Callable[[T, int], T]):
        self._first: ProcessRuntime[T] = ProcessRuntime(make)
        self._make_other = make_other
        self._by_device: dict[int, T] = {}
        self._lock = threading.Lock()
        self.multi_device = [False]

    def get(self, ordinal: int | None = None) -> T:
        """The runtime of device `ordinal`; None: the first one."""
        first = self._first.get()
        if ordinal is None or ordinal == first.properties.ordinal:  # type: ignore[attr-defined]
            return first
        runtime = self._by_device.get(ordinal)
        if runtime is not None:
            return runtime
        with self._lock:
            runtime = self._by_device.get(ordinal)
            if runtime is None:
                runtime = self._make_other(first, ordinal)
                self.multi_device[0] = True
                self._by_device[ordinal] = runtime
        return runtime

    def reset(self, value: T | None = None, *others: T) -> None:
        """Replace the runtimes by `value` (None: made on the next `get`) and `others`, runtimes
        of other devices (tests install fakes with this)."""
        self._first.reset(value)
        self._by_device.clear()
        self._by_device.update({o.properties.ordinal: o for o in others})  # type: ignore[attr-defined]
        self.multi_device[0] = bool(others)
