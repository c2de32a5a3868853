"""`triton.runtime` (also `triton.runtime.autotuner`) under the alias: tilec's autotuner and
heuristics (`Autotuner` with Triton's constructor: `tilec.as_triton.autotuner`; `Heuristics`,
whose launch Dynamo traces: `tilec.as_triton.heuristics`),
`triton.runtime.jit`'s names (`tilec.as_triton.jit`), Triton's errors (`tilec.as_triton.errors`)
and `driver` (`tilec.as_triton.driver`)."""

from __future__ import annotations

from typing import Any

from tilec.as_triton.autotuner import Autotuner
from tilec.as_triton.driver import driver
from tilec.as_triton.errors import CompilationError, OutOfResources, TritonError, plugin_error
from tilec.as_triton.heuristics import Heuristics, heuristics
from tilec.as_triton.jit import JITFunction, KernelInterface, TensorWrapper, reinterpret
from tilec.runtime.autotune import Config, autotune

__path__: list[str] = []
"""A package to the import system: `tilec.as_triton.finder` answers its submodules."""


def __getattr__(name: str) -> Any:
    return plugin_error("triton.runtime", name)  # InterpreterError, PTXASError: the backends'


__all__ = [
    "Autotuner", "CompilationError", "Config", "Heuristics", "JITFunction", "KernelInterface",
    "OutOfResources", "TensorWrapper", "TritonError", "autotune", "driver", "heuristics",
    "reinterpret",
]  # fmt: skip
