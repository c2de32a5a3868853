"""`@tilec.jit`: a kernel's source (`tilec.frontend.kernel.KernelFunction`) that also launches.

`kernel[grid]` is a launch function (`tilec.runtime.launcher.launcher`); everything about the
source (parameters, constexprs, defaults, the cache key) is the frontend's.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from tilec.frontend.kernel import KernelFunction
from tilec.runtime.launcher import launcher


class JITFunction(KernelFunction):
    """A `@tilec.jit` kernel: `kernel[grid](*args, **meta)` launches it."""

    def __getitem__(self, grid: Any) -> Callable[..., Any]:
        """`kernel[grid](*args, **meta)`: `grid` is an int, a tuple or a callable of the meta dict."""
        return launcher(self, grid)


def jit(fn: Callable[..., Any]) -> JITFunction:
    """Mark `fn` as a kernel written in `tilec.language`."""
    return JITFunction(fn)
