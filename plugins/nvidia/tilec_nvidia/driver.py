"""The CUDA runtime primitives of the NVIDIA backend: context, modules, launches, memory.

`CudaDriver` is the `tilec.interop.device.DeviceRuntime` the shared launch path
(`tilec.interop`) runs on. It calls the driver API as `cuda.bindings.driver` spells it: every
call returns `(CUresult, *values)`; `CudaError` names the call, the CUresult and, where there is
one, the kernel. Its `cu` is `tilec_nvidia.libcuda.driver_api()`: the calls a launch from the
disk cache makes go to `libcuda.so.1` through ctypes, and `cuda.bindings` (15 ms to import) is
imported when another call is first made, never at module import, so this module loads on
machines without CUDA.

The launch hot path is `CudaDriver.launch`: a few integer checks, one `struct.pack_into` into a
buffer whose `void*[]` array was built when the kernel was loaded, and `cuLaunchKernel`.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Sequence
from typing import Any

from tilec.driver import Availability
from tilec.errors import GridTypeError, GridValueError, driver_errors
from tilec.interop.device import (
    DeviceKind,
    DeviceProperties,
    DeviceRuntimes,
    LoadedKernel,
    stream_capturing,
    stream_handle,
)
from tilec.interop.dlpack_devices import KDL_CUDA, KDL_CUDA_MANAGED
from tilec.runtime import packing
from tilec_nvidia import libcuda
from tilec_nvidia.arch import device_target

DEFAULT_SHARED_LIMIT = 48 * 1024
"""Dynamic shared memory a kernel gets without opting in (CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_...)."""
PREFER_SHARED = False
"""Whether a kernel over DEFAULT_SHARED_LIMIT bytes of shared memory is loaded with
`CU_FUNC_CACHE_PREFER_SHARED`, as Triton's loader does; off, the driver chooses the L1/shared
split. Off by measurement (H200, paired sweep of the matmuls and attention forward, eighth
session of issue 23): on, the ragged matmuls, whose unaligned loads go through L1, ran 4-16%
slower (fp16 8191^3 16%), the rest within 1%."""

INSTALL_HINT = "cuda-python (cuda-bindings) is not installed: pip install cuda-bindings"


CudaError, CudaLimitError, CudaDeviceNotFoundError, CudaCaptureError = driver_errors(
    "Cuda", __name__, "A CUDA driver call failed"
)
"""`CudaLimitError`: shared memory, threads a block or programs along a grid axis beyond the
device's; `CudaDeviceNotFoundError`: no such CUDA device; `CudaCaptureError`: NumPy arguments
while a CUDA graph is being captured (`tilec.errors.driver_errors`)."""


CUDA = DeviceKind(
    backend="nvidia",
    label="cuda",
    dlpack_types=(KDL_CUDA, KDL_CUDA_MANAGED),
    tensors="a CUDA tensor (torch, CuPy: __cuda_array_interface__ or __dlpack__)",
    error=CudaError,
    capture_error=CudaCaptureError,
)
"""What the shared launch path needs to know of CUDA memory."""


def _error_name(cu: Any, error: Any) -> str:
    """The name of a CUresult (through `cuGetErrorName` where it has no `.name`)."""
    name = getattr(error, "name", None)
    if name:
        return name
    try:
        failed, text = cu.cuGetErrorName(error)
    except Exception:
        return str(error)
    if failed or text is None:  # a code the driver does not know
        return f"CUresult {error}"
    return text.decode() if isinstance(text, bytes) else str(text)


def _check(cu: Any, call: str, result: tuple, kernel: str | None = None) -> Any:
    """The values of a `(CUresult, *values)` tuple, or CudaError naming the call."""
    error, *values = result
    if error:
        where = f" for kernel '{kernel}'" if kernel else ""
        raise CudaError(f"{call} failed{where}: {_error_name(cu, error)}")
    if not values:
        return None
    return values[0] if len(values) == 1 else tuple(values)


def runtime_availability() -> Availability:
    """Whether CUDA can run kernels here; never raises. Asked through `libcuda.driver_api()`:
    cuda-bindings must be installed, but is not imported where libcuda.so.1 answers."""
    if not libcuda.bindings_installed():
        return Availability(False, INSTALL_HINT)
    try:
        driver = libcuda.driver_api()
    except ImportError:
        return Availability(False, INSTALL_HINT)
    except Exception as error:  # report anything
        return _no_device(f"{type(error).__name__}: {error}")
    try:
        (error,) = driver.cuInit(0)
        if error != driver.CUresult.CUDA_SUCCESS:
            return _no_device(f"cuInit: {_error_name(driver, error)}")
        error, count = driver.cuDeviceGetCount()
        if error != driver.CUresult.CUDA_SUCCESS:
            return _no_device(f"cuDeviceGetCount: {_error_name(driver, error)}")
    except Exception as error:  # RuntimeError when libcuda.so is missing; report anything
        return _no_device(f"{type(error).__name__}: {error}")
    if count == 0:
        return _no_device("no CUDA device found")
    return Availability(True, f"{count} CUDA device(s)")


def _no_device(detail: str) -> Availability:
    return Availability(False, f"no NVIDIA driver/device ({detail})")


def _check_ordinal(cu: Any, ordinal: int) -> None:
    """CudaDeviceNotFoundError where this machine has no CUDA device `ordinal`."""
    count = int(_check(cu, "cuDeviceGetCount", cu.cuDeviceGetCount()))
    if not 0 <= ordinal < count:
        raise CudaDeviceNotFoundError(
            f"there is no cuda:{ordinal}: this machine has {count} CUDA device(s) (cuda:0 to "
            f"cuda:{count - 1}); pass one of them to tilec.set_device"
        )


class Packer(packing.Packer):
    kernel_kind = "a CUDA kernel"


# Device, kernels, launches ---------------------------------------------------------------------


class CudaProperties(DeviceProperties):
    """A CUDA device's properties (a plain class, as its base: `tilec.interop.device`)."""

    __slots__ = (
        "compute_capability",
        "max_shared_per_block_optin",
        "registers_per_block",
        "sm_count",
    )

    def __init__(
        self,
        *,
        compute_capability: tuple[int, int],
        max_shared_per_block_optin: int,
        registers_per_block: int,
        sm_count: int,
        **common: Any,
    ):
        super().__init__(**common)  # the base's fields, by keyword
        self.compute_capability = compute_capability
        self.max_shared_per_block_optin = max_shared_per_block_optin
        self.registers_per_block = registers_per_block
        self.sm_count = sm_count

    @property
    def arch(self) -> str:
        """`sm_XY` of the device itself (it may not be in the arch table)."""
        major, minor = self.compute_capability
        return f"sm_{major}{minor}"

    @property
    def target(self) -> str | None:
        """The arch to compile for on this device (see `tilec_nvidia.arch.device_target`)."""
        return device_target(self.compute_capability)


class CudaKernel(LoadedKernel):
    """A loaded kernel with its resource usage (a plain class, as its base)."""

    __slots__ = (
        "local_bytes",
        "max_threads",
        "num_regs",
        "one_wave_function",
        "one_wave_module",
        "one_wave_programs",
        "static_shared_bytes",
    )

    def __init__(
        self,
        name: str,
        module: Any,
        function: Any,
        shared_bytes: int,
        packer: packing.Packer | None,
        num_regs: int,
        max_threads: int,
        static_shared_bytes: int,
        local_bytes: int,
    ):
        super().__init__(name, module, function, shared_bytes, packer)
        self.num_regs = num_regs
        self.max_threads = max_threads
        """The most threads a block may have with this kernel's register use."""
        self.static_shared_bytes = static_shared_bytes
        self.local_bytes = local_bytes
        self.one_wave_function: Any = None
        """The kernel assembled for launches of at most one wave (`tilec_nvidia.one_wave`), or
        None; `one_wave_module` its module."""
        self.one_wave_module: Any = None
        self.one_wave_programs = 0
        """The most programs a launch of `one_wave_function` may have: those the device runs
        at once with it."""

    def function_for(self, programs: int) -> Any:
        """The function a launch of `programs` programs runs: the one-wave kernel where it
        runs them all at once, else the kernel."""
        if self.one_wave_function is not None and programs <= self.one_wave_programs:
            return self.one_wave_function
        return self.function


def normalize_grid(grid: Any, kernel_name: str) -> tuple[int, int, int]:
    """`grid` (an int or 1-3 ints) as an (x, y, z) tuple of non-negative ints."""
    dims = (grid,) if isinstance(grid, int) else tuple(grid)
    if not 1 <= len(dims) <= 3:
        raise GridValueError(
            f"grid of kernel '{kernel_name}' must have 1 to 3 dimensions; got {grid!r}"
        )
    try:
        dims = tuple(int(d) for d in dims) + (1,) * (3 - len(dims))
    except (TypeError, ValueError):
        raise GridTypeError(
            f"grid of kernel '{kernel_name}' must hold ints; got {grid!r}"
        ) from None
    if min(dims) < 0:
        raise GridValueError(f"grid of kernel '{kernel_name}' has a negative size: {grid!r}")
    return dims  # type: ignore[return-value]


class CudaDriver:
    """One CUDA context and its device: with `ordinal`, that device's primary context (torch's
    too); without, the current context, else device 0's primary context.

    Where the process has drivers of several devices (`MULTI_DEVICE`), every driver call and
    launch makes its context current for the call (`active`), so that launches on one device
    never run in another's context, and the thread's current context (torch's current device)
    is left as it was."""

    kind = CUDA

    def __init__(self, cu: Any = None, ordinal: int | None = None):
        if cu is None:
            cu = libcuda.driver_api()
        self.cu = cu
        _check(cu, "cuInit", cu.cuInit(0))
        current = _check(cu, "cuCtxGetCurrent", cu.cuCtxGetCurrent())
        has_current = current is not None and int(current) != 0
        if has_current and ordinal is None:
            self.context = current  # e.g. torch's; pointers it allocated are valid in it
            self.device = _check(cu, "cuCtxGetDevice", cu.cuCtxGetDevice())
        else:
            if ordinal is not None:
                _check_ordinal(cu, ordinal)
            self.device = _check(cu, "cuDeviceGet", cu.cuDeviceGet(ordinal or 0))
            self.context = _check(
                cu, "cuDevicePrimaryCtxRetain", cu.cuDevicePrimaryCtxRetain(self.device)
            )
            if not has_current:
                _check(cu, "cuCtxSetCurrent", cu.cuCtxSetCurrent(self.context))
        self.properties = self._read_properties()
        default = cu.CUstream(0)
        self._streams: dict[Any, Any] = {None: default, 0: default}

    def _read_properties(self) -> CudaProperties:
        cu, attribute = self.cu, self.cu.CUdevice_attribute

        def get(name: str) -> int:
            value = getattr(attribute, f"CU_DEVICE_ATTRIBUTE_{name}")
            return int(
                _check(cu, "cuDeviceGetAttribute", cu.cuDeviceGetAttribute(value, self.device))
            )

        raw_name = _check(cu, "cuDeviceGetName", cu.cuDeviceGetName(256, self.device))
        if isinstance(raw_name, bytes):
            raw_name = raw_name.split(b"\0", 1)[0].decode(errors="replace")
        return CudaProperties(
            ordinal=int(self.device),
            name=str(raw_name),
            compute_capability=(get("COMPUTE_CAPABILITY_MAJOR"), get("COMPUTE_CAPABILITY_MINOR")),
            max_grid=(get("MAX_GRID_DIM_X"), get("MAX_GRID_DIM_Y"), get("MAX_GRID_DIM_Z")),
            max_threads_per_block=get("MAX_THREADS_PER_BLOCK"),
            max_shared_per_block=get("MAX_SHARED_MEMORY_PER_BLOCK"),
            max_shared_per_block_optin=get("MAX_SHARED_MEMORY_PER_BLOCK_OPTIN"),
            registers_per_block=get("MAX_REGISTERS_PER_BLOCK"),
            sm_count=get("MULTIPROCESSOR_COUNT"),
            warp_size=get("WARP_SIZE"),
        )

    def make_current(self) -> None:
        """Make this driver's context current on the calling thread (contexts are per thread)."""
        _check(self.cu, "cuCtxSetCurrent", self.cu.cuCtxSetCurrent(self.context))

    @contextlib.contextmanager
    def active(self) -> Iterator[None]:
        """This driver's context current for the block: pushed, then popped, where another is
        current; made current where the thread has none."""
        cu = self.cu
        current = _check(cu, "cuCtxGetCurrent", cu.cuCtxGetCurrent())
        if current is None or int(current) == 0:
            self.make_current()
            yield
            return
        if int(current) == int(self.context):
            yield
            return
        _check(cu, "cuCtxPushCurrent", cu.cuCtxPushCurrent(self.context))
        try:
            yield
        finally:
            _check(cu, "cuCtxPopCurrent", cu.cuCtxPopCurrent())

    def call(self, name: str, *args: Any, kernel: str | None = None) -> Any:
        """`cu.<name>(*args)`, made current and retried once on a thread without the context;
        in this driver's context where the process has several (`MULTI_DEVICE`)."""
        function = getattr(self.cu, name)
        if MULTI_DEVICE[0]:
            with self.active():
                return _check(self.cu, name, function(*args), kernel)
        result = function(*args)
        if result[0] == self.cu.CUresult.CUDA_ERROR_INVALID_CONTEXT:
            self.make_current()
            result = function(*args)
        return _check(self.cu, name, result, kernel)

    # Modules ---------------------------------------------------------------------------------

    def load(
        self,
        binary: bytes | str,
        name: str,
        *,
        is_ptx: bool,
        shared_bytes: int = 0,
        signature: Sequence[str] | None = None,
        param_names: Sequence[str] | None = None,
        num_warps: int | None = None,
        threads_per_warp: int = 32,
    ) -> CudaKernel:
        """Load a cubin (or PTX, JIT-compiled by the driver) and get kernel `name` from it.

        `shared_bytes` is the dynamic shared memory each launch gets; `signature` the parameter
        types for the argument Packer. With `num_warps`, a block that the kernel's register use
        cannot fit is reported here rather than at launch.
        """
        props = self.properties
        if shared_bytes > props.max_shared_per_block_optin:
            raise CudaLimitError(
                f"kernel '{name}' needs {shared_bytes} bytes of shared memory; "
                f"{props.name} allows at most {props.max_shared_per_block_optin} per block. "
                f"Use smaller blocks (BLOCK sizes) or fewer pipeline stages (num_stages)."
            )
        if is_ptx:
            text = binary.encode() if isinstance(binary, str) else bytes(binary)
            image = text if text.endswith(b"\0") else text + b"\0"  # the JIT reads a C string
        else:
            image = bytes(binary)
        module = self.call("cuModuleLoadData", image, kernel=name)
        function = self.call("cuModuleGetFunction", module, name.encode(), kernel=name)
        attribute = self.cu.CUfunction_attribute
        if shared_bytes > DEFAULT_SHARED_LIMIT:
            self.call(
                "cuFuncSetAttribute",
                function,
                attribute.CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                shared_bytes,
                kernel=name,
            )
            if PREFER_SHARED:
                prefer = self.cu.CUfunc_cache.CU_FUNC_CACHE_PREFER_SHARED
                self.call("cuFuncSetCacheConfig", function, prefer, kernel=name)

        def get(attr: str) -> int:
            value = getattr(attribute, f"CU_FUNC_ATTRIBUTE_{attr}")
            return int(self.call("cuFuncGetAttribute", value, function, kernel=name))

        kernel = CudaKernel(
            name=name,
            module=module,
            function=function,
            shared_bytes=shared_bytes,
            num_regs=get("NUM_REGS"),
            max_threads=get("MAX_THREADS_PER_BLOCK"),
            static_shared_bytes=get("SHARED_SIZE_BYTES"),
            local_bytes=get("LOCAL_SIZE_BYTES"),
            packer=Packer(signature, param_names) if signature is not None else None,
        )
        if num_warps is not None:
            self.check_block(kernel, num_warps, threads_per_warp)
        return kernel

    def check_block(self, kernel: CudaKernel, num_warps: int, threads_per_warp: int = 32) -> None:
        """Raise CudaLimitError where a block of `num_warps` warps cannot run `kernel`."""
        threads = num_warps * threads_per_warp
        if threads <= kernel.max_threads:
            return
        props = self.properties
        fitting = max(1, kernel.max_threads // threads_per_warp)
        fitting = 1 << (fitting.bit_length() - 1)
        if threads > props.max_threads_per_block:
            reason = f"{props.name} allows at most {props.max_threads_per_block} threads a block"
        else:
            reason = (
                f"it uses {kernel.num_regs} registers a thread, and {threads} threads x "
                f"{kernel.num_regs} registers exceed the {props.registers_per_block} registers "
                f"of a block"
            )
        raise CudaLimitError(
            f"kernel '{kernel.name}' cannot run with num_warps={num_warps} ({threads} threads): "
            f"{reason}. Use num_warps={fitting} or less, or smaller blocks."
        )

    def add_one_wave(self, kernel: CudaKernel, binary: bytes, threads: int) -> None:
        """Load `binary`, `kernel` assembled for launches of at most one wave
        (`tilec_nvidia.one_wave`), as `kernel`'s one-wave function: launches of at most as many
        programs as the device runs at once with it (its blocks an SM, as the driver's occupancy
        calculator gives them, times the SMs) run it. Left out where a block of `threads`
        cannot run it."""
        wave = self.load(binary, kernel.name, is_ptx=False, shared_bytes=kernel.shared_bytes)
        if threads > wave.max_threads:
            self.unload(wave)
            return
        try:
            blocks = int(self.call(
                "cuOccupancyMaxActiveBlocksPerMultiprocessor", wave.function, threads,
                kernel.shared_bytes, kernel=kernel.name,
            ))  # fmt: skip
        except AttributeError:  # a driver binding without the occupancy calculator
            blocks = 1
        kernel.one_wave_function = wave.function
        kernel.one_wave_module = wave.module
        kernel.one_wave_programs = max(blocks, 1) * self.properties.sm_count

    def unload(self, kernel: CudaKernel) -> None:
        """Unload the kernel's module (and its one-wave module); the kernel must not be
        launched again."""
        self.call("cuModuleUnload", kernel.module, kernel=kernel.name)
        if kernel.one_wave_module is not None:
            self.call("cuModuleUnload", kernel.one_wave_module, kernel=kernel.name)
            kernel.one_wave_function = kernel.one_wave_module = None

    # Launches --------------------------------------------------------------------------------

    def stream(self, stream: Any) -> Any:
        """The cuda.bindings CUstream for `stream` (see `stream_handle`), cached by handle."""
        handle = stream_handle(stream)
        cached = self._streams.get(handle)
        if cached is None:
            cached = self._streams[handle] = self.cu.CUstream(handle)
        return cached

    def launch(
        self,
        kernel: CudaKernel,
        grid: Any,
        num_warps: int,
        threads_per_warp: int,
        args: Sequence[Any],
        stream: Any = None,
    ) -> None:
        """Launch `kernel` on `grid` (1-3 dims) with blocks of `num_warps` warps.

        `args` are raw values in signature order (device addresses for pointers; see
        `tilec.interop.copies.prepare_arguments` for arrays). An empty grid launches nothing.
        """
        if type(grid) is tuple and len(grid) == 3:
            x, y, z = grid
        elif type(grid) is tuple and len(grid) == 1:
            x, y, z = grid[0], 1, 1
        else:
            x, y, z = normalize_grid(grid, kernel.name)
        max_x, max_y, max_z = self.properties.max_grid
        if x > max_x or y > max_y or z > max_z or x < 0 or y < 0 or z < 0:
            self._grid_error(kernel, (x, y, z))
        threads = num_warps * threads_per_warp
        if threads > kernel.max_threads:
            self.check_block(kernel, num_warps, threads_per_warp)
        if not (x and y and z):
            return
        packer = kernel.packer
        if packer is None:
            raise CudaError(
                f"kernel '{kernel.name}' was loaded without a signature; pass one to load"
            )
        hstream = self._streams.get(stream) if stream is None or type(stream) is int else None
        if hstream is None:
            hstream = self.stream(stream)
        with packer.lock:  # the parameter buffer is the kernel's: one launch at a time
            if getattr(packer, "scratch_size", 0):  # tensor maps built in the kernel
                params = packer.pack(args, x * y * z, stream)
            else:
                params = packer.pack(args)
            function = kernel.function_for(x * y * z)
            if MULTI_DEVICE[0]:
                with self.active():
                    result = self.cu.cuLaunchKernel(
                        function, x, y, z, threads, 1, 1, kernel.shared_bytes, hstream, params,
                        0,
                    )  # fmt: skip
            else:
                result = self.cu.cuLaunchKernel(
                    function, x, y, z, threads, 1, 1, kernel.shared_bytes, hstream, params, 0,
                )  # fmt: skip
            if result[0]:
                self._launch_error(kernel, result, (x, y, z), threads, hstream, params)

    def _grid_error(self, kernel: CudaKernel, grid: tuple[int, int, int]) -> None:
        grid = normalize_grid(grid, kernel.name)  # reports negative sizes
        for axis, size, limit in zip("xyz", grid, self.properties.max_grid, strict=True):
            if size > limit:
                raise CudaLimitError(
                    f"grid of kernel '{kernel.name}' is {size} programs along {axis}; "
                    f"{self.properties.name} launches at most {limit} along {axis}. "
                    f"Use a larger BLOCK or move programs to the x axis (limit "
                    f"{self.properties.max_grid[0]})."
                )

    def _launch_error(
        self,
        kernel: CudaKernel,
        result: tuple,
        grid: tuple,
        threads: int,
        hstream: Any,
        params: int,
    ) -> None:
        if result[0] == self.cu.CUresult.CUDA_ERROR_INVALID_CONTEXT:  # a new thread: retry
            self.make_current()
            function = kernel.function_for(grid[0] * grid[1] * grid[2])
            result = self.cu.cuLaunchKernel(
                function, *grid, threads, 1, 1, kernel.shared_bytes, hstream, params, 0
            )
            if not result[0]:
                return
        name = _error_name(self.cu, result[0])
        hint = (
            ". A graph is being captured on another stream: pass stream= (the capturing one) or "
            "launch inside torch.cuda.graph/torch.cuda.stream with torch tensors"
            if "CAPTURE" in name
            else ""
        )
        raise CudaError(
            f"launch of kernel '{kernel.name}' failed: {name} "
            f"(grid {grid}, {threads} threads a block, {kernel.shared_bytes} bytes of dynamic "
            f"shared memory){hint}"
        )

    def synchronize(self, stream: Any = None) -> None:
        """Wait until the work on `stream` (default: the default stream) has finished."""
        self.call("cuStreamSynchronize", self.stream(stream))

    def timer(self) -> Any:
        """CUDA events for `tilec.testing.do_bench` (`tilec.interop.timing`)."""
        from tilec_nvidia.timing import CudaTimer  # deferred: only benchmarks time

        return CudaTimer(self)

    def is_capturing(self, stream: Any = None) -> bool:
        """Whether `stream` is capturing a CUDA graph (`cuStreamIsCapturing`), or is the legacy
        default stream while another stream captures one (CUDA_ERROR_STREAM_CAPTURE_IMPLICIT:
        its work would join that capture)."""
        return stream_capturing(
            lambda: self.call("cuStreamIsCapturing", self.stream(stream)),
            CudaError,
            "CUDA_ERROR_STREAM_CAPTURE_IMPLICIT",
            self.cu.CUstreamCaptureStatus.CU_STREAM_CAPTURE_STATUS_NONE,
        )

    # Memory ----------------------------------------------------------------------------------

    def mem_alloc(self, nbytes: int) -> int:
        """A device allocation of `nbytes` (at least 1) bytes; its address."""
        return int(self.call("cuMemAlloc", max(int(nbytes), 1)))

    def mem_free(self, address: int) -> None:
        self.call("cuMemFree", self.cu.CUdeviceptr(address))

    def copy_to_device(self, address: int, host: int, nbytes: int, stream: Any = None) -> None:
        """Copy `nbytes` from host address `host` to device address `address`."""
        if nbytes:
            self.call("cuMemcpyHtoDAsync", address, host, nbytes, self.stream(stream))

    def copy_to_host(self, host: int, address: int, nbytes: int, stream: Any = None) -> None:
        """Copy `nbytes` from device address `address` to host address `host`; waits for it."""
        if nbytes:
            self.call("cuMemcpyDtoHAsync", host, address, nbytes, self.stream(stream))
        self.synchronize(stream)


_drivers: DeviceRuntimes[CudaDriver] = DeviceRuntimes(
    CudaDriver, lambda first, ordinal: CudaDriver(first.cu, ordinal)
)
MULTI_DEVICE = _drivers.multi_device
"""Whether the process has CudaDrivers of several devices (then calls switch contexts)."""
get_driver = _drivers.get
"""The CudaDriver of device `ordinal`, created (cuInit, context) on first use; None: the
process's first one (the current context's device, else device 0)."""
reset_driver = _drivers.reset
"""Replace the process's CudaDrivers by a driver (None: made on the next `get_driver`) and
drivers of other devices (tests install fakes with this)."""
