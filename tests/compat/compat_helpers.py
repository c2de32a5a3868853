"""Helpers for tests/compat: compile on the interpreter, run, and expect located errors."""

from __future__ import annotations

import pytest

import tilec
from tilec import settings
from tilec.frontend import CompilationError, compile_to_tir

GPU_BACKEND = settings.TEST_BACKEND.get() or "nvidia"
"""The backend of the GPU test modules (`*_gpu.py`): nvidia, or `TILEC_TEST_BACKEND` (amd)."""


def run_interp(kernel, signature: dict[str, str], args: list, grid=(1,), **constexprs) -> None:
    compiled = tilec.compile(kernel, signature=signature, constexprs=constexprs, backend="interp")
    compiled.run(grid, args)


def compile_error(kernel, signature: dict[str, str], **constexprs) -> CompilationError:
    """The located error compiling `kernel`: it names the kernels' file (file:line:col)."""
    with pytest.raises(CompilationError) as info:
        compile_to_tir(kernel, signature, constexprs)
    error = info.value
    assert error.file.endswith(".py") and error.line > 0, str(error)
    return error
