"""The NVIDIA backend: tir -> gir -> LLVM IR -> PTX -> cubin, launched through the CUDA driver.

This is the compiler; the driver is `tilec_nvidia.launcher.NvidiaDriver`. The CUDA driver is
reached inside the driver's methods only (`tilec_nvidia.driver`: libcuda.so.1 through ctypes for
a launch's calls, `tilec_nvidia.libcuda`, cuda.bindings for the others), so that the backend
loads, lists and compiles ahead of time on machines without a GPU.
"""

from __future__ import annotations

from typing import Any

import attrs

from tilec.backend import GpuBackend, GpuOptions, int_in_range, is_bool
from tilec.settings import Setting
from tilec_nvidia import __version__
from tilec_nvidia.arch import ARCHS
from tilec_nvidia.libcuda import ENABLED as LIBCUDA

PTXAS = Setting(
    "TILEC_PTXAS",
    "`ptxas` on PATH, else the newest `/usr/local/cuda*/bin/ptxas`",
    "The ptxas the nvidia backend assembles cubins with (without one, the driver JIT-compiles "
    "the PTX at load time).",
)
"""Read when ptxas is first looked for (`tilec_nvidia.codegen.find_ptxas`)."""

TMA = Setting(
    "TILEC_NVIDIA_TMA",
    "on",
    "On sm_90 and later, host-side TensorDescriptors are read with TMA (`cp.async.bulk.tensor`; "
    "docs/tma.md): a load outside a pipelined loop is one copy and wait, a load that "
    "`num_stages` pipelines fills the loop's ring through TMA (an mbarrier a stage); a store "
    "goes through TMA where TMA writes exactly the masked elements, else it is the masked "
    "store (`tilec_nvidia.tma_lowering.STORES`). `0` reads and writes every descriptor with "
    "masked loads and stores; read at each compile (in the cache key).",
)
"""On by default since the GPU tests passed with it on, on the H200 (2026-11-27, sixth session:
`TILEC_NVIDIA_TMA=1 pytest -m gpu tests/nvidia tests/compat`, 409 passed, the pipelined form's
matmuls among them); `0` is the way back to the masked loads."""


WARP_SPECIALIZE = Setting(
    "TILEC_NVIDIA_WARP_SPECIALIZE",
    "on",
    "On sm_90a, a loop marked `tl.range(..., warp_specialize=True)` whose ring TMA fills gets a "
    "producer warpgroup issuing the copies while the kernel's warps run the wgmmas (docs/tma.md "
    "step 5); elsewhere the hint has no effect, as in Triton. `0` leaves every loop to the "
    "kernel's warps (the hint then has no effect); read at each compile (in the cache key).",
)
"""On by default since the GPU tests passed with it on, on the H200 (2026-11-27, seventh session,
tree 75ab4c6: `TILEC_NVIDIA_WARP_SPECIALIZE=1 pytest -m gpu tests/nvidia tests/compat`, 524 passed,
the one failure a test's K = 16 in 64-column tensors, fixed in a1eff37 and 55b9c75; tree d9d3368:
`TILEC_NVIDIA_WARP_SPECIALIZE=1 TILEC_TEST_BACKEND=nvidia pytest tests/compat -k "attention or
persistent or warp or descriptor"`, 63 passed; benchmarks/persistent_vs_triton.py with it on:
host-desc-ws 1.204/1.205 and device-desc-persistent-ws 1.018/0.948 of Triton at 4096^3/8192^3).
`tilec.layout.warp_specialize` applies where `RingCopies.producer_warps` is positive: 4 with the
setting on, 0 with `0`."""


def warp_specialize_enabled() -> bool:
    """`TILEC_NVIDIA_WARP_SPECIALIZE` as a flag that is on unless set to `0`, `false`, `no`
    (unset: on)."""
    return WARP_SPECIALIZE.get() is None or WARP_SPECIALIZE.enabled()


def tma_enabled() -> bool:
    """`TILEC_NVIDIA_TMA` as a flag that is on unless set to `0`, `false`, `no` (unset: on)."""
    return TMA.get() is None or TMA.enabled()


TENSOR_MAP_LOADS = "tensor_map_loads"
"""`tilec.frontend.descriptors.TENSOR_MAP_LOADS` (the core's name, not imported: a compile's)."""


@attrs.frozen
class NvidiaOptions(GpuOptions):
    """`GpuOptions` (`target`: `sm_XY`, None for the current device's) and NVIDIA's."""

    maxnreg: int | None = attrs.field(
        default=None, validator=attrs.validators.optional(int_in_range(1, 255))
    )
    """Triton's register limit per thread: `.maxnreg` in the PTX (the `nvvm.annotations` entry
    `maxnreg`); None lets ptxas choose."""
    enable_reflect_ftz: bool = attrs.field(default=True, validator=is_bool)
    """Triton's libdevice flush-to-zero (`__nvvm_reflect("__CUDA_FTZ")`): `tl.exp2` on f32 is
    `ex2.approx.ftz.f32` (a subnormal input or result is 0, one MUFU.EX2), without it
    `ex2.approx.f32` (subnormals kept, as the interpreter computes them)."""


class NvidiaBackend(GpuBackend):
    """Compiles to PTX with LLVM's NVPTX target and to a cubin with `ptxas` where it is installed
    (else the CUDA driver JIT-compiles the PTX when the kernel is loaded)."""

    name = "nvidia"
    version = __version__
    options_class = NvidiaOptions
    binary_stage = "cubin"
    # a cubin may be absent (no usable ptxas): the driver JIT-compiles the PTX
    launch_stages = (*GpuBackend.launch_stages, "ptx")
    check_targets = ("sm_80", "sm_90a")
    priority = 30
    triton_name = "cuda"
    vendor_options = {
        "launch_pdl": (False, "tilec has no programmatic dependent launch"),
    }
    archs = ARCHS
    driver_class = "tilec_nvidia.launcher:NvidiaDriver"
    settings = (PTXAS, LIBCUDA, TMA, WARP_SPECIALIZE)

    def tool_path(self, name: str) -> str | None:
        if name != "ptxas":
            return None
        from tilec_nvidia.codegen import find_ptxas  # deferred: codegen imports llvmlite

        return find_ptxas()

    def mma_instructions(self, target: str) -> tuple[Any, ...]:
        # deferred: the checks import the lowering (llvmlite), which only a compile needs
        from tilec_nvidia.capabilities import mma_instructions

        return mma_instructions(target)

    def bulk_copies(self, target: str) -> Any:
        """TMA brings pipelined descriptor loads into their rings where the arch has it
        (`tilec_nvidia.tma_ring`); descriptor loads exist only where `TILEC_NVIDIA_TMA` is on."""
        if "tma" not in ARCHS.check(target).features:
            return None
        from tilec_nvidia.tma_ring import RingCopies  # deferred: imports the lowering (llvmlite)

        return RingCopies(target, producer_warps=4 if warp_specialize_enabled() else 0)

    def frontend_features(self, options: Any) -> frozenset[str]:
        """`tensor_map_loads` where `TILEC_NVIDIA_TMA` is on and the target has TMA."""
        if not tma_enabled() or "tma" not in ARCHS.check(self.resolve_target(options)).features:
            return frozenset()
        return frozenset({TENSOR_MAP_LOADS})

    def hash(self, options: Any = None) -> str:
        """As `GpuBackend.hash`, with `TILEC_NVIDIA_TMA` and `TILEC_NVIDIA_WARP_SPECIALIZE`
        where they are on (they change the code)."""
        digest = super().hash(options)
        digest = f"{digest}|tma" if tma_enabled() else digest
        return f"{digest}|ws" if warp_specialize_enabled() else digest

    def target_info(self, target: str, options: Any) -> Any:
        from tilec_nvidia.target_info import NvidiaTargetInfo

        return NvidiaTargetInfo(
            target,
            self.lanes(target),
            maxnreg=options.maxnreg,
            reflect_ftz=options.enable_reflect_ftz,
        )

    def add_stages(self, stages: dict[str, Any], options: NvidiaOptions) -> None:
        from tilec_nvidia.codegen import look_for_ptxas_early

        look_for_ptxas_early()  # the cubin stage waits for it; without a ptxas it gives None
        one_wave: dict[str, bytes | None] = {}  # the cubin stage's second cubin, for the next
        stages["ptx"] = lambda src, metadata: self._make_ptx(src, metadata, options)
        stages["cubin"] = lambda src, metadata: self._make_cubin(src, metadata, one_wave)
        stages["cubin_one_wave"] = lambda src, metadata: one_wave.pop("cubin", None)

    def _make_ptx(self, llvm_ir: str, metadata: dict[str, Any], options: NvidiaOptions) -> str:
        from tilec_nvidia.codegen import keep_widened_unless_it_spills, llir_to_ptx

        target = metadata["target"]
        plain = llir_to_ptx(llvm_ir, target, opt_level=options.opt_level, widen=False)
        return keep_widened_unless_it_spills(plain, target)

    def _make_cubin(
        self, ptx: str, metadata: dict[str, Any], one_wave: dict[str, bytes | None]
    ) -> bytes | None:
        """The cubin, or None (no `cubin` stage: the driver JIT-compiles the PTX at load) where
        there is no ptxas or it cannot assemble for the arch (CUDA 13 dropped sm_70). Where
        `tilec_nvidia.one_wave` applies, its second cubin goes into `one_wave` for the
        `cubin_one_wave` stage that follows (None: no such stage)."""
        from tilec_nvidia.codegen import PtxasInfo, ptx_to_cubin
        from tilec_nvidia.one_wave import one_wave_cubin, start

        start(ptx, metadata["target"])  # the second cubin's ptxas, beside this one's
        info: dict[str, PtxasInfo] = {}
        cubin = ptx_to_cubin(ptx, metadata["target"], info=info)
        if cubin is not None:
            one_wave["cubin"] = one_wave_cubin(ptx, metadata["target"], info)
        return cubin
