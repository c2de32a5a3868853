"""NumPy arguments on a GPU: copied to device memory before the launch, copied back after it where
the kernel may write them, their device memory kept in a small pool for the next launch; and
`run_kernel`, a launch with the user's arguments.

Arguments that share host memory (one array twice, a view and its base, `x` and `x[1:]`,
`a[::2]` and `a[1::2]`) share device memory too: the union of their spans is copied to one
device buffer, each argument gets its own address in it, and the union is copied back once
where the kernel writes any of them. The kernel then sees and leaves what it would on device
arrays, whatever the order of the arguments."""

from __future__ import annotations

import weakref
from collections.abc import Collection, Sequence
from typing import Any

import attrs
import numpy as np

from tilec.errors import LaunchArgumentError
from tilec.interop.device import stream_handle
from tilec.interop.host_span import host_extent, shared_spans
from tilec.interop.pointers import (
    GETTERS_BY_TYPE,
    device_pointer,
    mixed_devices_error,
    pointer_getter,
    where,
)
from tilec.interop.streams import torch_capturing


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


ALIGNMENT = 16
"""A device address keeps its host address modulo this: a pointer is specialized as 16-byte
aligned by its host address. Device allocations are aligned to at least this (256 bytes)."""


@attrs.define
class HostCopy:
    """The device buffer of the host memory some NumPy arguments span (one, or several that
    share memory): `nbytes` bytes from host address `host` at device address `address + pad`."""

    host: int
    nbytes: int
    address: int
    size: int
    pad: int
    """The bytes before the copy in the device buffer: `host % ALIGNMENT`."""
    write_back: bool


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
        raise LaunchArgumentError(
            f"{kernel_name} takes {len(signature)} arguments; got {len(args)}"
        )
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
    arrays: list[int] = []
    copies: list[HostCopy] = []
    try:
        for i in pointers:
            value = values[i]
            kind = type(value)
            if kind is np.ndarray or isinstance(value, np.ndarray):
                if not arrays and (torch_capturing() or runtime.is_capturing(stream)):
                    raise _capture_error(runtime, kernel_name, names[i])
                if i in written and not value.flags.writeable:
                    raise LaunchArgumentError(
                        f"{where(names[i], kernel_name)} is a read-only NumPy array, but the "
                        "kernel stores to it; pass a writeable array (array.copy())"
                    )
                arrays.append(i)
                continue
            getter = GETTERS_BY_TYPE.get(kind) or pointer_getter(kind, value)
            if getter is None:
                device_pointer(runtime, value, names[i], kernel_name, handle)  # raises
            values[i] = getter(runtime, value, names[i], kernel_name, handle)
        if arrays:
            try:
                _copy_in(runtime, kernel_name, names, values, arrays, written, stream, copies)
            except runtime.kind.error as error:
                if not _caused_by_capture(error):
                    raise
                raise _capture_error(runtime, kernel_name, names[arrays[0]]) from error
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


def _caused_by_capture(error: BaseException) -> bool:
    """Whether a vendor call failed for a graph capture that forbids it: one on a stream that
    `is_capturing` does not report (another thread's, a non-blocking stream's) forbids this
    thread's allocations and waits (CUDA_ERROR_STREAM_CAPTURE_*, hipErrorStreamCapture*)."""
    return "capture" in str(error).lower()


def _capture_error(runtime: Any, kernel_name: str, name: str) -> Exception:
    """The GraphCaptureError (also the vendor's error) of NumPy argument `name`."""
    return runtime.kind.capture_error(
        f"{where(name, kernel_name)} is a NumPy array, but a graph capture is running (the "
        f"launch stream is capturing a graph, or another stream is): copying the array in and "
        f"out would synchronize and allocate during the capture. Pass {runtime.kind.tensors} or "
        f"a tilec.to_device array, allocated before the capture."
    )


def _copy_in(
    runtime: Any,
    kernel_name: str,
    names: Sequence[str],
    values: list[Any],
    arrays: Sequence[int],
    written: Collection[int],
    stream: Any,
    copies: list[HostCopy],
) -> None:
    """Copy the NumPy arrays `values[i]`, i in `arrays`, to the device, one buffer for each
    group that shares memory, and put their device addresses in `values`; the buffers go to
    `copies` as they are made (for the caller's clean-up)."""
    extents = []
    for i in arrays:
        try:
            extents.append(host_extent(values[i]))  # a strided view: the memory it spans
        except TypeError as error:  # strides between element boundaries
            raise LaunchArgumentError(f"{where(names[i], kernel_name)}: {error}") from None
    pool = pool_for(runtime)
    for host, nbytes, members in shared_spans([extent[:2] for extent in extents]):
        pad = host % ALIGNMENT
        address, size = pool.take(pad + nbytes)
        write_back = any(arrays[k] in written for k in members)
        copies.append(HostCopy(host, nbytes, address, size, pad, write_back))
        runtime.copy_to_device(address + pad, host, nbytes, stream)
        for k in members:
            start, _, first = extents[k]
            values[arrays[k]] = address + pad + (start - host) + first


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
                if copy.write_back and copy.nbytes:
                    device = copy.address + copy.pad
                    runtime.copy_to_host(copy.host, device, copy.nbytes, stream)
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
        raise LaunchArgumentError(
            f"{kernel.name} takes {len(packer.signature)} arguments; got {len(args)}"
        )
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
        try:
            finish_arguments(runtime, prepared, stream)
        except runtime.kind.error as error:
            if not _caused_by_capture(error):
                raise
            first = next(i for i, a in enumerate(args) if isinstance(a, np.ndarray))
            raise _capture_error(runtime, kernel.name, packer.names[first]) from error
