"""`@tilec.jit`: a kernel's source (`tilec.frontend.kernel.KernelFunction`) that also launches.

`kernel[grid](*args, **meta)` returns a `tilec.runtime.launcher.Launcher`; everything about the
source (parameters, constexprs, defaults, the cache key) is the frontend's.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from tilec.frontend.kernel import KernelFunction
from tilec.runtime.launcher import Launcher


class JITFunction(KernelFunction):
    """A `@tilec.jit` kernel: `kernel[grid](*args, **meta)` launches it."""

    def __getitem__(self, grid: Any) -> Launcher:
        """`kernel[grid](*args, **meta)`: `grid` is an int, a tuple or a callable of the meta dict."""
        return Launcher(self, grid)


def jit(fn: Callable[..., Any]) -> JITFunction:
    """Mark `fn` as a kernel written in `tilec.language`."""
    return JITFunction(fn)
