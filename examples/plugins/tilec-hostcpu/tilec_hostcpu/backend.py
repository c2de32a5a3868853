"""The host CPU vendor's backend: tir -> gir -> llir (the core's) -> x86-64 assembly and object.

What differs from other GPU backends is data (`ARCHS`: the lanes a warp and the shared memory of
each target), the `TargetInfo` (`tilec_hostcpu.target_info`), the code generation
(`tilec_hostcpu.codegen`) and the driver (`tilec_hostcpu.driver`). The module imports neither
llvmlite nor the driver: `tilec backends` loads every plugin, and loading must stay cheap.
"""

from __future__ import annotations

import platform
from typing import Any

import attrs

from tilec.arch import ArchTable, GpuArch
from tilec.backend import GpuBackend, GpuOptions, one_of
from tilec_hostcpu import __version__

ARCHS = ArchTable(
    "host CPU",
    "hostcpu",
    [GpuArch("hostcpu-w16", 16, 64 * 1024), GpuArch("hostcpu-w8", 8, 32 * 1024)],
    example="hostcpu-w16",
)
"""The made-up vendor's two "GPUs": 16-lane warps with 64 KiB of shared memory a block, and
8-lane warps with 32 KiB. Both run on the host CPU; the lane count shapes the layouts."""


@attrs.frozen
class HostCpuOptions(GpuOptions):
    """`GpuOptions` (`target`: `hostcpu-w16` or `hostcpu-w8`, None for the device's,
    `hostcpu-w16`) with LLVM's level 1 by default, which compiles faster. `opt_level` is the
    level of LLVM's IR pipeline; code generation runs at level 0 (`tilec_hostcpu.codegen`). On
    the fused-attention tutorial's kernels the IR pipeline took 30% less time at 1 than at 2 (7
    instead of 10 s of CPU in one case) and the launches were no slower."""

    opt_level: int = attrs.field(default=1, validator=one_of((0, 1, 2, 3)))


class HostCpuBackend(GpuBackend):
    """Compiles through the core's layouts and lowering; runs in this process (`--backend
    hostcpu`, `TILEC_BACKEND=hostcpu`)."""

    name = "hostcpu"
    version = __version__
    options_class = HostCpuOptions
    archs = ARCHS
    binary_stage = "obj"
    launch_stages = (*GpuBackend.launch_stages, "obj")
    check_targets = ("hostcpu-w16", "hostcpu-w8")
    priority = -10
    """Below interp (0) and the GPU backends (20, 30): an example is never chosen automatically
    (a tie with interp would go by name, and "hostcpu" sorts first)."""
    driver_class = "tilec_hostcpu.driver:HostCpuDriver"

    def async_copies(self, target: str) -> bool:
        """No asynchronous global-to-shared copies: pipelined loads go through registers."""
        return False

    def target_info(self, target: str, options: Any) -> Any:
        from tilec_hostcpu.target_info import HostCpuTargetInfo  # deferred: imports llvmlite

        return HostCpuTargetInfo(target, self.lanes(target))

    def device_target(self) -> tuple[str, str | None]:
        """The "device" is this CPU; kernels are compiled for 16-lane warps unless the `target`
        option says otherwise."""
        return platform.machine(), "hostcpu-w16"

    def add_stages(self, stages: dict[str, Any], options: HostCpuOptions) -> None:
        """`asm` (the x86-64 assembly, for reading) and `obj` (the ELF object the driver
        loads). One LLVM run makes both: the `asm` stage keeps the object in `objects` and the
        `obj` stage returns it (a stage's output is the next stage's input, so a second
        output travels beside it)."""
        objects: dict[str, bytes] = {}
        stages["asm"] = lambda llvm_ir, metadata: self._make_asm(
            llvm_ir, metadata, options, objects
        )
        stages["obj"] = lambda asm, metadata: objects.pop(metadata["kernel"])

    def _make_asm(
        self, llvm_ir: str, metadata: dict[str, Any], options: HostCpuOptions, objects: dict
    ) -> str:
        from tilec_hostcpu.codegen import compile_llir  # deferred: imports llvmlite

        kernel = metadata["kernel"]
        assembly, objects[kernel] = compile_llir(llvm_ir, kernel, options.opt_level)
        return assembly
