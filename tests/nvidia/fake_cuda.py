"""Stand-ins for cuda.bindings.driver and for tilec_nvidia's CudaDriver, for tests without a GPU.

`FakeCu` answers the driver calls CudaDriver makes, with an H100's limits, and records launches.
`HostDriver` is a CudaDriver whose "device memory" is host memory, so array logic runs for real.
"""

from __future__ import annotations

import ctypes
import enum
from types import SimpleNamespace

from tilec_nvidia.driver import CUDA, CudaProperties


class CUresult(enum.IntEnum):
    CUDA_SUCCESS = 0
    CUDA_ERROR_INVALID_VALUE = 1
    CUDA_ERROR_OUT_OF_MEMORY = 2
    CUDA_ERROR_INVALID_DEVICE = 101
    CUDA_ERROR_INVALID_IMAGE = 200
    CUDA_ERROR_INVALID_CONTEXT = 201
    CUDA_ERROR_NOT_FOUND = 500
    CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES = 701
    CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED = 900
    CUDA_ERROR_STREAM_CAPTURE_IMPLICIT = 906


class Handle:
    def __init__(self, value: int = 0):
        self.value = int(value)

    def __int__(self) -> int:
        return self.value


class CUstream(Handle):
    pass


class CUdeviceptr(Handle):
    pass


class CUstreamCaptureStatus(enum.IntEnum):
    CU_STREAM_CAPTURE_STATUS_NONE = 0
    CU_STREAM_CAPTURE_STATUS_ACTIVE = 1


DEVICE_ATTRIBUTES = {
    "COMPUTE_CAPABILITY_MAJOR": 9,
    "COMPUTE_CAPABILITY_MINOR": 0,
    "MAX_GRID_DIM_X": 2**31 - 1,
    "MAX_GRID_DIM_Y": 65535,
    "MAX_GRID_DIM_Z": 65535,
    "MAX_THREADS_PER_BLOCK": 1024,
    "MAX_SHARED_MEMORY_PER_BLOCK": 48 * 1024,
    "MAX_SHARED_MEMORY_PER_BLOCK_OPTIN": 227 * 1024,
    "MAX_REGISTERS_PER_BLOCK": 65536,
    "MULTIPROCESSOR_COUNT": 132,
    "WARP_SIZE": 32,
}
FUNCTION_ATTRIBUTES = (
    "NUM_REGS",
    "MAX_THREADS_PER_BLOCK",
    "SHARED_SIZE_BYTES",
    "LOCAL_SIZE_BYTES",
    "MAX_DYNAMIC_SHARED_SIZE_BYTES",
)


PRIMARY_CONTEXT = 0x1234
"""Device n's primary context is PRIMARY_CONTEXT + n."""


class FakeCu:
    """The subset of cuda.bindings.driver that CudaDriver uses."""

    CUresult = CUresult
    CUstream = CUstream
    CUdeviceptr = CUdeviceptr
    CUstreamCaptureStatus = CUstreamCaptureStatus
    CUdevice_attribute = SimpleNamespace(
        **{f"CU_DEVICE_ATTRIBUTE_{name}": name for name in DEVICE_ATTRIBUTES}
    )
    CUfunction_attribute = SimpleNamespace(
        **{f"CU_FUNC_ATTRIBUTE_{name}": name for name in FUNCTION_ATTRIBUTES}
    )
    CUfunc_cache = SimpleNamespace(CU_FUNC_CACHE_PREFER_SHARED="PREFER_SHARED")

    def __init__(self, num_regs: int = 32, current_context: int = 0, device_count: int = 2):
        self.num_regs = num_regs
        self.device_count = device_count
        """The devices cuDeviceGetCount reports; cuDeviceGet refuses the others."""
        self.current = current_context
        self.images: list[bytes] = []
        self.function_attributes: dict[str, int] = {}
        self.cache_config: str | None = None
        self.launches: list[tuple] = []
        self.launch_result = CUresult.CUDA_SUCCESS
        self.fail_context_once = False
        self.set_current_calls = 0
        self.capturing: set[int] = set()
        """Streams capturing a graph (blocking ones, in CUDA's default global mode): while any
        is, the legacy default stream answers CUDA_ERROR_STREAM_CAPTURE_IMPLICIT, and cuMemAlloc
        and cuStreamSynchronize fail."""
        self.context_stack: list[int] = []
        self.image_contexts: list[int] = []
        """The context current at each module load (and launch, below)."""
        self.launch_contexts: list[int] = []
        self.memory: dict[int, ctypes.Array] = {}
        self.stream_calls: list[tuple[str, int]] = []
        """Copies and synchronizations, with the stream handle each went to."""
        self.on_launch = None
        self.function_registers: dict[int, int] = {}
        """Registers a thread of a function (by handle), where not `num_regs`."""
        """Called as on_launch(params) inside cuLaunchKernel (tests read the packed values)."""

    def cuInit(self, flags):
        return (CUresult.CUDA_SUCCESS,)

    def cuCtxGetCurrent(self):
        return (CUresult.CUDA_SUCCESS, Handle(self.current))

    def cuCtxGetDevice(self):
        return (CUresult.CUDA_SUCCESS, max(self.current - PRIMARY_CONTEXT, 0))

    def cuDeviceGetCount(self):
        return (CUresult.CUDA_SUCCESS, self.device_count)

    def cuDeviceGet(self, ordinal):
        if not 0 <= ordinal < self.device_count:
            return (CUresult.CUDA_ERROR_INVALID_DEVICE, None)
        return (CUresult.CUDA_SUCCESS, ordinal)

    def cuDevicePrimaryCtxRetain(self, device):
        return (CUresult.CUDA_SUCCESS, Handle(PRIMARY_CONTEXT + int(device)))

    def cuCtxPushCurrent(self, context):
        self.context_stack.append(self.current)
        self.current = int(context)
        return (CUresult.CUDA_SUCCESS,)

    def cuCtxPopCurrent(self):
        popped, self.current = self.current, self.context_stack.pop()
        return (CUresult.CUDA_SUCCESS, Handle(popped))

    def cuCtxSetCurrent(self, context):
        self.set_current_calls += 1
        self.current = int(context)
        return (CUresult.CUDA_SUCCESS,)

    def cuDeviceGetAttribute(self, attribute, device):
        return (CUresult.CUDA_SUCCESS, DEVICE_ATTRIBUTES[attribute])

    def cuDeviceGetName(self, length, device):
        return (CUresult.CUDA_SUCCESS, b"Fake H100\0\0\0")

    def cuGetErrorName(self, error):
        return (CUresult.CUDA_SUCCESS, CUresult(error).name.encode())

    def cuModuleLoadData(self, image):
        if not image.startswith((b"\x7fELF", b".version", b"//")):
            return (CUresult.CUDA_ERROR_INVALID_IMAGE, None)
        self.images.append(image)
        self.image_contexts.append(self.current)
        return (CUresult.CUDA_SUCCESS, Handle(len(self.images)))

    def cuModuleGetFunction(self, module, name):
        if name == b"missing":
            return (CUresult.CUDA_ERROR_NOT_FOUND, None)
        return (CUresult.CUDA_SUCCESS, Handle(0xF00 + int(module) - 1))

    def cuFuncSetAttribute(self, function, attribute, value):
        self.function_attributes[attribute] = value
        return (CUresult.CUDA_SUCCESS,)

    def cuFuncSetCacheConfig(self, function, config):
        self.cache_config = config
        return (CUresult.CUDA_SUCCESS,)

    def cuFuncGetAttribute(self, attribute, function):
        regs = self.function_registers.get(int(function), self.num_regs)
        values = {
            "NUM_REGS": regs,
            "MAX_THREADS_PER_BLOCK": min(1024, 65536 // regs // 32 * 32),
            "SHARED_SIZE_BYTES": 0,
            "LOCAL_SIZE_BYTES": 0,
        }
        return (CUresult.CUDA_SUCCESS, values[attribute])

    def cuOccupancyMaxActiveBlocksPerMultiprocessor(self, function, threads, shared):
        regs = self.function_registers.get(int(function), self.num_regs)
        return (CUresult.CUDA_SUCCESS, min(32, 65536 // (regs * threads), 2048 // threads))

    def cuLaunchKernel(self, f, gx, gy, gz, bx, by, bz, shared, stream, params, extra):
        if self.fail_context_once:
            self.fail_context_once = False
            return (CUresult.CUDA_ERROR_INVALID_CONTEXT,)
        if self.on_launch is not None:
            self.on_launch(params)
        self.launches.append((f, (gx, gy, gz), (bx, by, bz), shared, stream, params, extra))
        self.launch_contexts.append(self.current)
        return (self.launch_result,)

    def cuMemAlloc(self, nbytes):
        if self.capturing:
            return (CUresult.CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED, None)
        buffer = ctypes.create_string_buffer(nbytes)
        self.memory[ctypes.addressof(buffer)] = buffer
        return (CUresult.CUDA_SUCCESS, ctypes.addressof(buffer))

    def cuMemFree(self, address):
        del self.memory[int(address)]
        return (CUresult.CUDA_SUCCESS,)

    def cuMemcpyHtoDAsync(self, device, host, nbytes, stream):
        ctypes.memmove(device, host, nbytes)
        self.stream_calls.append(("copy_in", int(stream)))
        return (CUresult.CUDA_SUCCESS,)

    def cuMemcpyDtoHAsync(self, host, device, nbytes, stream):
        ctypes.memmove(host, device, nbytes)
        self.stream_calls.append(("copy_out", int(stream)))
        return (CUresult.CUDA_SUCCESS,)

    def cuStreamSynchronize(self, stream):
        if self.capturing:
            return (CUresult.CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED,)
        self.stream_calls.append(("sync", int(stream)))
        return (CUresult.CUDA_SUCCESS,)

    def cuStreamIsCapturing(self, stream):
        if int(stream) == 0 and self.capturing - {0}:
            return (CUresult.CUDA_ERROR_STREAM_CAPTURE_IMPLICIT, None)
        active = int(stream) in self.capturing
        return (CUresult.CUDA_SUCCESS, CUstreamCaptureStatus(int(active)))


class HostDriver:
    """A CudaDriver look-alike whose device memory is host memory (ctypes buffers)."""

    kind = CUDA

    def __init__(self):
        self.properties = CudaProperties(
            ordinal=0,
            name="host memory",
            compute_capability=(9, 0),
            max_grid=(2**31 - 1, 65535, 65535),
            max_threads_per_block=1024,
            max_shared_per_block=48 * 1024,
            max_shared_per_block_optin=227 * 1024,
            registers_per_block=65536,
            sm_count=1,
            warp_size=32,
        )
        self.live: dict[int, ctypes.Array] = {}
        self.allocations = 0
        self.syncs = 0
        self.launches: list[tuple] = []
        self.on_launch = None
        self.capturing: set[int] = set()

    def is_capturing(self, stream=None) -> bool:
        return (stream or 0) in self.capturing

    def mem_alloc(self, nbytes: int) -> int:
        buffer = ctypes.create_string_buffer(max(int(nbytes), 1))
        address = ctypes.addressof(buffer)
        self.live[address] = buffer
        self.allocations += 1
        return address

    def mem_free(self, address: int) -> None:
        del self.live[address]

    def copy_to_device(self, address, host, nbytes, stream=None):
        ctypes.memmove(address, host, nbytes)

    def copy_to_host(self, host, address, nbytes, stream=None):
        ctypes.memmove(host, address, nbytes)
        self.synchronize(stream)

    def synchronize(self, stream=None):
        self.syncs += 1

    def launch(self, kernel, grid, num_warps, threads_per_warp, args, stream=None):
        self.launches.append((kernel, grid, num_warps, list(args), stream))
        if self.on_launch is not None:
            self.on_launch(*args)
