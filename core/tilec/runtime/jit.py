"""`@tilec.jit`: wraps a kernel function with the source the frontend compiles."""

from __future__ import annotations

import inspect
import textwrap
from collections.abc import Callable
from typing import Any


class JITFunction:
    """A kernel: the Python function, its dedented source, its file and the source's first line."""

    def __init__(self, fn: Callable[..., Any]):
        self.fn = fn
        self.__name__ = fn.__name__
        self.__doc__ = fn.__doc__
        lines, self.first_line = inspect.getsourcelines(fn)
        raw = "".join(lines)
        self.src = textwrap.dedent(raw)
        self.indent = len(raw.splitlines()[0]) - len(self.src.splitlines()[0])
        self.file = inspect.getsourcefile(fn) or fn.__code__.co_filename
        self.arg_names = list(inspect.signature(fn).parameters)

    @property
    def globals(self) -> dict[str, Any]:
        return self.fn.__globals__

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        raise RuntimeError(
            f"{self.__name__} is a @tilec.jit kernel: launch it as {self.__name__}[grid](...) "
            "or call it from another kernel"
        )

    def __getitem__(self, grid: Any) -> Callable[..., None]:
        """`kernel[grid](*args, **meta)`: `grid` is an int, a tuple or a callable of the meta dict."""
        from tilec.runtime.launcher import Launcher

        return Launcher(self, grid)

    def __repr__(self) -> str:
        return f"JITFunction({self.fn.__module__}:{self.__name__})"


def jit(fn: Callable[..., Any]) -> JITFunction:
    """Mark `fn` as a kernel written in `tilec.language`."""
    return JITFunction(fn)
