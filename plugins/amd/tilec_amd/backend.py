"""The AMD backend: tir -> gir -> LLVM IR -> AMDGCN -> hsaco, launched through hip-python.

It differs from the NVIDIA backend in data (targets, lanes a wavefront, LDS size) and in its
`TargetInfo` and code generation; the layouts and the LLVM lowering are the core's. `hip` is
imported inside the driver-side methods only (through `tilec_amd.driver`), so the backend loads,
lists and compiles ahead of time on machines without ROCm.
"""

from __future__ import annotations

from typing import Any

import attrs

from tilec.backend import Availability, Backend, BackendOptions, int_in_range, one_of
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


class AmdBackend(Backend):
    name = "amd"
    version = __version__
    options_class = AmdOptions

    # Compiler side ---------------------------------------------------------------------------

    def layout_rules(self, target: str) -> Any:
        from tilec.layout import LayoutRules

        if target not in TARGETS:
            raise ValueError(f"unsupported AMD target {target!r}; choose one of {TARGETS}")
        return LayoutRules(
            threads_per_warp=LANES[target],
            max_vector_bytes=16,
            shared_memory_bytes=LDS_BYTES[target],
            default_num_warps=4,
        )

    def resolve_target(self, options: AmdOptions) -> str:
        """The arch to compile for: the `target` option, else the current device's."""
        if options.target is not None:
            return options.target
        availability = self.is_available()
        if not availability:
            raise RuntimeError(
                "the amd backend needs a target to compile without a device: pass "
                f"target='gfx942' (one of {', '.join(TARGETS)}); {availability.reason}"
            )
        from tilec_amd.driver import get_driver

        properties = get_driver().properties
        if properties.target is None:
            raise RuntimeError(
                f"the device's architecture {properties.arch} is not one tilec compiles for "
                f"({', '.join(TARGETS)})"
            )
        return properties.target

    def hash(self, options: AmdOptions | None = None) -> str:
        """As `Backend.hash`, plus the device's arch when the options leave the target open."""
        options = options or self.parse_options()
        if options.target is None and self.is_available():
            from tilec_amd.driver import get_driver

            options = attrs.evolve(options, target=get_driver().properties.target)
        return super().hash(options)

    def add_stages(self, stages: dict[str, Any], options: AmdOptions) -> None:
        objects: dict[str, bytes] = {}  # the amdgcn stage's object, for the hsaco stage
        stages["gir"] = lambda src, metadata: self._make_gir(src, metadata, options)
        stages["llir"] = lambda src, metadata: self._make_llir(src, metadata, options)
        stages["amdgcn"] = lambda src, metadata: self._make_amdgcn(src, metadata, options, objects)
        stages["hsaco"] = lambda src, metadata: self._make_hsaco(metadata, objects)

    def _make_gir(self, module: Any, metadata: dict[str, Any], options: AmdOptions) -> Any:
        from tilec.layout import GpuTarget, to_gir
        from tilec.passes.manager import other_backend_origins
        from tilec.plugin.manager import load_backends

        arch = metadata["target"] = self.resolve_target(options)
        context = metadata.get("_context")
        target = GpuTarget(self.layout_rules(arch), arch, options.num_warps)
        skip = other_backend_origins(self, load_backends())
        to_gir(module, target, getattr(context, "instrumentations", ()), skip_origins=skip)
        return module

    def _make_llir(self, module: Any, metadata: dict[str, Any], options: AmdOptions) -> str:
        from tilec.lowering import lower_module
        from tilec_amd.target_info import AmdTargetInfo

        arch = metadata["target"]
        target_info = AmdTargetInfo(
            arch,
            LANES[arch],
            waves_per_eu=options.waves_per_eu,
            code_object_version=options.code_object_version,
        )
        lowered = lower_module(module, target_info, metadata["name"])
        limit = LDS_BYTES[arch]
        if lowered.shared_bytes > limit:
            raise RuntimeError(
                f"{metadata['name']}: needs {lowered.shared_bytes} bytes of LDS (shared memory), "
                f"more than the {limit} an {arch} work-group may use (num_warps="
                f"{options.num_warps}); use smaller blocks"
            )
        metadata.update(
            num_warps=lowered.num_warps,
            threads_per_warp=lowered.threads_per_warp,
            shared_bytes=lowered.shared_bytes,
            params=list(lowered.params),
            written=list(lowered.written),
            kernel=lowered.name,
        )
        return lowered.llvm_ir

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
