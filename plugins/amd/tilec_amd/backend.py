"""The AMD backend. `hip` (hip-python) is imported inside the driver-side methods only."""

from __future__ import annotations

import attrs

from tilec.backend import Availability, Backend, BackendOptions, int_in_range, one_of
from tilec_amd import __version__

TARGETS = ("gfx90a", "gfx942", "gfx950", "gfx1100", "gfx1201")
"""CDNA2, CDNA3, CDNA4 (wave64) and RDNA3, RDNA4 (wave32) architectures."""

INSTALL_HINT = "hip-python is not installed: pip install hip-python"


@attrs.frozen
class AmdOptions(BackendOptions):
    num_stages: int = attrs.field(default=2, validator=int_in_range(1, 8))
    target: str | None = attrs.field(default=None, validator=one_of(TARGETS))
    """`gfxNNN`; None means the architecture of the current device."""
    waves_per_eu: int = attrs.field(default=0, validator=int_in_range(0, 20))
    """Occupancy hint (`amdgpu-waves-per-eu`); 0 lets the compiler choose."""


class AmdBackend(Backend):
    name = "amd"
    version = __version__
    options_class = AmdOptions

    def is_available(self) -> Availability:
        try:
            from hip import hip
        except ImportError:
            return Availability(False, INSTALL_HINT)
        try:
            error, count = hip.hipGetDeviceCount()
        except RuntimeError as error:
            if "libamdhip64" in str(error):
                return Availability(False, "no ROCm runtime (libamdhip64.so not found)")
            return Availability(False, f"no ROCm runtime ({error})")
        except Exception as error:  # report anything a broken install raises
            return Availability(False, f"no ROCm runtime ({type(error).__name__}: {error})")
        if error != hip.hipError_t.hipSuccess:
            return Availability(False, f"no AMD GPU ({getattr(error, 'name', error)})")
        if count == 0:
            return Availability(False, "no AMD GPU found")
        return Availability(True, f"{count} AMD GPU(s)")
