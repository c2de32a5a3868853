"""The AMD backend: tir -> gir -> LLVM IR -> AMDGCN -> hsaco, launched through hip-python.

It differs from the NVIDIA backend in data (targets, lanes a wavefront, LDS size) and in its
`TargetInfo` and code generation; the layouts and the LLVM lowering are the core's. `hip` is
imported inside the driver-side methods only (through `tilec_amd.driver`), so the backend loads,
lists and compiles ahead of time on machines without ROCm.
"""

from __future__ import annotations

from typing import Any

import attrs

from tilec.backend import Availability, BackendOptions, GpuBackend, int_in_range, one_of
from tilec_amd import __version__

TARGETS = ("gfx90a", "gfx942", "gfx950", "gfx1100", "gfx1201")
"""CDNA2, CDNA3, CDNA4 (wave64) and RDNA3, RDNA4 (wave32) architectures."""

LANES = {"gfx90a": 64, "gfx942": 64, "gfx950": 64, "gfx1100": 32, "gfx1201": 32}
"""Lanes a wavefront: 64 on CDNA (gfx9), 32 on RDNA (gfx10+, compiled wave32)."""

LDS_BYTES = {
    "gfx90a": 64 * 1024, "gfx942": 64 * 1024, "gfx950": 160 * 1024,
    "gfx1100": 64 * 1024, "gfx1201": 64 * 1024,
}  # fmt: skip
"""The LDS one work-group may use (LLVM's addressable local memory size per arch)."""

INSTALL_HINT = "hip-python is not installed: pip install hip-python"


@attrs.frozen
class AmdOptions(BackendOptions):
    num_stages: int = attrs.field(default=2, validator=int_in_range(1, 8))
    target: str | None = attrs.field(default=None, validator=one_of(TARGETS))
    """`gfxNNN`; None means the architecture of the current device."""
    waves_per_eu: int = attrs.field(default=0, validator=int_in_range(0, 20))
    """Occupancy hint (`amdgpu-waves-per-eu`); 0 lets the compiler choose."""
    code_object_version: int = attrs.field(default=5, validator=one_of((4, 5, 6)))
    """The HSA code object version of the hsaco (`amdhsa_code_object_version`)."""
    opt_level: int = attrs.field(default=3, validator=one_of((0, 1, 2, 3)))
    """LLVM's optimization level for the kernel."""


class AmdBackend(GpuBackend):
    targets = TARGETS
    example_target = "gfx942"
    shared_memory_name = "LDS (shared memory)"
    name = "amd"
    version = __version__
    options_class = AmdOptions

    # Compiler side ---------------------------------------------------------------------------

    def lanes(self, target: str) -> int:
        return LANES[target]

    def shared_memory_bytes(self, target: str) -> int:
        return LDS_BYTES[target]

    def target_info(self, target: str, options: Any) -> Any:
        from tilec_amd.target_info import AmdTargetInfo

        return AmdTargetInfo(
            target,
            LANES[target],
            waves_per_eu=options.waves_per_eu,
            code_object_version=options.code_object_version,
        )

    def device_target(self) -> tuple[str, str | None]:
        from tilec_amd.driver import get_driver

        properties = get_driver().properties
        return properties.arch, properties.target

    def add_stages(self, stages: dict[str, Any], options: AmdOptions) -> None:
        objects: dict[str, bytes] = {}  # the amdgcn stage's object, for the hsaco stage
        stages["amdgcn"] = lambda src, metadata: self._make_amdgcn(src, metadata, options, objects)
        stages["hsaco"] = lambda src, metadata: self._make_hsaco(metadata, objects)

    def _make_amdgcn(
        self, llvm_ir: str, metadata: dict[str, Any], options: AmdOptions, objects: dict
    ) -> str:
        from tilec_amd.codegen import compile_llir

        assembly, objects["object"] = compile_llir(
            llvm_ir, metadata["target"], opt_level=options.opt_level
        )
        return assembly

    def _make_hsaco(self, metadata: dict[str, Any], objects: dict) -> bytes:
        from tilec_amd.codegen import link_hsaco

        return link_hsaco(objects.pop("object"), metadata["kernel"])

    # Driver side -----------------------------------------------------------------------------

    def is_available(self) -> Availability:
        from tilec_amd.driver import runtime_availability

        return runtime_availability()

    def load_compiled(self, compiled: Any) -> Any:
        """Load a compiled kernel's hsaco once; kept in `compiled.runtime`."""
        loaded = compiled.runtime.get("loaded")
        if loaded is not None:
            return loaded
        from tilec_amd.driver import get_driver

        md = compiled.metadata
        loaded = get_driver().load(
            compiled.asm["hsaco"],
            md["kernel"],
            shared_bytes=md["shared_bytes"],
            signature=md["params"],
            param_names=compiled.runtime_params,
        )
        compiled.runtime["loaded"] = loaded
        return loaded

    def run(self, compiled: Any, grid: tuple[int, ...], args: Any, options: Any) -> None:
        """Launch: NumPy arrays are copied in (and back where the kernel writes), device
        arrays (ROCm torch, CuPy, `tilec.to_device`) are passed as they are."""
        from tilec_amd.arrays import run_kernel

        loaded = compiled.runtime.get("loaded") or self.load_compiled(compiled)
        md = compiled.metadata
        run_kernel(
            loaded,
            grid,
            args,
            threads=md["num_warps"] * md["threads_per_warp"],
            written=md["written"],
        )

    def to_device(self, array: Any) -> Any:
        from tilec_amd.arrays import to_device

        return to_device(array)

    def to_host(self, value: Any) -> Any:
        """A NumPy copy of a device array argument (for `check=True`)."""
        from tilec_amd.arrays import to_host

        return to_host(value)
