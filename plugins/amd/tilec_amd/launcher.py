"""`AmdDriver`: the AMD backend's `tilec.driver.Driver`, on `HipDriver`'s primitives.

Arrays and the launch path are the core's (`tilec.interop.gpu_driver.GpuDriver`); what is AMD's own is
loading the hsaco.
"""

from __future__ import annotations

from typing import Any

from tilec.driver import Availability
from tilec.interop.device import LoadedKernel
from tilec.interop.gpu_driver import GpuDriver
from tilec_amd import driver as hip_driver


class AmdDriver(GpuDriver):
    def is_available(self) -> Availability:
        return hip_driver.runtime_availability()

    def runtime(self, ordinal: int | None = None) -> hip_driver.HipDriver:
        """The HipDriver of device `ordinal` (that of the launch's arrays, `tilec.set_device`,
        torch's current device); None: the current HIP device's."""
        return hip_driver.get_driver(ordinal)

    def load_binary(self, runtime: hip_driver.HipDriver, compiled: Any) -> LoadedKernel:
        md = compiled.metadata
        return runtime.load(
            compiled.asm["hsaco"],
            md["kernel"],
            shared_bytes=md["shared_bytes"],
            signature=md["params"],
            param_names=compiled.runtime_params,
        )
