"""NumPy arguments on a GPU: copied to device memory before the launch, copied back after it where
the kernel may write them, their device memory kept in a small pool for the next launch; and
`run_kernel`, a launch with the user's arguments."""

from __future__ import annotations

import weakref
from collections.abc import Collection, Sequence
from typing import Any

import attrs
import numpy as np

from tilec.errors import LaunchArgumentError
from tilec.interop.device import stream_handle
from tilec.interop.host_span import host_span
from tilec.interop.pointers import (
    GETTERS_BY_TYPE,
    device_pointer,
    mixed_devices_error,
    pointer_getter,
    where,
)


class AllocationPool:
    """Device buffers for NumPy arguments, reused across launches (power-of-two size classes)."""

    MIN_BYTES = 512

    def __init__(self, runtime: Any, max_bytes: int = 256 * 1024 * 1024, per_size: int = 8):
        self.runtime = runtime
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
        return self.runtime.mem_alloc(size), size

    def give(self, address: int, size: int) -> None:
        """Return a buffer the device no longer uses."""
        free = self.free.setdefault(size, [])
        if len(free) < self.per_size and self.held_bytes + size <= self.max_bytes:
            free.append(address)
            self.held_bytes += size
        else:
            self.runtime.mem_free(address)

    def clear(self) -> None:
        for size, free in self.free.items():
            for address in free:
                self.runtime.mem_free(address)
            self.held_bytes -= size * len(free)
        self.free.clear()


_pools: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def pool_for(runtime: Any) -> AllocationPool:
    pool = _pools.get(runtime)
    if pool is None:
        pool = _pools[runtime] = AllocationPool(runtime, runtime.kind.pool_bytes)
    return pool


@attrs.define
class HostCopy:
    """A NumPy argument's device buffer."""

    array: np.ndarray
    address: int
    size: int
    write_back: bool
    start: int = 0
    """The byte offset of the argument's first element in `array` (a strided view's span)."""


@attrs.define
class PreparedArguments:
    """Raw launch values (device addresses for pointers) and what to do after the launch."""

    values: list[Any]
    copies: list[HostCopy]
    keep_alive: Sequence[Any]
    """The argument objects: their memory must outlive the launch call."""


def prepare_arguments(
    runtime: Any,
    kernel_name: str,
    names: Sequence[str],
    signature: Sequence[str],
    args: Sequence[Any],
    written: Collection[int] = (),
    stream: Any = None,
) -> PreparedArguments:
    """Turn `args` into raw values for `runtime.launch`, copying NumPy arrays to the device.

    `written` holds the indices of the pointer parameters the kernel may store to: their NumPy
    arrays are copied back by `finish_arguments`. Call that after the launch, also on failure.
    """
    if len(args) != len(signature):
        raise TypeError(f"{kernel_name} takes {len(signature)} arguments; got {len(args)}")
    pointers = [i for i, kind in enumerate(signature) if kind[0] == "*"]
    values, copies = _prepare(runtime, kernel_name, names, pointers, args, written, stream)
    return PreparedArguments(values, copies, args)


def _prepare(
    runtime: Any,
    kernel_name: str,
    names: Sequence[str],
    pointers: Sequence[int],
    args: Sequence[Any],
    written: Collection[int],
    stream: Any,
) -> tuple[list[Any], list[HostCopy]]:
    handle = stream if stream is None or type(stream) is int else stream_handle(stream)
    values: list[Any] = list(args)
    copies: list[HostCopy] = []
    try:
        for i in pointers:
            value = values[i]
            kind = type(value)
            if kind is np.ndarray or isinstance(value, np.ndarray):
                if not copies and runtime.is_capturing(stream):
                    raise _capture_error(runtime, kernel_name, names[i])
                copy = _copy_in(runtime, kernel_name, names[i], value, i in written, stream)
                copies.append(copy)
                values[i] = copy.address + copy.start
                continue
            getter = GETTERS_BY_TYPE.get(kind) or pointer_getter(kind, value)
            if getter is None:
                device_pointer(runtime, value, names[i], kernel_name, handle)  # raises
            values[i] = getter(runtime, value, names[i], kernel_name, handle)
    except BaseException as error:
        prepared = PreparedArguments(values, copies, args)
        finish_arguments(runtime, prepared, stream, copy_back=False)
        mixed = (
            mixed_devices_error(names, args, kernel_name) if isinstance(error, TypeError) else None
        )
        if mixed is not None:
            raise mixed from None
        raise
    return values, copies


def _capture_error(runtime: Any, kernel_name: str, name: str) -> RuntimeError:
    return runtime.kind.error(
        f"{where(name, kernel_name)} is a NumPy array, but the launch stream is capturing a "
        f"graph: copying it in and out would synchronize and allocate during the capture. Pass "
        f"{runtime.kind.tensors} or a tilec.to_device array, allocated before the capture."
    )


def _copy_in(
    runtime: Any, kernel_name: str, name: str, array: np.ndarray, write_back: bool, stream: Any
) -> HostCopy:
    if write_back and not array.flags.writeable:
        raise LaunchArgumentError(
            f"{where(name, kernel_name)} is a read-only NumPy array, but the kernel stores to it; "
            "pass a writeable array (array.copy())"
        )
    array, start = host_span(array)  # a strided view: the memory it spans, written back whole
    pool = pool_for(runtime)
    address, size = pool.take(array.nbytes)
    copy = HostCopy(array, address, size, write_back, start)
    try:
        runtime.copy_to_device(address, array.ctypes.data, array.nbytes, stream)
    except BaseException:
        pool.give(address, size)
        raise
    return copy


def finish_arguments(
    runtime: Any, prepared: PreparedArguments, stream: Any = None, *, copy_back: bool = True
) -> None:
    """Copy written NumPy arrays back (waiting for the kernel) and release their device buffers."""
    if not prepared.copies:
        return
    pool = pool_for(runtime)
    try:
        if copy_back:
            for copy in prepared.copies:
                array = copy.array
                if copy.write_back and array.nbytes:
                    runtime.copy_to_host(array.ctypes.data, copy.address, array.nbytes, stream)
        runtime.synchronize(stream)
    finally:
        for copy in prepared.copies:
            pool.give(copy.address, copy.size)
        prepared.copies = []


def run_kernel(
    runtime: Any,
    kernel: Any,
    grid: Any,
    args: Sequence[Any],
    *,
    num_warps: int,
    threads_per_warp: int = 32,
    written: Collection[int] = (),
    stream: Any = None,
) -> None:
    """Launch a loaded kernel (a `device.LoadedKernel`) with user arguments (NumPy arrays, device
    arrays, scalars): `prepare_arguments`, `runtime.launch`, `finish_arguments`."""
    packer = kernel.packer
    if packer is None:
        raise runtime.kind.error(f"kernel '{kernel.name}' was loaded without a signature")
    if len(args) != len(packer.signature):
        raise TypeError(f"{kernel.name} takes {len(packer.signature)} arguments; got {len(args)}")
    values, copies = _prepare(
        runtime, kernel.name, packer.names, packer.pointer_indices, args, written, stream
    )
    if not copies:
        runtime.launch(kernel, grid, num_warps, threads_per_warp, values, stream)
        return
    prepared = PreparedArguments(values, copies, args)
    try:
        runtime.launch(kernel, grid, num_warps, threads_per_warp, values, stream)
    finally:
        finish_arguments(runtime, prepared, stream)
