"""The interpreter backend: executes tir after the target-neutral passes; needs no device."""

from __future__ import annotations

from tilec.backend import Availability, Backend, BackendOptions
from tilec_interp import __version__


class InterpBackend(Backend):
    """Accepts the common options (`num_warps`, `num_stages`, `debug`); the first two are ignored."""

    name = "interp"
    version = __version__
    options_class = BackendOptions

    def is_available(self) -> Availability:
        return Availability(True, "runs on the CPU with NumPy")

    def execute(self, module, function_name: str, grid: tuple[int, ...], args: list) -> None:
        """Run `@function_name` of a tir module over `grid` (see `tilec_interp.interpreter`)."""
        from tilec_interp.interpreter import execute

        execute(module, function_name, grid, args)

    def run(self, compiled, grid: tuple[int, ...], args, options: BackendOptions) -> None:
        """Interpret the compiled kernel's tir module; pointer arguments are NumPy arrays."""
        self.execute(compiled.module, compiled.name, grid, list(args))
