"""The HIP runtime primitives of the AMD backend: device, modules, launches, memory.

`HipDriver` is the `tilec.interop.device.DeviceRuntime` the shared launch path (`tilec.interop`)
runs on.
`hip` (hip-python) is imported when the driver is first used (`get_driver()`), never at module
import. hip-python imports without ROCm but raises RuntimeError from the first call when
libamdhip64.so is missing: every call goes through `HipDriver.call`, which turns that into a
`HipError` saying "no ROCm runtime (libamdhip64.so not found)", never a hip traceback.
Every hip call returns `(hipError_t, *values)`; `HipError` names the call, the error and, where
there is one, the kernel. Tests pass a fake `hip` module to `HipDriver`.

HIP has one current device per host thread, and modules, launches, allocations and copies act on
it. The process has one `HipDriver` per device (`get_driver(ordinal)`); where it has several
(`MULTI_DEVICE`), every call of a driver runs with its device current (`active`: `hipSetDevice`
for the call, the thread's device restored after it), so that a launch on rocm:1 never runs on
rocm:0 and torch's current device is left as it was.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Sequence
from typing import Any

from tilec.driver import Availability
from tilec.errors import GridValueError, driver_errors
from tilec.interop.device import (
    DeviceKind,
    DeviceProperties,
    DeviceRuntimes,
    LoadedKernel,
    stream_capturing,
    stream_handle,
)
from tilec.interop.dlpack_devices import KDL_ROCM
from tilec.runtime import packing
from tilec_amd.arch import ARCHS

INSTALL_HINT = "hip-python is not installed: pip install hip-python"
NO_RUNTIME = "no ROCm runtime (libamdhip64.so not found)"


HipError, HipLimitError, HipDeviceNotFoundError, HipCaptureError = driver_errors(
    "Hip", __name__, "A HIP call failed or no ROCm runtime is there"
)
"""`HipLimitError`: LDS, work-items a work-group or programs along a grid axis beyond the
device's; `HipDeviceNotFoundError`: no such HIP device; `HipCaptureError`: NumPy arguments while
a HIP graph is being captured (`tilec.errors.driver_errors`)."""


ROCM = DeviceKind(
    backend="amd",
    label="rocm",
    dlpack_types=(KDL_ROCM,),
    tensors="a ROCm tensor (torch, CuPy)",
    dlpack_default_stream=0,
    error=HipError,
    capture_error=HipCaptureError,
    pool_bytes=0,
)
"""What the shared launch path needs to know of ROCm memory (NumPy copies are freed at once)."""


def import_hip() -> Any:
    """hip-python's `hip` module, or HipError saying how to install it."""
    try:
        from hip import hip
    except ImportError:
        raise HipError(INSTALL_HINT) from None
    return hip


def _runtime_error(error: Exception) -> HipError:
    if "libamdhip64" in str(error):
        return HipError(NO_RUNTIME)
    return HipError(f"no ROCm runtime ({type(error).__name__}: {error})")


def _error_name(error: Any) -> str:
    return getattr(error, "name", None) or str(error)


def runtime_availability(hip: Any = None) -> Availability:
    """Whether HIP can run kernels here; never raises."""
    try:
        hip = hip or import_hip()
        error, count = hip.hipGetDeviceCount()
    except HipError as error:
        return Availability(False, str(error))
    except Exception as error:  # RuntimeError without libamdhip64.so; report anything
        return Availability(False, str(_runtime_error(error)))
    if error != hip.hipError_t.hipSuccess:
        return Availability(False, f"no AMD GPU ({_error_name(error)})")
    if count == 0:
        return Availability(False, "no AMD GPU found")
    return Availability(True, f"{count} AMD GPU(s)")


class Packer(packing.Packer):
    kernel_kind = "an AMD kernel"


class HipProperties(DeviceProperties):
    """A HIP device's properties (a plain class, as its base: `tilec.interop.device`)."""

    __slots__ = ("arch",)

    def __init__(self, *, arch: str, **common: Any):
        super().__init__(**common)  # the base's fields, by keyword
        self.arch = arch
        """`gcnArchName` without its feature suffixes (`gfx942` of `gfx942:sramecc+:xnack-`)."""

    @property
    def target(self) -> str | None:
        """The backend target for this device, or None where tilec has none."""
        return self.arch if self.arch in ARCHS else None


class HipDriver:
    """One HIP device (`ordinal`; None: the thread's current one) and its modules."""

    kind = ROCM

    def __init__(self, hip: Any = None, ordinal: int | None = None):
        self.hip = hip or import_hip()
        if ordinal is None:
            ordinal = int(self._raw("hipGetDevice"))
        else:
            count = int(self._raw("hipGetDeviceCount"))
            if not 0 <= ordinal < count:
                raise HipDeviceNotFoundError(
                    f"there is no rocm:{ordinal}: this machine has {count} HIP device(s) "
                    f"(rocm:0 to rocm:{count - 1}); pass one of them to tilec.set_device"
                )
        self.ordinal = ordinal
        self.properties = self._read_properties()

    @contextlib.contextmanager
    def active(self) -> Iterator[None]:
        """This driver's device current on the calling thread for the block; the thread's
        current device is restored after it."""
        current = int(self._raw("hipGetDevice"))
        if current == self.ordinal:
            yield
            return
        self._raw("hipSetDevice", self.ordinal)
        try:
            yield
        finally:
            self._raw("hipSetDevice", current)

    def call(self, name: str, *args: Any, kernel: str | None = None) -> Any:
        """`hip.<name>(*args)`'s values, or HipError naming the call (and the kernel); on this
        driver's device where the process has drivers of several (`MULTI_DEVICE`)."""
        if MULTI_DEVICE[0]:
            with self.active():
                return self._raw(name, *args, kernel=kernel)
        return self._raw(name, *args, kernel=kernel)

    def _raw(self, name: str, *args: Any, kernel: str | None = None) -> Any:
        try:
            error, *values = getattr(self.hip, name)(*args)
        except RuntimeError as error:  # hip-python without libamdhip64.so
            raise _runtime_error(error) from None
        if error != self.hip.hipError_t.hipSuccess:
            where = f" for kernel '{kernel}'" if kernel else ""
            raise HipError(f"{name} failed{where}: {_error_name(error)}")
        if not values:
            return None
        return values[0] if len(values) == 1 else tuple(values)

    def _read_properties(self) -> HipProperties:
        props = self.hip.hipDeviceProp_t()
        self.call("hipGetDeviceProperties", props, self.ordinal)
        arch, name = _text(props.gcnArchName), _text(props.name)
        return HipProperties(
            ordinal=self.ordinal,
            name=name,
            arch=arch.split(":", 1)[0],
            max_grid=tuple(int(n) for n in list(props.maxGridSize)[:3]),  # type: ignore[arg-type]
            max_threads_per_block=int(props.maxThreadsPerBlock),
            max_shared_per_block=int(props.sharedMemPerBlock),
            warp_size=int(props.warpSize),
        )

    def load(
        self,
        hsaco: bytes,
        name: str,
        *,
        shared_bytes: int = 0,
        signature: Sequence[str] | None = None,
        param_names: Sequence[str] | None = None,
    ) -> LoadedKernel:
        """Load an hsaco and get kernel `name` from it; `shared_bytes` of dynamic LDS a launch."""
        props = self.properties
        if shared_bytes > props.max_shared_per_block:
            raise HipLimitError(
                f"kernel '{name}' needs {shared_bytes} bytes of LDS; {props.name} allows at most "
                f"{props.max_shared_per_block} a work-group. Use smaller blocks (BLOCK sizes)."
            )
        module = self.call("hipModuleLoadData", bytes(hsaco), kernel=name)
        function = self.call("hipModuleGetFunction", module, name.encode(), kernel=name)
        packer = Packer(signature, param_names) if signature is not None else None
        return LoadedKernel(name, module, function, shared_bytes, packer)

    def launch(
        self, kernel: LoadedKernel, grid: Any, num_warps: int, threads_per_warp: int,
        args: Sequence[Any], stream: Any = None,
    ) -> None:  # fmt: skip
        """Launch `kernel` on `grid` (1-3 dims) with work-groups of `num_warps` wavefronts;
        `args` are raw values (device addresses for pointers). An empty grid launches nothing."""
        threads = num_warps * threads_per_warp
        dims = (grid,) if isinstance(grid, int) else tuple(int(d) for d in grid)
        if not 1 <= len(dims) <= 3 or min(dims) < 0:
            raise GridValueError(
                f"grid of kernel '{kernel.name}' must be 1 to 3 sizes >= 0: {grid!r}"
            )
        x, y, z = dims + (1,) * (3 - len(dims))
        for axis, size, limit in zip("xyz", (x, y, z), self.properties.max_grid, strict=True):
            if size > limit:
                raise HipLimitError(
                    f"grid of kernel '{kernel.name}' is {size} programs along {axis}; "
                    f"{self.properties.name} launches at most {limit} along {axis}"
                )
        if threads > self.properties.max_threads_per_block:
            raise HipLimitError(
                f"kernel '{kernel.name}' needs {threads} work-items a work-group; "
                f"{self.properties.name} allows {self.properties.max_threads_per_block}"
            )
        if not (x and y and z):
            return
        if kernel.packer is None:
            raise HipError(f"kernel '{kernel.name}' was loaded without a signature")
        handle = stream_handle(stream) or None
        with kernel.packer.lock:  # the parameter buffer is the kernel's: one launch at a time
            params = kernel.packer.pack(args)
            self.call(  # on this device (`call`), where the process has several
                "hipModuleLaunchKernel", kernel.function, x, y, z, threads, 1, 1,
                kernel.shared_bytes, handle, params, None, kernel=kernel.name,
            )  # fmt: skip

    def synchronize(self, stream: Any = None) -> None:
        self.call("hipStreamSynchronize", stream_handle(stream) or None)

    def timer(self) -> Any:
        """HIP events for `tilec.testing.do_bench` (`tilec.interop.timing`)."""
        from tilec_amd.timing import HipTimer  # deferred: only benchmarks time

        return HipTimer(self)

    def is_capturing(self, stream: Any = None) -> bool:
        """Whether `stream` is capturing a HIP graph (`hipStreamIsCapturing`), or is the null
        stream while another stream captures one (hipErrorStreamCaptureImplicit: its work would
        join that capture)."""
        return stream_capturing(
            lambda: self.call("hipStreamIsCapturing", stream_handle(stream) or None),
            HipError,
            "hipErrorStreamCaptureImplicit",
            self.hip.hipStreamCaptureStatus.hipStreamCaptureStatusNone,
        )

    def mem_alloc(self, nbytes: int) -> int:
        return int(self.call("hipMalloc", max(int(nbytes), 1)))

    def mem_free(self, address: int) -> None:
        self.call("hipFree", address)

    def copy_to_device(self, address: int, host: int, nbytes: int, stream: Any = None) -> None:
        if nbytes:
            self.call("hipMemcpyHtoDAsync", address, host, nbytes, stream_handle(stream) or None)

    def copy_to_host(self, host: int, address: int, nbytes: int, stream: Any = None) -> None:
        """Copy device memory to the host and wait for it."""
        if nbytes:
            self.call("hipMemcpyDtoHAsync", host, address, nbytes, stream_handle(stream) or None)
        self.synchronize(stream)


def _text(value: Any) -> str:
    if isinstance(value, (bytes, bytearray)):
        return bytes(value).split(b"\0", 1)[0].decode(errors="replace")
    return str(value)


_drivers: DeviceRuntimes[HipDriver] = DeviceRuntimes(
    HipDriver, lambda first, ordinal: HipDriver(first.hip, ordinal)
)
MULTI_DEVICE = _drivers.multi_device
"""Whether the process has HipDrivers of several devices (each call then sets its device)."""
get_driver = _drivers.get
"""The HipDriver of device `ordinal`, created on first use (HipError where ROCm is missing or
there is no such device); None: the process's first one (the current HIP device)."""
reset_driver = _drivers.reset
"""Replace the process's HipDrivers by a driver (None: made on the next `get_driver`) and
drivers of other devices (tests install fakes with this)."""
