"""Python AST -> tile IR, with a `file:line:col` location on every op."""

from tilec.frontend.errors import CompilationError
from tilec.frontend.generator import compile_to_tir, parse_signature_type

__all__ = ["CompilationError", "compile_to_tir", "parse_signature_type"]
