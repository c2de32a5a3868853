"""The NVIDIA backend. `cuda.bindings` is imported inside the driver-side methods only."""

from __future__ import annotations

import attrs

from tilec.backend import Availability, Backend, BackendOptions, one_of
from tilec_nvidia import __version__

TARGETS = (
    "sm_70", "sm_75", "sm_80", "sm_86", "sm_87", "sm_89",
    "sm_90", "sm_90a", "sm_100", "sm_100a", "sm_120",
)  # fmt: skip
"""Compute capabilities we generate PTX for."""

INSTALL_HINT = "cuda-python (cuda-bindings) is not installed: pip install cuda-bindings"


@attrs.frozen
class NvidiaOptions(BackendOptions):
    target: str | None = attrs.field(default=None, validator=one_of(TARGETS))
    """`sm_XY`; None means the compute capability of the current device."""


class NvidiaBackend(Backend):
    name = "nvidia"
    version = __version__
    options_class = NvidiaOptions

    def is_available(self) -> Availability:
        try:
            from cuda.bindings import driver
        except ImportError:
            return Availability(False, INSTALL_HINT)
        try:
            (error,) = driver.cuInit(0)
            if error != driver.CUresult.CUDA_SUCCESS:
                return _no_device(f"cuInit: {_error_name(error)}")
            error, count = driver.cuDeviceGetCount()
            if error != driver.CUresult.CUDA_SUCCESS:
                return _no_device(f"cuDeviceGetCount: {_error_name(error)}")
        except Exception as error:  # RuntimeError when libcuda.so is missing; report anything
            return _no_device(f"{type(error).__name__}: {error}")
        if count == 0:
            return _no_device("no CUDA device found")
        return Availability(True, f"{count} CUDA device(s)")


def _no_device(detail: str) -> Availability:
    return Availability(False, f"no NVIDIA driver/device ({detail})")


def _error_name(error: object) -> str:
    return getattr(error, "name", None) or str(error)
