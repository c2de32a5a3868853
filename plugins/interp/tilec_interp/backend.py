"""The interpreter backend: executes tir after the target-neutral passes; needs no device."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import attrs

from tilec.backend import Availability, Backend, BackendOptions, Driver, is_bool
from tilec_interp import __version__


class InterpDriver(Driver):
    """Runs the compiled kernel's tir module with the interpreter; arrays stay NumPy arrays."""

    def is_available(self) -> Availability:
        return Availability(True, "runs on the CPU with NumPy")

    def run(
        self, compiled: Any, grid: tuple[int, ...], args: Sequence[Any], stream: Any = None
    ) -> None:
        """Interpret the compiled kernel's tir module; pointer arguments are NumPy arrays.

        The launch has finished when this returns, which honours any `stream` order; a stream
        is still checked to be one (`stream_handle`), so that a wrong value fails here too."""
        from tilec_interp.interpreter import execute  # deferred: the interpreter is large

        if stream is not None:
            # deferred: the array interop (ctypes, packing) waits for a launch; a compile for
            # another backend loads this module with the plugins
            from tilec.interop.device import stream_handle

            stream_handle(stream)

        execute(compiled.module, compiled.name, grid, list(args))


@attrs.frozen
class InterpOptions(BackendOptions):
    launch_cooperative_grid: bool = attrs.field(default=False, validator=is_bool)
    """Triton's cooperative launch (grid-wide barriers): honoured whatever its value, since every
    program of an interpreted grid is resident at once (programs that wait on each other take
    turns, `tilec_interp.scheduler`), which is what a cooperative launch guarantees."""


class InterpBackend(Backend):
    """Accepts the common options (`num_warps`, `num_stages`, `debug`, `enable_fp_fusion`) and
    `launch_cooperative_grid` (`InterpOptions`); of the common ones, all but `debug` have no
    meaning on the CPU. The GPU backends' own options (`maxnreg`,
    `waves_per_eu`, ...) are accepted at launch with no effect, as every backend accepts
    another's."""

    name = "interp"
    version = __version__
    options_class = InterpOptions
    driver_class = InterpDriver

    def execute(self, module: Any, function_name: str, grid: tuple[int, ...], args: list) -> None:
        """Run `@function_name` of a tir module over `grid` (see `tilec_interp.interpreter`)."""
        from tilec_interp.interpreter import execute

        execute(module, function_name, grid, args)
