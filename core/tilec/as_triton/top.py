"""The `triton` module under the alias (`tilec.as_triton`): Triton's top-level names, each
tilec's own. `__version__` is the Triton release whose API tilec follows (3.6.0), which programs
compare to choose code paths; `tilec_version` is tilec's."""

from __future__ import annotations

import importlib
from typing import Any

import tilec.language as language
from tilec import cdiv, next_power_of_2, set_allocator
from tilec.as_triton import backends, compiler, errors, knobs, runtime, tools
from tilec.as_triton.compiler import compile
from tilec.as_triton.errors import CompilationError, OutOfResources, TritonError
from tilec.as_triton.heuristics import heuristics
from tilec.as_triton.jit import JITFunction, KernelInterface, TensorWrapper, jit, reinterpret
from tilec.runtime.autotune import Config, autotune
from tilec.version import __version__ as tilec_version

__path__: list[str] = []
"""A package to the import system: `tilec.as_triton.finder` answers its submodules."""

__version__ = "3.6.0"
__tilec_alias__ = True

_ABSENT = {
    "MockTensor": "tilec compiles from argument values: pass an array of the dtype to warmup",
    "constexpr_function": "tilec evaluates plain Python functions of constexprs inside kernels",
    "AsyncCompileMode": "tilec compiles when a kernel is first launched (no async compile mode)",
    "FutureKernel": "tilec compiles when a kernel is first launched (no async compile mode)",
    "must_use_result": "tilec has no must_use_result marker",
}


def __getattr__(name: str) -> Any:
    if name == "testing":  # loaded on first use, as `tilec.testing` is
        return importlib.import_module("tilec.testing")
    if name == "InterpreterError":
        return errors.InterpreterError
    if name in _ABSENT:
        raise AttributeError(f"triton.{name} is not provided by tilec.as_triton: {_ABSENT[name]}")
    raise AttributeError(f"module 'triton' (tilec.as_triton) has no attribute {name!r}")


__all__ = [
    "CompilationError", "Config", "JITFunction", "KernelInterface",
    "OutOfResources", "TensorWrapper", "TritonError", "autotune", "backends", "cdiv", "compile",
    "compiler", "errors", "heuristics", "jit", "knobs", "language", "next_power_of_2",
    "reinterpret", "runtime", "set_allocator", "tilec_version", "tools",
]  # fmt: skip
