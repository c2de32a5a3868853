"""`AmdDriver`: the AMD backend's `tilec.driver.Driver`, on `HipDriver`'s primitives.

Arrays and the launch path are the core's (`tilec.interop.GpuDriver`); what is AMD's own is
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
        """The process's HipDriver: the AMD backend launches on the current HIP device only;
        asked for another device (arrays there, `tilec.set_device`), it says so."""
        driver = hip_driver.get_driver()
        if ordinal is not None and ordinal != driver.ordinal:
            raise hip_driver.HipError(
                f"the amd backend launches on rocm:{driver.ordinal} (the current HIP device) "
                f"only; this launch asks for rocm:{ordinal}. Move the arrays there, or make "
                f"rocm:{ordinal} current (hipSetDevice / HIP_VISIBLE_DEVICES) before tilec "
                "first launches."
            )
        return driver

    def load_binary(self, runtime: hip_driver.HipDriver, compiled: Any) -> LoadedKernel:
        md = compiled.metadata
        return runtime.load(
            compiled.asm["hsaco"],
            md["kernel"],
            shared_bytes=md["shared_bytes"],
            signature=md["params"],
            param_names=compiled.runtime_params,
        )
