"""Compile errors that point at the kernel's source: `file:line:col`, the line, and what to do."""

from __future__ import annotations

from tilec.errors import TilecError


class CompilationError(TilecError):
    """A mistake in a kernel, found while compiling it to tile IR."""

    def __init__(
        self, message: str, file: str, line: int, col: int, source_line: str = "", hint: str = ""
    ):
        self.message, self.file, self.line, self.col = message, file, line, col
        self.source_line, self.hint = source_line, hint
        text = f"{file}:{line}:{col}: error: {message}"
        if source_line:
            text += f"\n    {source_line}\n    {' ' * max(col - 1, 0)}^"
        if hint:
            text += f"\n{hint}"
        super().__init__(text)


class UserError(Exception):
    """Raised below the visitor, without a location; the visitor adds the node's location."""

    def __init__(self, message: str, hint: str = ""):
        super().__init__(message)
        self.message, self.hint = message, hint
