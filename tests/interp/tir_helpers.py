"""Parsing and verifying hand-written tir for the interpreter tests."""

import tilec.dialects  # noqa: F401  (registers the ops)
from tilec.ir import parse_module, verify


def compile_tir(text: str, filename: str = "kernel.tir"):
    module = parse_module(text, filename)
    verify(module)
    return module
