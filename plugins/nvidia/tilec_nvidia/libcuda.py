"""The CUDA driver entry points a launch from the disk cache needs, called through ctypes.

Importing `cuda.bindings.driver` costs about 15 ms (on the H100 host, after torch): three quarters
of what a program's first launch of a kernel from the disk cache may cost. That launch needs a
handful of driver calls: `cuInit`, the device and its limits, the current or primary context
(torch's), `cuModuleLoadData`, `cuModuleGetFunction`, the function's attributes (and its cache
configuration, where `driver.PREFER_SHARED` asks), `cuLaunchKernel`, and the errors' names.
`LibCuda` makes those calls through ctypes on `libcuda.so.1` (the library cuda-bindings loads too,
found by the same system search) and answers them as `cuda.bindings.driver` does, `(CUresult,
*values)`, with the same argument order, so `tilec_nvidia.driver.CudaDriver` runs on it unchanged
and turns a failed call into the same `CudaError` with the same name (`cuGetErrorName` gives the
enum's name).

Every other name (`cuMemAlloc`, `cuStreamIsCapturing`, `cuEventCreate`, `CUdeviceptr`, ...) is
`cuda.bindings.driver`'s, imported the first time one is asked for: copies of NumPy arrays,
events, synchronizing and capture queries still go through cuda-python. Contexts, modules,
functions and streams are `Handle`s here: a `c_void_p` that reads as its int, which
cuda-bindings takes wherever it takes a handle object. `cuLaunchKernel`, also the Python fast
path's call on every launch, is called without declared argument types, the handles and the
kernelParams pointer passed as the ctypes objects they are: declared types cost a microsecond a
launch of conversions, the undeclared call costs what cuda-bindings' does.

The entry points are those `cuGetProcAddress` gives for CUDA `API_VERSION` (as cuda-bindings
resolves its own, for the version of its headers): the prototypes below are that version's, so
a newer driver's new variant of a function (`cuCtxGetDevice_v2` of CUDA 13) is not picked up
under the old signature. `driver_api()` is the process's one `LibCuda`, or the
`cuda.bindings.driver` module where `libcuda.so.1` or an entry point is missing (its errors then
say why, as before) or `TILEC_NVIDIA_LIBCUDA=0` asks for it.
"""

from __future__ import annotations

import ctypes
import importlib.util
import logging
import sys
import threading
from collections.abc import Callable
from typing import Any

from tilec.settings import Setting

log = logging.getLogger(__name__)

ENABLED = Setting(
    "TILEC_NVIDIA_LIBCUDA",
    "on",
    "The nvidia backend makes a launch's CUDA driver calls through ctypes on libcuda.so.1 "
    "(`tilec_nvidia.libcuda`): a program's first launch from the disk cache does not import "
    "cuda-bindings (about 15 ms); other calls (copies of NumPy arrays, events, synchronizing) "
    "import it when first made. `0` makes every driver call go through cuda-bindings. Read at "
    "the process's first driver call.",
)
"""On by default since its GPU tests passed on the H200 (`TILEC_NVIDIA_LIBCUDA=1 pytest -m gpu
tests/nvidia`, 2026-11-27); `0` is the way back to cuda-bindings for every call."""


def enabled() -> bool:
    """`TILEC_NVIDIA_LIBCUDA` as a flag that is on unless set to `0`, `false`, `no` (or empty:
    unset)."""
    return ENABLED.get() is None or ENABLED.enabled()


API_VERSION = 12000
"""The CUDA version whose entry points (and prototypes) are asked for: 12.0."""

LIBRARY = "libcuda.so.1"

_INT, _UINT, _PTR, _TEXT = ctypes.c_int, ctypes.c_uint, ctypes.c_void_p, ctypes.c_char_p


class Handle(ctypes.c_void_p):
    """A driver handle (CUcontext, CUmodule, CUfunction, CUstream): a `c_void_p`, which ctypes
    passes as it is, that reads as its int (`int()`, `==`, `hash`; cuda-bindings' functions and
    handle types take it as they take an int)."""

    __slots__ = ()

    def __int__(self) -> int:
        return self.value or 0

    __index__ = __int__

    def __eq__(self, other: object) -> bool:
        if isinstance(other, (int, Handle)):
            return int(self) == int(other)
        return NotImplemented

    def __hash__(self) -> int:
        return hash(int(self))

    def __repr__(self) -> str:
        return f"Handle({int(self):#x})"


class _Out:
    """An output parameter of a driver function: the wrapper passes a pointer to a fresh
    `ctype` and returns its value after the CUresult, as cuda-bindings does."""

    def __init__(self, ctype: Any):
        self.ctype = ctype


_SIGNATURES: dict[str, tuple[Any, ...]] = {
    "cuInit": (_UINT,),
    "cuDriverGetVersion": (_Out(_INT),),
    "cuDeviceGetCount": (_Out(_INT),),
    "cuDeviceGet": (_Out(_INT), _INT),
    "cuDeviceGetAttribute": (_Out(_INT), _INT, _INT),
    "cuDevicePrimaryCtxRetain": (_Out(Handle), _INT),
    "cuCtxGetCurrent": (_Out(Handle),),
    "cuCtxSetCurrent": (_PTR,),
    "cuCtxGetDevice": (_Out(_INT),),
    "cuCtxPushCurrent": (_PTR,),
    "cuCtxPopCurrent": (_Out(Handle),),
    "cuModuleLoadData": (_Out(Handle), _TEXT),
    "cuModuleGetFunction": (_Out(Handle), _PTR, _TEXT),
    "cuFuncSetAttribute": (_PTR, _INT, _INT),
    "cuFuncSetCacheConfig": (_PTR, _INT),
    "cuFuncGetAttribute": (_Out(_INT), _INT, _PTR),
    "cuOccupancyMaxActiveBlocksPerMultiprocessor": (_Out(_INT), _PTR, _INT, ctypes.c_size_t),
    "cuLaunchKernel": (_PTR, _UINT, _UINT, _UINT, _UINT, _UINT, _UINT, _UINT, _PTR, _PTR, _PTR),
    "cuGetErrorName": (_INT, _Out(_TEXT)),
    "cuGetErrorString": (_INT, _Out(_TEXT)),
}
"""The C parameters of each function (CUresult is an int; handles and CUdevice are pointers and
ints), with the outputs marked: the Python call takes the others, in order. A handle comes back
as a `Handle`. `cuLaunchKernel` is called without conversions (`_launch_kernel`)."""

_DEVICE_NAME = (_TEXT, _INT, _INT)
"""`cuDeviceGetName(char *name, int len, CUdevice dev)`: called as `cuDeviceGetName(len, dev)`."""

_GET_PROC_ADDRESS = ("cuGetProcAddress_v2", (_TEXT, _Out(_PTR), _INT, ctypes.c_uint64, _Out(_INT)))
"""`cuGetProcAddress` as CUDA 12's headers name and declare it, found by name in the library:
`(symbol, void **pfn, cudaVersion, flags, CUdriverProcAddressQueryResult *symbolStatus)`."""


class _Constants:
    """Enum values by name (`prefix` + each keyword), as ints: those a launch from the cache
    reads, cuda.h's numbers; any other is cuda-bindings' enum member (imported then)."""

    def __init__(self, enum: str, prefix: str, **values: int):
        self._enum = enum
        self.__dict__.update({prefix + name: value for name, value in values.items()})

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        return getattr(getattr(bindings(), self._enum), name)


class LibCudaError(Exception):
    """libcuda.so.1 lacks an entry point `LibCuda` binds (a driver older than CUDA 12)."""


class LibCuda:
    """The driver functions of `_SIGNATURES` (and `cuDeviceGetName`, `cuGetProcAddress`) as
    cuda-bindings answers them; any other attribute is cuda-bindings'.

    `lookup(name)` gives the address of an exported symbol (`cuGetProcAddress_v2`) or None;
    the functions themselves come from `cuGetProcAddress` (`API_VERSION`). Tests pass a fake
    library's lookup (ctypes callbacks)."""

    CUstream = Handle
    """`CUstream(handle)`: the stream as the launch passes it."""

    CUresult = _Constants("CUresult", "CUDA_", SUCCESS=0, ERROR_INVALID_CONTEXT=201)
    CUdevice_attribute = _Constants(
        "CUdevice_attribute", "CU_DEVICE_ATTRIBUTE_", MAX_THREADS_PER_BLOCK=1, MAX_GRID_DIM_X=5,
        MAX_GRID_DIM_Y=6, MAX_GRID_DIM_Z=7, MAX_SHARED_MEMORY_PER_BLOCK=8, WARP_SIZE=10,
        MAX_REGISTERS_PER_BLOCK=12, MULTIPROCESSOR_COUNT=16, COMPUTE_CAPABILITY_MAJOR=75,
        COMPUTE_CAPABILITY_MINOR=76, MAX_SHARED_MEMORY_PER_BLOCK_OPTIN=97,
    )  # fmt: skip
    CUfunction_attribute = _Constants(
        "CUfunction_attribute", "CU_FUNC_ATTRIBUTE_", MAX_THREADS_PER_BLOCK=0, SHARED_SIZE_BYTES=1,
        LOCAL_SIZE_BYTES=3, NUM_REGS=4, MAX_DYNAMIC_SHARED_SIZE_BYTES=8,
    )  # fmt: skip
    CUfunc_cache = _Constants("CUfunc_cache", "CU_FUNC_CACHE_", PREFER_SHARED=1)

    def __init__(self, lookup: Callable[[str], int | None]):
        self._lookup = lookup  # keeps the library (or a fake's callbacks) alive with the functions
        symbol, params = _GET_PROC_ADDRESS
        address = lookup(symbol)
        if not address:
            raise LibCudaError(f"{LIBRARY} has no {symbol} (a driver older than CUDA 12)")
        get_proc = _wrap(_function(address, params), params)
        self._get_proc = get_proc
        for name, params in (*_SIGNATURES.items(), ("cuDeviceGetName", _DEVICE_NAME)):
            error, address, _status = get_proc(name.encode(), API_VERSION, 0)
            if error or not address:
                raise LibCudaError(f"{LIBRARY} has no {name} for CUDA {API_VERSION} ({error})")
            function = _function(address, params)
            if name == "cuDeviceGetName":
                setattr(self, name, _device_name(function))
            elif name == "cuLaunchKernel":
                raw = ctypes.CFUNCTYPE(_INT)(address)  # no argtypes: nothing converted
                setattr(self, name, _launch_kernel(raw, function))
            else:
                setattr(self, name, _wrap(function, params))

    def cuGetProcAddress(self, symbol: bytes | str, version: int, flags: int) -> tuple:
        """`(CUresult, address, symbolStatus)`, as cuda-bindings' (CUDA 12's `_v2`)."""
        return self._get_proc(
            symbol.encode() if isinstance(symbol, str) else symbol, version, flags
        )

    def cuTensorMapEncodeTiled(self, *args: Any) -> tuple:
        """`(CUresult, map)` as cuda-bindings' (docs/tma.md), the arguments ints and sequences of
        ints (`tilec_nvidia.tensor_map`); `map.getPtr()` the address of its 128 bytes. Bound on
        the first call (a launch without TMA never looks it up)."""
        encode = self.__dict__.get("_encode_tiled")
        if encode is None:
            error, address, _status = self._get_proc(b"cuTensorMapEncodeTiled", API_VERSION, 0)
            if error or not address:
                return (error or 500, None)  # CUDA_ERROR_NOT_FOUND
            encode = self._encode_tiled = _function(address, _ENCODE_TILED)
        made = EncodedMap()
        dims, strides, box, steps = (
            (ctype * max(len(values), 1))(*values)
            for ctype, values in zip(_ENCODE_ARRAYS, args[3:7], strict=True)
        )
        error = encode(made.getPtr(), *args[:3], dims, strides, box, steps, *args[7:])
        return (error, made)

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        value = getattr(bindings(), name)
        setattr(self, name, value)
        return value


_ENCODE_ARRAYS = (ctypes.c_uint64, ctypes.c_uint64, _UINT, _UINT)
_ENCODE_TILED = (_PTR, _INT, _UINT, _PTR, *map(ctypes.POINTER, _ENCODE_ARRAYS), *[_INT] * 4)
"""`cuTensorMapEncodeTiled(CUtensorMap *map, CUtensorMapDataType, cuuint32_t rank, void *address,
const cuuint64_t *globalDim, const cuuint64_t *globalStrides, const cuuint32_t *boxDim, const
cuuint32_t *elementStrides, interleave, swizzle, l2Promotion, oobFill)`, the enums ints."""


class EncodedMap:
    """A CUtensorMap the ctypes `cuTensorMapEncodeTiled` wrote: 128 bytes, 64-byte aligned."""

    __slots__ = ("_buffer",)

    def __init__(self) -> None:
        self._buffer = ctypes.create_string_buffer(128 + 64)

    def getPtr(self) -> int:  # cuda-bindings' name
        base = ctypes.addressof(self._buffer)
        return base + (-base % 64)


def _function(address: int, params: tuple[Any, ...]) -> Any:
    argtypes = [ctypes.POINTER(p.ctype) if isinstance(p, _Out) else p for p in params]
    return ctypes.CFUNCTYPE(_INT, *argtypes)(address)


def _wrap(function: Any, params: tuple[Any, ...]) -> Callable[..., tuple]:
    """`function` called as cuda-bindings' is: the inputs in order, `(CUresult, *outputs)`
    back (NULL handles as 0, like cuda-bindings' `int(handle)`)."""
    outputs = [(i, p.ctype) for i, p in enumerate(params) if isinstance(p, _Out)]
    if not outputs:

        def call(*args: Any) -> tuple:
            return (function(*args),)

        return call

    def call_with_outputs(*args: Any) -> tuple:
        full = list(args)
        made = []
        for i, ctype in outputs:
            value = ctype()
            made.append(value)
            full.insert(i, ctypes.byref(value))
        error = function(*full)
        return (error, *(_value(v) for v in made))

    return call_with_outputs


def _value(value: Any) -> Any:
    if isinstance(value, Handle):
        return value
    if isinstance(value, ctypes.c_void_p):
        return value.value or 0
    return value.value


def _launch_kernel(raw: Any, typed: Any) -> Callable[..., tuple]:
    """`cuLaunchKernel` as cuda-bindings' (kernelParams an address), as cheap a call: ctypes
    passes the `Handle`s and the kernelParams pointer (one `c_void_p` per address, kept) as they
    are and the ints as C ints (the grid, block and shared sizes: checked against the device's
    limits before a launch), with no conversion of its own (argtypes cost a microsecond a
    launch). Anything that cannot go that way (a NumPy integer) goes through the prototype."""
    pointers: dict[Any, Any] = {}

    def cuLaunchKernel(f, gx, gy, gz, bx, by, bz, shared, stream, params, extra) -> tuple:
        if type(f) is not Handle:
            f = Handle(int(f))
        if type(stream) is not Handle:
            stream = Handle(int(stream or 0))
        pointer = pointers.get(params)
        if pointer is None:
            if len(pointers) > 4096:
                pointers.clear()
            pointer = pointers[params] = _PTR(params)
        more = _PTR(extra) if extra else None
        try:
            return (raw(f, gx, gy, gz, bx, by, bz, shared, stream, pointer, more),)
        except ctypes.ArgumentError:
            return (typed(f, gx, gy, gz, bx, by, bz, shared, stream, params, more),)

    return cuLaunchKernel


def _device_name(function: Any) -> Callable[[int, int], tuple]:
    def cuDeviceGetName(length: int, device: int) -> tuple:
        buffer = ctypes.create_string_buffer(length)
        return (function(buffer, length, device), buffer.value)

    return cuDeviceGetName


def bindings() -> Any:
    """`cuda.bindings.driver`, imported on first use (about 15 ms)."""
    from cuda.bindings import driver  # deferred: 15 ms, needed only beyond a cache hit's calls

    return driver


def bindings_installed() -> bool:
    """Whether `cuda.bindings` can be imported, asked without importing it."""
    if "cuda.bindings" in sys.modules:
        return sys.modules["cuda.bindings"] is not None
    try:
        return importlib.util.find_spec("cuda.bindings") is not None
    except (ImportError, ValueError):
        return False


def _library_lookup() -> Callable[[str], int | None]:
    library = ctypes.CDLL(LIBRARY)

    def lookup(name: str) -> int | None:
        try:
            return ctypes.cast(getattr(library, name), ctypes.c_void_p).value
        except AttributeError:
            return None

    return lookup


_api: list[Any] = []
_lock = threading.Lock()


def driver_api() -> Any:
    """The process's `LibCuda` on `libcuda.so.1`, made on first use (`TILEC_NVIDIA_LIBCUDA`, on
    by default); `cuda.bindings.driver` where it is `0`, or the library or one of its entry
    points is missing (then ImportError where cuda-bindings is not installed)."""
    if _api:
        return _api[0]
    with _lock:
        if not _api and not enabled():
            _api.append(bindings())
        if not _api:
            try:
                _api.append(LibCuda(_library_lookup()))
            except (OSError, LibCudaError) as error:
                log.debug("the CUDA driver through cuda-bindings: %s", error)
                _api.append(bindings())
    return _api[0]


def reset(api: Any = None) -> None:
    """Replace the process's driver API (None: made again on the next `driver_api()`); tests
    install a `LibCuda` on a fake library with this."""
    _api.clear()
    if api is not None:
        _api.append(api)
