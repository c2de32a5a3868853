"""Python AST -> tile IR, with a `file:line:col` location on every op.

`compile_to_tir` (the code generator, with every dialect) loads on first use: a launch from the
cache needs only the kernel's source and key (`tilec.frontend.kernel`), not the compiler.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from tilec.frontend.errors import CompilationError
from tilec.frontend.kernel import KernelFunction
from tilec.ir.type_names import parse_signature_type

if TYPE_CHECKING:
    from tilec.frontend.generator import compile_to_tir


def __getattr__(name: str) -> Any:
    if name != "compile_to_tir":
        raise AttributeError(f"module 'tilec.frontend' has no attribute {name!r}")
    return importlib.import_module("tilec.frontend.generator").compile_to_tir


__all__ = ["CompilationError", "KernelFunction", "compile_to_tir", "parse_signature_type"]
