"""`GpuDriver`: the `tilec.driver.Driver` of a GPU backend, on its vendor's runtime primitives."""

from __future__ import annotations

import abc
from collections.abc import Sequence
from typing import Any

from tilec.driver import Driver
from tilec.interop import copies, device_array
from tilec.interop.device import DeviceRuntime, LoadedKernel
from tilec.interop.streams import launch_stream


class GpuDriver(Driver):
    """Loads a compiled kernel's binary once, launches it with NumPy arrays copied in and out
    and device arrays passed by address, and moves arrays. A vendor supplies `runtime()` (its
    `DeviceRuntime`), `load_binary` and `is_available`."""

    @abc.abstractmethod
    def runtime(self) -> DeviceRuntime:
        """The process's vendor runtime (made on first use)."""

    @abc.abstractmethod
    def load_binary(self, runtime: Any, compiled: Any) -> LoadedKernel:
        """Load the compiled kernel's binary (cubin, PTX, hsaco) with `runtime`."""

    def load(self, compiled: Any) -> LoadedKernel:
        """The compiled kernel loaded once; kept in `compiled.runtime`."""
        loaded = compiled.runtime.get("loaded")
        if loaded is not None:
            return loaded
        loaded = self.load_binary(self.runtime(), compiled)
        compiled.metadata.update(self.resource_usage(loaded))
        compiled.runtime["loaded"] = loaded
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
        loaded = compiled.runtime.get("loaded") or self.load(compiled)
        md = compiled.metadata
        runtime = self.runtime()
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
        return device_array.to_device(self.runtime(), array)

    def to_host(self, value: Any) -> Any:
        """A NumPy copy of a device array argument (for `check=True`)."""
        return device_array.to_host(self.runtime(), value)
