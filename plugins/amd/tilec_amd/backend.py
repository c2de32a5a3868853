"""The AMD backend: tir -> gir -> LLVM IR -> AMDGCN -> hsaco, launched through hip-python.

It differs from the NVIDIA backend in data (targets, lanes a wavefront, LDS size, the matrix
instructions of each arch: `tilec_amd.matrix_cores`) and in its `TargetInfo` and code generation;
the layouts and the LLVM lowering are the core's. `hip` is
imported inside the driver's methods only (`tilec_amd.launcher.AmdDriver`, through
`tilec_amd.driver`), so the backend loads, lists and compiles ahead of time on machines without
ROCm.
"""

from __future__ import annotations

from typing import Any

import attrs

from tilec.backend import GpuBackend, GpuOptions, int_in_range, one_of
from tilec.settings import Setting
from tilec_amd import __version__
from tilec_amd.arch import ARCHS

LLD = Setting(
    "TILEC_LLD",
    "ROCm's ld.lld, else `ld.lld`, `ld.lld-22` ... `ld.lld-17` on PATH",
    "The ld.lld (17 or newer) the amd backend links code objects with.",
)
"""Read when ld.lld is first looked for (`tilec_amd.codegen`)."""


@attrs.frozen
class AmdOptions(GpuOptions):
    """`GpuOptions` (`target`: `gfxNNN`, None for the current device's) and AMD's."""

    num_stages: int = attrs.field(default=2, validator=int_in_range(1, 8))
    waves_per_eu: int = attrs.field(default=0, validator=int_in_range(0, 20))
    """Occupancy hint (`amdgpu-waves-per-eu`); 0 lets the compiler choose."""
    code_object_version: int = attrs.field(default=5, validator=one_of((4, 5, 6)))
    """The HSA code object version of the hsaco (`amdhsa_code_object_version`)."""


class AmdBackend(GpuBackend):
    """Compiles to AMDGCN with LLVM's AMDGPU target and links the hsaco with `ld.lld`."""

    name = "amd"
    version = __version__
    options_class = AmdOptions
    binary_stage = "hsaco"
    launch_stages = (*GpuBackend.launch_stages, "hsaco")
    check_targets = ("gfx942", "gfx1100")
    priority = 20
    triton_name = "hip"
    vendor_options = {
        "matrix_instr_nonkdim": (
            0,
            "backend 'amd' chooses the MFMA/WMMA instruction shape itself (Triton's 0)",
        ),
        "kpack": (1, "backend 'amd' packs no extra K elements into its MFMA operands"),
        "schedule_hint": ("none", "backend 'amd' has no instruction scheduling variants"),
    }
    archs = ARCHS
    driver_class = "tilec_amd.launcher:AmdDriver"
    settings = (LLD,)

    def mma_instructions(self, target: str) -> tuple[Any, ...]:
        # deferred: the table builds on the lowering (llvmlite), which only a compile needs
        from tilec_amd.matrix_cores import mma_instructions

        return mma_instructions(target)

    def async_copies(self, target: str) -> bool:
        """No AMD target here has cp.async: pipelined copies go through registers."""
        return False

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

    def target_info(self, target: str, options: Any) -> Any:
        from tilec_amd.target_info import AmdTargetInfo

        return AmdTargetInfo(
            target,
            self.lanes(target),
            waves_per_eu=options.waves_per_eu,
            code_object_version=options.code_object_version,
        )
