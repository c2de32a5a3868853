"""`tilec.runtime.driver.active`: Triton's `triton.runtime.driver.active`, for the backend a
launch would use now (`tilec.set_backend`, `TILEC_BACKEND`, else the first available).

It answers the questions Triton programs ask of it: `get_current_target()` (backend, arch, warp
size), `get_current_device()`/`set_current_device()`, `get_current_stream()`,
`get_active_torch_device()`, `get_device_interface()`, `utils.get_device_properties()`, and the
benchmarking helpers (`get_benchmarker()`, `get_empty_cache_for_benchmark()`, `clear_cache()`).
"""

from __future__ import annotations

from typing import Any

from tilec import driver as devices
from tilec.backend import GpuBackend
from tilec.errors import BackendUnavailableError
from tilec.language import target_info
from tilec.language.target_info import GPUTarget
from tilec.runtime import compiler


class _Utils:
    def __init__(self, owner: ActiveDriver):
        self._owner = owner

    def get_device_properties(self, device: int | None = None) -> dict[str, Any]:
        """Triton's property dictionary of GPU `device` (default: the current one)."""
        properties = self._owner._runtime(device).properties
        return {
            "name": properties.name,
            "max_shared_mem": getattr(
                properties, "max_shared_per_block_optin", properties.max_shared_per_block
            ),
            "multiprocessor_count": getattr(properties, "sm_count", None)
            or getattr(properties, "compute_units", None),
            "max_num_regs": getattr(properties, "registers_per_block", None),
            "warpSize": properties.warp_size,
            "max_threads_per_block": properties.max_threads_per_block,
        }


class ActiveDriver:
    """The driver of the backend selected now; each call looks the selection up again."""

    def __init__(self) -> None:
        self.utils = _Utils(self)

    def backend(self) -> Any:
        return compiler.get_backend()

    def _runtime(self, device: int | None) -> Any:
        backend = self.backend()
        runtime = getattr(backend.driver, "runtime", None)
        if runtime is None:
            gpus = [b.name for b in compiler.automatic_order() if isinstance(b, GpuBackend)]
            example = f"tilec.set_backend({gpus[0]!r})" if gpus else "none is installed"
            raise BackendUnavailableError(
                f"backend '{backend.name}' runs on the host and has no GPU device properties: "
                f"select a GPU backend ({example}) to ask for them"
            )
        return runtime(devices.current_device() if device is None else device)

    def get_current_device(self) -> int:
        return devices.current_device()

    def set_current_device(self, device: int) -> None:
        """`tilec.set_device(device)`: the GPU later launches run on."""
        devices.set_device(device)

    def get_current_stream(self, device: int | None = None) -> int:
        """The raw handle of the stream a launch on `device` (default: the current one) runs on
        when it passes no `stream=`: torch's current stream where torch is loaded, else the
        default stream (0). The interp backend runs each launch to completion on the host: 0."""
        if getattr(self.backend().driver, "runtime", None) is None:
            return 0
        from tilec.interop import streams  # deferred: GPU launches load interop, not the import

        getter = streams.torch_stream_getter()
        index = devices.current_device() if device is None else device
        return 0 if getter is None else int(getter(index))

    def get_device_interface(self) -> Any:
        """torch's module for the active backend's device (`Driver.torch_device`): `torch.cuda`
        on a GPU backend (ROCm's torch answers `torch.cuda` too), `torch.cpu` on interp."""
        import torch  # deferred: torch is optional and heavy

        return getattr(torch, self.backend().driver.torch_device)

    def get_benchmarker(self) -> Any:
        """`tilec.testing.do_bench`, what Triton's drivers return."""
        from tilec import testing  # deferred: the benchmarking helpers load on use

        return testing.do_bench

    def get_empty_cache_for_benchmark(self) -> Any:
        """A 256 MB torch buffer on the active device; `clear_cache(buffer)` writes it, which
        evicts the L2 cache between timed runs (Triton's)."""
        import torch  # deferred: torch is optional and heavy

        return torch.empty(
            256 * 1024 * 1024 // 4, dtype=torch.int, device=self.get_active_torch_device()
        )

    def clear_cache(self, cache: Any) -> None:
        cache.zero_()

    def get_current_target(self) -> GPUTarget:
        backend = self.backend()
        if getattr(backend.driver, "runtime", None) is None:
            return GPUTarget(backend.name, backend.name, 1)
        properties = self._runtime(None).properties
        arch = properties.arch
        capability = getattr(properties, "compute_capability", None)
        if capability is not None:  # Triton's CUDA arch: the compute capability as an int
            major, minor = capability
            arch = major * 10 + minor
        return GPUTarget(backend.triton_name or backend.name, arch, properties.warp_size)

    def get_active_torch_device(self) -> Any:
        """The torch device of the active backend's memory (`Driver.torch_device`), the current
        device's on a GPU backend (`torch.device("cuda", current)`), `torch.device("cpu")` on
        interp."""
        import torch  # deferred: torch is optional and heavy

        kind = self.backend().driver.torch_device
        if kind == "cpu":
            return torch.device(kind)
        return torch.device(kind, devices.current_device())


active = ActiveDriver()
target_info.host_target = active.get_current_target
