"""`tl.target_info`: Triton's queries of the target, answered at compile time inside kernels
(`if tl.target_info.is_cuda(): ...` compiles one branch) and from the active driver outside.

Inside a kernel they answer for the target the kernel is being compiled for (the backend and
its `target` option, or the current device's), which the compiler sets with `compiling_for`;
the compile cache already keys on both. The interp backend is neither CUDA nor HIP.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from contextvars import ContextVar
from typing import Any

import attrs


@attrs.frozen
class GPUTarget:
    """Triton's `GPUTarget`: `backend` is "cuda", "hip" or "interp"; `arch` the compute
    capability as an int on CUDA (90 for sm_90), the arch name elsewhere."""

    backend: str
    arch: int | str
    warp_size: int


_COMPILING: ContextVar[GPUTarget | None] = ContextVar("tilec_compile_target", default=None)
_NUM_WARPS: ContextVar[int | None] = ContextVar("tilec_compile_num_warps", default=None)
_FEATURES: ContextVar[frozenset[str]] = ContextVar("tilec_compile_features", default=frozenset())

host_target: Callable[[], GPUTarget | None] | None = None
"""The active driver's target, for calls outside a compile (`tilec.runtime.driver` sets it)."""


@contextlib.contextmanager
def compiling_for(
    target: GPUTarget | None, num_warps: int | None = None, features: frozenset[str] = frozenset()
) -> Iterator[None]:
    """While the frontend compiles a kernel for `target` (with `num_warps`, which
    `tl.extra.cuda.num_warps()` answers), the queries answer for it; `features` are what the
    backend lowers itself (`Backend.frontend_features`, `compile_features`)."""
    token = _COMPILING.set(target)
    warps = _NUM_WARPS.set(num_warps)
    claimed = _FEATURES.set(frozenset(features))
    try:
        yield
    finally:
        _FEATURES.reset(claimed)
        _NUM_WARPS.reset(warps)
        _COMPILING.reset(token)


def compile_features() -> frozenset[str]:
    """The frontend features of the kernel's backend and options (empty outside a compile):
    `tensor_map_loads` (`tilec.frontend.descriptors.claimed_load`)."""
    return _FEATURES.get()


def compile_num_warps() -> int | None:
    """The `num_warps` of the kernel being compiled (None outside a compile)."""
    return _NUM_WARPS.get()


def _compile_time(fn: Callable[..., Any]) -> Callable[..., Any]:
    fn.__tilec_constexpr_function__ = True  # type: ignore[attr-defined]
    return fn


@_compile_time
def current_target() -> GPUTarget | None:
    """The target being compiled for, else the active driver's (None where there is none)."""
    target = _COMPILING.get()
    if target is not None or host_target is None:
        return target
    try:
        return host_target()
    except RuntimeError:  # no backend available: as Triton without an active driver
        return None


@_compile_time
def is_cuda() -> bool:
    """Whether the target is an NVIDIA GPU."""
    target = current_target()
    return target is not None and target.backend == "cuda"


@_compile_time
def cuda_capability_geq(major: int, minor: int = 0) -> bool:
    """Whether the target is an NVIDIA GPU of compute capability (major, minor) or later."""
    target = current_target()
    if target is None or target.backend != "cuda":
        return False
    return int(target.arch) >= major * 10 + minor


@_compile_time
def is_hip() -> bool:
    """Whether the target is an AMD GPU."""
    target = current_target()
    return target is not None and target.backend == "hip"


@_compile_time
def is_hip_cdna3() -> bool:
    """Whether the target is gfx942 (CDNA3)."""
    target = current_target()
    return target is not None and target.arch == "gfx942"


@_compile_time
def is_hip_cdna4() -> bool:
    """Whether the target is gfx950 (CDNA4)."""
    target = current_target()
    return target is not None and target.arch == "gfx950"


__all__ = ["current_target"]
