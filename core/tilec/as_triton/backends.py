"""`triton.backends` (and `triton.backends.compiler`) under the alias: `backends` maps Triton's
backend names ("cuda", "hip", and tilec's "interp") to tilec's installed backends; `GPUTarget`
is tilec's."""

from __future__ import annotations

from typing import Any

from tilec.runtime import compiler
from tilec.runtime.driver import GPUTarget

__path__: list[str] = []
"""A package to the import system: `tilec.as_triton.finder` answers its submodules."""


def __getattr__(name: str) -> Any:
    if name == "backends":  # computed on use: the plugins load when first asked for
        installed = compiler._backends()
        return {backend.triton_name or n: backend for n, backend in installed.items()}
    raise AttributeError(
        f"triton.backends has no {name!r} under tilec.as_triton: tilec's backends are plugins "
        "(tilec.runtime.compiler.get_backend)"
    )


__all__ = ["GPUTarget"]  # and `backends`, computed on use
