"""Python AST -> tile IR, with a `file:line:col` location on every op."""

from tilec.frontend.errors import CompilationError
from tilec.frontend.generator import compile_to_tir
from tilec.frontend.kernel import KernelFunction
from tilec.ir.type_names import parse_signature_type

__all__ = ["CompilationError", "KernelFunction", "compile_to_tir", "parse_signature_type"]
