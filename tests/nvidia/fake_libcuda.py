"""A fake libcuda.so.1 for tests without a GPU: the entry points `tilec_nvidia.libcuda` binds,
each a ctypes callback with cuda.h's C prototype (CUDA 12.0), so that the real ctypes calls,
pointer outputs and argument conversions run. `FakeLibCuda.lookup` stands for the library's
symbol table (`cuGetProcAddress_v2` is the one symbol looked up by name); the state (devices,
current context, modules, launches) follows `fake_cuda.FakeCu`'s, with an H100's limits."""

from __future__ import annotations

import ctypes
from ctypes import POINTER, c_char_p, c_int, c_uint, c_uint64, c_void_p

PRIMARY_CONTEXT = 0x1234
"""Device n's primary context is PRIMARY_CONTEXT + n."""

FUNCTION = 0x7F00_0000_0F00
"""The handle of every function `cuModuleGetFunction` finds (beyond 32 bits, as a real one)."""

ERRORS = {
    0: b"CUDA_SUCCESS",
    1: b"CUDA_ERROR_INVALID_VALUE",
    100: b"CUDA_ERROR_NO_DEVICE",
    101: b"CUDA_ERROR_INVALID_DEVICE",
    200: b"CUDA_ERROR_INVALID_IMAGE",
    201: b"CUDA_ERROR_INVALID_CONTEXT",
    500: b"CUDA_ERROR_NOT_FOUND",
    701: b"CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES",
}

DEVICE_ATTRIBUTES = {  # cuda.h's CUdevice_attribute numbers
    1: 1024,  # MAX_THREADS_PER_BLOCK
    5: 2**31 - 1,  # MAX_GRID_DIM_X
    6: 65535,
    7: 65535,
    8: 48 * 1024,  # MAX_SHARED_MEMORY_PER_BLOCK
    10: 32,  # WARP_SIZE
    12: 65536,  # MAX_REGISTERS_PER_BLOCK
    16: 132,  # MULTIPROCESSOR_COUNT
    75: 9,  # COMPUTE_CAPABILITY_MAJOR
    76: 0,
    97: 227 * 1024,  # MAX_SHARED_MEMORY_PER_BLOCK_OPTIN
}

PROTOTYPES = {
    # CUresult cuGetProcAddress_v2(const char *symbol, void **pfn, int cudaVersion,
    #                              cuuint64_t flags, CUdriverProcAddressQueryResult *status)
    "cuGetProcAddress_v2": (c_char_p, POINTER(c_void_p), c_int, c_uint64, POINTER(c_int)),
    "cuInit": (c_uint,),
    "cuDriverGetVersion": (POINTER(c_int),),
    "cuDeviceGetCount": (POINTER(c_int),),
    "cuDeviceGet": (POINTER(c_int), c_int),
    "cuDeviceGetAttribute": (POINTER(c_int), c_int, c_int),
    "cuDeviceGetName": (c_void_p, c_int, c_int),  # char *name, int len, CUdevice dev
    "cuDevicePrimaryCtxRetain": (POINTER(c_void_p), c_int),
    "cuCtxGetCurrent": (POINTER(c_void_p),),
    "cuCtxSetCurrent": (c_void_p,),
    "cuCtxGetDevice": (POINTER(c_int),),
    "cuCtxPushCurrent": (c_void_p,),
    "cuCtxPopCurrent": (POINTER(c_void_p),),
    "cuModuleLoadData": (POINTER(c_void_p), c_void_p),  # CUmodule *module, const void *image
    "cuModuleGetFunction": (POINTER(c_void_p), c_void_p, c_char_p),
    "cuFuncSetAttribute": (c_void_p, c_int, c_int),
    "cuFuncSetCacheConfig": (c_void_p, c_int),
    "cuFuncGetAttribute": (POINTER(c_int), c_int, c_void_p),
    # int *numBlocks, CUfunction func, int blockSize, size_t dynamicSMemSize
    "cuOccupancyMaxActiveBlocksPerMultiprocessor": (
        POINTER(c_int),
        c_void_p,
        c_int,
        ctypes.c_size_t,
    ),
    # f, grid x y z, block x y z, sharedMemBytes, hStream, void **kernelParams, void **extra
    "cuLaunchKernel": (c_void_p, *[c_uint] * 7, c_void_p, c_void_p, c_void_p),
    "cuGetErrorName": (c_int, POINTER(c_char_p)),
    "cuGetErrorString": (c_int, POINTER(c_char_p)),
    # CUtensorMap *map, dataType, cuuint32_t rank, void *address, const cuuint64_t *globalDim,
    # const cuuint64_t *globalStrides, const cuuint32_t *boxDim, const cuuint32_t
    # *elementStrides, interleave, swizzle, l2Promotion, oobFill
    "cuTensorMapEncodeTiled": (
        c_void_p,
        c_int,
        c_uint,
        c_void_p,
        *[POINTER(c_uint64)] * 2,
        *[POINTER(c_uint)] * 2,
        *[c_int] * 4,
    ),
}


class FakeLibCuda:
    """The driver's entry points over a fake machine of `device_count` H100s. `calls` lists
    each call's name; `fail[name] = code` makes the next call of `name` return `code`;
    `launches` holds each launch's function, grid, block, shared bytes, stream and the first
    `params_read` 8-byte parameters."""

    def __init__(self, device_count: int = 1, current: int = 0, num_regs: int = 32):
        self.device_count = device_count
        self.current = current
        self.num_regs = num_regs
        self.calls: list[str] = []
        self.fail: dict[str, int] = {}
        self.versions_asked: set[int] = set()
        self.context_stack: list[int] = []
        self.images: list[bytes] = []
        self.image_contexts: list[int] = []
        self.function_attributes: dict[int, int] = {}
        self.cache_config: int | None = None
        self.launches: list[tuple] = []
        self.launch_contexts: list[int] = []
        self.params_read = 0
        """How many kernel parameters a launch records (`launches`' last item)."""
        self.launch_result = 0
        self.encodings: list[dict] = []
        """Each `cuTensorMapEncodeTiled` call's arguments (the arrays read to their length)."""
        self.invalid_context_once = False
        self.callbacks = {
            name: ctypes.CFUNCTYPE(c_int, *params)(self._entry(name))
            for name, params in PROTOTYPES.items()
        }

    def lookup(self, name: str) -> int | None:
        """The library's exported symbol `name`, as `dlsym` finds it."""
        callback = self.callbacks.get(name)
        return ctypes.cast(callback, c_void_p).value if callback is not None else None

    def _entry(self, name: str):
        method = getattr(self, name)

        def entry(*args):
            self.calls.append(name)
            if name in self.fail:
                return self.fail.pop(name)
            return method(*args)

        return entry

    # The entry points: cuda.h's parameters, outputs written through their pointers ------------

    def cuGetProcAddress_v2(self, symbol, pfn, version, flags, status):
        self.versions_asked.add(version)
        callback = self.callbacks.get(symbol.decode())
        if callback is None or flags != 0:
            pfn[0], status[0] = None, 1  # CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND
            return 500
        pfn[0], status[0] = ctypes.cast(callback, c_void_p).value, 0
        return 0

    def cuInit(self, flags):
        return 0

    def cuDriverGetVersion(self, version):
        version[0] = 12080
        return 0

    def cuDeviceGetCount(self, count):
        count[0] = self.device_count
        return 0

    def cuDeviceGet(self, device, ordinal):
        if not 0 <= ordinal < self.device_count:
            return 101
        device[0] = ordinal
        return 0

    def cuDeviceGetAttribute(self, value, attribute, device):
        if attribute not in DEVICE_ATTRIBUTES:
            return 1
        value[0] = DEVICE_ATTRIBUTES[attribute]
        return 0

    def cuDeviceGetName(self, name, length, device):
        text = b"Fake H100\0"
        ctypes.memmove(name, text, min(length, len(text)))
        return 0

    def cuDevicePrimaryCtxRetain(self, context, device):
        context[0] = PRIMARY_CONTEXT + device
        return 0

    def cuCtxGetCurrent(self, context):
        context[0] = self.current or None
        return 0

    def cuCtxSetCurrent(self, context):
        self.current = context or 0
        return 0

    def cuCtxGetDevice(self, device):
        device[0] = max(self.current - PRIMARY_CONTEXT, 0)
        return 0

    def cuCtxPushCurrent(self, context):
        self.context_stack.append(self.current)
        self.current = context or 0
        return 0

    def cuCtxPopCurrent(self, context):
        context[0] = self.current or None
        self.current = self.context_stack.pop()
        return 0

    def cuModuleLoadData(self, module, image):
        start = ctypes.string_at(image, 8)
        if not start.startswith((b"\x7fELF", b".version", b"//")):
            return 200
        self.images.append(start)
        self.image_contexts.append(self.current)
        module[0] = len(self.images)
        return 0

    def cuModuleGetFunction(self, function, module, name):
        if name == b"missing":
            return 500
        function[0] = FUNCTION
        return 0

    def cuFuncSetAttribute(self, function, attribute, value):
        self.function_attributes[attribute] = value
        return 0

    def cuFuncSetCacheConfig(self, function, config):
        self.cache_config = config
        return 0

    def cuFuncGetAttribute(self, value, attribute, function):
        values = {
            0: min(1024, 65536 // self.num_regs // 32 * 32),  # MAX_THREADS_PER_BLOCK
            1: 0,  # SHARED_SIZE_BYTES
            3: 0,  # LOCAL_SIZE_BYTES
            4: self.num_regs,  # NUM_REGS
        }
        value[0] = values[attribute]
        return 0

    def cuOccupancyMaxActiveBlocksPerMultiprocessor(self, blocks, function, threads, shared):
        blocks[0] = min(32, 65536 // (self.num_regs * threads), 2048 // threads)
        return 0

    def cuLaunchKernel(self, f, gx, gy, gz, bx, by, bz, shared, stream, params, extra):
        if self.invalid_context_once:
            self.invalid_context_once = False
            return 201
        pointers = (c_void_p * self.params_read).from_address(params)
        values = [ctypes.c_uint64.from_address(p).value for p in pointers]
        self.launches.append((f, (gx, gy, gz), (bx, by, bz), shared, stream or 0, values))
        self.launch_contexts.append(self.current)
        return self.launch_result

    def cuGetErrorName(self, error, text):
        if error not in ERRORS:
            return 1
        text[0] = ERRORS[error]  # the dict keeps the bytes alive
        return 0

    def cuGetErrorString(self, error, text):
        return self.cuGetErrorName(error, text)

    def cuTensorMapEncodeTiled(self, tensor_map, data_type, rank, address, dims, strides, box,
                               steps, interleave, swizzle, l2, fill):  # fmt: skip
        """Records the call; the map's bytes are its fields (`encoded_map`), as a test can read
        them back; a map not 64-byte aligned is CUDA_ERROR_INVALID_VALUE, as the driver's."""
        call = {
            "map_aligned": tensor_map % 64 == 0,
            "data_type": data_type,
            "rank": rank,
            "address": address or 0,
            "dims": [dims[i] for i in range(rank)],
            "strides": [strides[i] for i in range(rank - 1)],
            "box": [box[i] for i in range(rank)],
            "element_strides": [steps[i] for i in range(rank)],
            "interleave": interleave,
            "swizzle": swizzle,
            "l2_promotion": l2,
            "oob_fill": fill,
        }
        self.encodings.append(call)
        if tensor_map % 64 or not 1 <= rank <= 5:
            return 1
        ctypes.memmove(tensor_map, encoded_map(call), 128)
        return 0


def encoded_map(call: dict) -> bytes:
    """The fake's 128 bytes for an encoding: its address, then rank, type and the enums as
    bytes, the dimensions, strides and box as 32-bit words (truncated: a fingerprint)."""
    head = (call["address"].to_bytes(8, "little")
            + bytes([call["rank"], call["data_type"], call["interleave"], call["swizzle"],
                     call["l2_promotion"], call["oob_fill"]]))  # fmt: skip
    words = [*call["dims"], *call["strides"], *call["box"], *call["element_strides"]]
    body = b"".join((w & 0xFFFF_FFFF).to_bytes(4, "little") for w in words)
    return (head + body).ljust(128, b"\0")[:128]
