"""`GpuDriver`: the `tilec.driver.Driver` of a GPU backend, on its vendor's runtime primitives."""

from __future__ import annotations

import abc
from collections.abc import Sequence
from typing import Any, ClassVar

from tilec.driver import Driver
from tilec.interop import device_array
from tilec.interop.device import DeviceRuntime, LoadedKernel
from tilec.interop.placement import current_device, launch_device
from tilec.interop.streams import launch_stream


class GpuDriver(Driver):
    """Loads a compiled kernel's binary once per device, launches it with NumPy arrays copied in
    and out and device arrays passed by address, and moves arrays. A vendor supplies
    `runtime(ordinal)` (its `DeviceRuntime` of a device), `load_binary` and `is_available`.

    A launch runs on the device of its array arguments, else on `tilec.driver.current_device()`
    (`tilec.set_device`, torch's current device), each device with its own runtime (context)."""

    torch_device: ClassVar[str] = "cuda"
    """PyTorch's GPU device type, which ROCm builds of torch keep; a vendor whose tensors live
    on another torch device (`xpu`) overrides it."""

    @abc.abstractmethod
    def runtime(self, ordinal: int | None = None) -> DeviceRuntime:
        """The vendor runtime of device `ordinal` (made on first use); None: the process's
        first one (the current context's device), as target detection asks."""

    @abc.abstractmethod
    def load_binary(self, runtime: Any, compiled: Any) -> LoadedKernel:
        """Load the compiled kernel's binary (cubin, PTX, hsaco) with `runtime`."""

    def load(self, compiled: Any, runtime: Any = None) -> LoadedKernel:
        """The compiled kernel loaded once on `runtime`'s device (default: `runtime()`), kept in
        `compiled.runtime["loaded_on"][ordinal]`; `compiled.runtime["loaded"]` is the first."""
        runtime = runtime or self.runtime()
        ordinal = runtime.properties.ordinal
        loaded_on = compiled.runtime.setdefault("loaded_on", {})
        loaded = loaded_on.get(ordinal)
        if loaded is not None:
            return loaded
        loaded = self.load_binary(runtime, compiled)
        compiled.metadata.update(self.resource_usage(loaded))
        loaded_on[ordinal] = loaded
        compiled.runtime.setdefault("loaded", loaded)
        return loaded

    def resource_usage(self, loaded: LoadedKernel) -> dict[str, int]:
        """What the loaded kernel uses (`num_regs`, `n_spills`, `shared`: Triton's names), added
        to `compiled.metadata` at load; vendors that know more add it."""
        return {"shared": loaded.shared_bytes}

    def run(
        self, compiled: Any, grid: tuple[int, ...], args: Sequence[Any], stream: Any = None
    ) -> None:
        """Launch on `stream` (see `tilec.interop.streams.launch_stream`): NumPy arrays are
        copied in (and back where the kernel writes) on that stream, device arrays (torch,
        CuPy, `tilec.to_device`) are passed as they are."""
        # deferred: the NumPy copies (2-3 ms to import) wait for a launch on the general path;
        # a runner for device arrays (torch, `make_runner`) launches without them
        from tilec.interop import copies

        runtime = self.runtime(launch_device(args))
        loaded = self.load(compiled, runtime)
        md = compiled.metadata
        copies.run_kernel(
            runtime,
            loaded,
            grid,
            args,
            num_warps=md["num_warps"],
            threads_per_warp=md["threads_per_warp"],
            written=md["written"],
            stream=launch_stream(stream, args, runtime.properties.ordinal),
        )

    def to_device(self, array: Any) -> device_array.DeviceArray:
        """A copy of `array` on `current_device()`."""
        return device_array.to_device(self.runtime(current_device()), array)

    def to_host(self, value: Any) -> Any:
        """A NumPy copy of a device array argument (for `check=True`)."""
        return device_array.to_host(self.runtime(launch_device([value])), value)
