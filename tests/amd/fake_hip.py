"""A stand-in for hip-python's `hip` module, for tests without ROCm.

`FakeHip` answers the calls `HipDriver` makes, with an MI300X's (gfx942) limits. Its "device
memory" is host memory (ctypes buffers), so copies in and out run for real, and each launch is
recorded with the argument values the kernel would receive; a test may register a Python
function per kernel name that plays the kernel on that memory. With `device_count` > 1 it keeps
a current device (`hipSetDevice`), records the device of every module, function, buffer and
launch, and refuses to launch a function on another device than its module's, as HIP does.
"""

from __future__ import annotations

import ctypes
import enum
import struct
import time
from types import SimpleNamespace


class hipError_t(enum.IntEnum):
    hipSuccess = 0
    hipErrorInvalidValue = 1
    hipErrorInvalidDevice = 101
    hipErrorInvalidImage = 200
    hipErrorNotFound = 500
    hipErrorStreamCaptureUnsupported = 900
    hipErrorStreamCaptureImplicit = 906


class hipStreamCaptureStatus(enum.IntEnum):
    hipStreamCaptureStatusNone = 0
    hipStreamCaptureStatusActive = 1


class FakeDeviceProp:
    def __init__(self):
        self.name = b"AMD Instinct MI300X"
        self.gcnArchName = b"gfx942:sramecc+:xnack-"
        self.maxGridSize = [2**31 - 1, 65535, 65535]
        self.maxThreadsPerBlock = 1024
        self.sharedMemPerBlock = 64 * 1024
        self.warpSize = 64


class FakeHip:
    """The subset of `hip.hip` that HipDriver uses."""

    hipError_t = hipError_t
    hipStreamCaptureStatus = hipStreamCaptureStatus

    def __init__(self, kernels: dict | None = None, device_count: int = 1):
        self.kernels = kernels or {}
        self.device_count = device_count
        self.images: list[bytes] = []
        self.launches: list[SimpleNamespace] = []
        self.buffers: dict[int, ctypes.Array] = {}
        self.functions: dict[int, str] = {}
        self.signatures: dict[str, str] = {}
        self.hipDeviceProp_t = FakeDeviceProp
        self.capturing: set[int] = set()
        """Streams capturing a graph, in HIP's default (global) mode: while any is, the null
        stream answers hipErrorStreamCaptureImplicit and hipMalloc fails."""
        self.synchronized: list = []
        self.events: list[float | None] = []
        self.destroyed: list[int] = []
        self.memsets: list[tuple[int, int, int]] = []
        self.current = 0
        self.module_devices: list[int] = []
        self.function_devices: dict[int, int] = {}
        self.buffer_devices: dict[int, int] = {}

    def hipGetDeviceCount(self):
        return hipError_t.hipSuccess, self.device_count

    def hipGetDevice(self):
        return hipError_t.hipSuccess, self.current

    def hipSetDevice(self, ordinal):
        if not 0 <= ordinal < self.device_count:
            return (hipError_t.hipErrorInvalidDevice,)
        self.current = ordinal
        return (hipError_t.hipSuccess,)

    def hipGetDeviceProperties(self, props, ordinal):
        return (hipError_t.hipSuccess,)

    def hipModuleLoadData(self, image):
        if not image.startswith(b"\x7fELF"):
            return hipError_t.hipErrorInvalidImage, None
        self.images.append(image)
        self.module_devices.append(self.current)
        return hipError_t.hipSuccess, len(self.images)

    def hipModuleGetFunction(self, module, name):
        if name.decode() not in self.images[module - 1].decode("latin-1"):
            return hipError_t.hipErrorNotFound, None
        handle = 1000 + len(self.functions)
        self.functions[handle] = name.decode()
        self.function_devices[handle] = self.module_devices[module - 1]
        return hipError_t.hipSuccess, handle

    def hipModuleLaunchKernel(self, f, gx, gy, gz, bx, by, bz, shared, stream, params, extra):
        if self.function_devices[f] != self.current:
            return (hipError_t.hipErrorInvalidDevice,)
        name = self.functions[f]
        signature = self.signatures.get(name)
        values = None
        if signature is not None:  # read the void*[] the way HIP does: one pointer a parameter
            pointers = (ctypes.c_void_p * len(signature)).from_address(params)
            values = [
                struct.unpack(code, ctypes.string_at(pointer, struct.calcsize(code)))[0]
                for code, pointer in zip(signature, pointers, strict=True)
            ]
        launch = SimpleNamespace(
            name=name, grid=(gx, gy, gz), block=(bx, by, bz), shared=shared, stream=stream,
            params=params, extra=extra, values=values, device=self.current,
        )  # fmt: skip
        self.launches.append(launch)
        play = self.kernels.get(name)
        if play is not None:
            play(self, launch)
        return (hipError_t.hipSuccess,)

    def hipMalloc(self, nbytes):
        if self.capturing:
            return hipError_t.hipErrorStreamCaptureUnsupported, None
        buffer = (ctypes.c_uint8 * nbytes)()
        address = ctypes.addressof(buffer)
        self.buffers[address] = buffer
        self.buffer_devices[address] = self.current
        return hipError_t.hipSuccess, address

    def hipFree(self, address):
        if self.buffers.pop(int(address), None) is None:
            return (hipError_t.hipErrorInvalidValue,)
        return (hipError_t.hipSuccess,)

    def hipMemcpyHtoDAsync(self, device, host, nbytes, stream):
        ctypes.memmove(device, host, nbytes)
        return (hipError_t.hipSuccess,)

    def hipMemcpyDtoHAsync(self, host, device, nbytes, stream):
        ctypes.memmove(host, device, nbytes)
        return (hipError_t.hipSuccess,)

    def hipStreamSynchronize(self, stream):
        self.synchronized.append(stream)
        return (hipError_t.hipSuccess,)

    def hipEventCreate(self):
        self.events.append(None)
        return hipError_t.hipSuccess, len(self.events) - 1

    def hipEventRecord(self, event, stream):
        self.events[event] = time.perf_counter()
        return (hipError_t.hipSuccess,)

    def hipEventSynchronize(self, event):
        if self.events[event] is None:
            return (hipError_t.hipErrorInvalidValue,)
        return (hipError_t.hipSuccess,)

    def hipEventElapsedTime(self, start, end):
        return hipError_t.hipSuccess, (self.events[end] - self.events[start]) * 1000.0

    def hipEventDestroy(self, event):
        self.destroyed.append(event)
        return (hipError_t.hipSuccess,)

    def hipMemsetAsync(self, address, value, nbytes, stream):
        self.memsets.append((address, value, nbytes))
        return (hipError_t.hipSuccess,)

    def hipStreamIsCapturing(self, stream):
        if int(stream or 0) == 0 and self.capturing - {0}:
            return hipError_t.hipErrorStreamCaptureImplicit, None
        active = int(stream or 0) in self.capturing
        return hipError_t.hipSuccess, hipStreamCaptureStatus(int(active))


class MissingRuntimeHip:
    """hip-python on a machine without ROCm: every call raises what hip-python raises."""

    hipError_t = hipError_t

    def __getattr__(self, name):
        def call(*args):
            raise RuntimeError(
                "failed to dlopen 'b'libamdhip64.so'': b'libamdhip64.so: cannot open shared "
                "object file: No such file or directory'"
            )

        return call
