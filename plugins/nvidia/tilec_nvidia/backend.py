"""The NVIDIA backend: tir -> gir -> LLVM IR -> PTX -> cubin, launched through cuda.bindings.

`cuda.bindings` is imported inside the driver-side methods only (through `tilec_nvidia.driver`),
so that the backend loads, lists and compiles ahead of time on machines without a GPU.
"""

from __future__ import annotations

from typing import Any

import attrs

from tilec.backend import Availability, BackendOptions, GpuBackend, one_of
from tilec_nvidia import __version__

TARGETS = (
    "sm_70", "sm_75", "sm_80", "sm_86", "sm_87", "sm_89",
    "sm_90", "sm_90a", "sm_100", "sm_100a", "sm_120",
)  # fmt: skip
"""Compute capabilities we generate PTX for."""

SHARED_MEMORY_BYTES = {
    "sm_70": 96 * 1024, "sm_75": 64 * 1024, "sm_80": 163 * 1024, "sm_86": 99 * 1024,
    "sm_87": 163 * 1024, "sm_89": 99 * 1024, "sm_90": 227 * 1024, "sm_90a": 227 * 1024,
    "sm_100": 227 * 1024, "sm_100a": 227 * 1024, "sm_120": 99 * 1024,
}  # fmt: skip
"""The shared memory one block may opt in to, per architecture (CUDA programming guide)."""

INSTALL_HINT = "cuda-python (cuda-bindings) is not installed: pip install cuda-bindings"


@attrs.frozen
class NvidiaOptions(BackendOptions):
    target: str | None = attrs.field(default=None, validator=one_of(TARGETS))
    """`sm_XY`; None means the compute capability of the current device."""
    opt_level: int = attrs.field(default=3, validator=one_of((0, 1, 2, 3)))
    """LLVM's optimization level for the kernel."""


class NvidiaBackend(GpuBackend):
    targets = TARGETS
    example_target = "sm_90"
    name = "nvidia"
    version = __version__
    options_class = NvidiaOptions
    threads_per_warp = 32

    # Compiler side ---------------------------------------------------------------------------

    def lanes(self, target: str) -> int:
        return self.threads_per_warp

    def shared_memory_bytes(self, target: str) -> int:
        return SHARED_MEMORY_BYTES[target]

    def target_info(self, target: str, options: Any) -> Any:
        from tilec_nvidia.target_info import NvidiaTargetInfo

        return NvidiaTargetInfo(target, self.threads_per_warp)

    def device_target(self) -> tuple[str, str | None]:
        from tilec_nvidia.driver import get_driver

        properties = get_driver().properties
        return properties.arch, properties.target

    def add_stages(self, stages: dict[str, Any], options: NvidiaOptions) -> None:
        from tilec_nvidia.codegen import find_ptxas

        stages["ptx"] = lambda src, metadata: self._make_ptx(src, metadata, options)
        if find_ptxas() is not None:
            stages["cubin"] = lambda src, metadata: self._make_cubin(src, metadata)

    def _make_ptx(self, llvm_ir: str, metadata: dict[str, Any], options: NvidiaOptions) -> str:
        from tilec_nvidia.codegen import llir_to_ptx

        return llir_to_ptx(llvm_ir, metadata["target"], opt_level=options.opt_level)

    def _make_cubin(self, ptx: str, metadata: dict[str, Any]) -> bytes | None:
        """The cubin, or None (no `cubin` stage: the driver JIT-compiles the PTX at load) where
        this ptxas cannot assemble for the arch (CUDA 13 dropped sm_70)."""
        from tilec_nvidia.codegen import ptx_to_cubin

        return ptx_to_cubin(ptx, metadata["target"])

    # Driver side -----------------------------------------------------------------------------

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

    def load_compiled(self, compiled: Any) -> Any:
        """Load a compiled kernel's cubin (else its PTX) once; kept in `compiled.runtime`."""
        loaded = compiled.runtime.get("loaded")
        if loaded is not None:
            return loaded
        from tilec_nvidia.driver import get_driver

        md = compiled.metadata
        binary = compiled.asm.get("cubin")
        is_ptx = binary is None
        if is_ptx:
            binary = compiled.asm["ptx"]
        loaded = get_driver().load(
            binary,
            md["kernel"],
            is_ptx=is_ptx,
            shared_bytes=md["shared_bytes"],
            signature=md["params"],
            param_names=compiled.runtime_params,
            num_warps=md["num_warps"],
            threads_per_warp=md["threads_per_warp"],
        )
        compiled.runtime["loaded"] = loaded
        return loaded

    def run(self, compiled: Any, grid: tuple[int, ...], args: Any, options: Any) -> None:
        """Launch: NumPy arrays are copied in (and back where the kernel writes), device
        arrays (torch, CuPy, `tilec.to_device`) are passed as they are."""
        from tilec_nvidia.arrays import run_kernel

        loaded = compiled.runtime.get("loaded") or self.load_compiled(compiled)
        md = compiled.metadata
        run_kernel(
            loaded,
            grid,
            args,
            num_warps=md["num_warps"],
            threads_per_warp=md["threads_per_warp"],
            written=md["written"],
        )

    def make_runner(self, compiled: Any, sample_args: Any) -> Any:
        """A launch function `(grid, args)` for arguments like `sample_args` (the launcher keys
        runners by argument types, dtypes, devices and alignment). Without NumPy arrays (which
        are copied in and out) it packs the arguments and calls `cuLaunchKernel` directly."""
        from tilec_nvidia.arrays import device_array_getter

        getters = []
        for kind, value in zip(compiled.metadata["params"], sample_args, strict=True):
            if not kind.startswith("*"):
                getters.append(None)
                continue
            getter = device_array_getter(value)
            if getter is None:  # NumPy (copies) or anything unusual: the general path
                return lambda grid, args: self.run(compiled, grid, args, compiled.options)
            getters.append(getter)
        loaded = compiled.runtime.get("loaded") or self.load_compiled(compiled)
        from tilec_nvidia.driver import get_driver

        driver = get_driver()
        cu_launch = driver.cu.cuLaunchKernel
        stream = driver.stream(None)
        max_x, max_y, max_z = driver.properties.max_grid
        md = compiled.metadata
        threads = md["num_warps"] * md["threads_per_warp"]
        if threads > loaded.max_threads:
            driver.check_block(loaded, md["num_warps"], md["threads_per_warp"])
        namespace = {
            "cu_launch": cu_launch, "function": loaded.function, "shared": loaded.shared_bytes,
            "pack": loaded.packer.pack, "threads": threads, "stream": stream, "driver": driver,
            "loaded": loaded, "max_x": max_x, "max_y": max_y, "max_z": max_z, "md": md,
        }  # fmt: skip
        names = [f"a{i}" for i in range(len(getters))]
        values = []
        for i, getter in enumerate(getters):
            if getter is not None:
                namespace[f"get{i}"] = getter
            values.append(f"a{i}" if getter is None else f"get{i}(a{i})")
        source = _RUNNER.format(
            unpack=", ".join(names) + ("," if len(names) == 1 else "") or "()",
            values=", ".join(values) + ("," if len(values) == 1 else "") or "()",
        )
        exec(compile(source, f"<tilec launcher {compiled.name}>", "exec"), namespace)
        return namespace["run"]

    def to_device(self, array: Any) -> Any:
        from tilec_nvidia.arrays import to_device

        return to_device(array)

    def to_host(self, value: Any) -> Any:
        """A NumPy copy of a device array argument (for `check=True`)."""
        from tilec_nvidia.arrays import to_host

        return to_host(value)


_RUNNER = """
def run(grid, args):
    {unpack} = args
    values = ({values})
    n = len(grid)
    x = grid[0]
    y = grid[1] if n > 1 else 1
    z = grid[2] if n > 2 else 1
    if n > 3 or not (0 < x <= max_x and 0 < y <= max_y and 0 < z <= max_z):
        if n <= 3 and (x == 0 or y == 0 or z == 0):
            return
        driver.launch(loaded, grid, md["num_warps"], md["threads_per_warp"], values)
        return
    params = pack(values)
    result = cu_launch(function, x, y, z, threads, 1, 1, shared, stream, params, 0)
    if result[0]:
        driver._launch_error(loaded, result, (x, y, z), threads, stream, params)
"""
"""The launch function `make_runner` compiles per kernel and argument kinds: the arguments
unpacked by name and device pointers read with a getter per array, so that a launch costs little
more than `cuLaunchKernel` itself."""


def _no_device(detail: str) -> Availability:
    return Availability(False, f"no NVIDIA driver/device ({detail})")


def _error_name(error: object) -> str:
    return getattr(error, "name", None) or str(error)
