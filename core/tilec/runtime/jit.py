"""`@tilec.jit`: a kernel's source (`tilec.frontend.kernel.KernelFunction`) that also launches.

`kernel[grid]` is a launch function (`tilec.runtime.launcher.launcher`); everything about the
source (parameters, constexprs, defaults, the cache key) is the frontend's.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from tilec import settings
from tilec.errors import LaunchArgumentError
from tilec.frontend.kernel import KernelFunction
from tilec.runtime import cache, compiler
from tilec.runtime.entry import user_entry
from tilec.runtime.launcher import Launcher, kernel_info, launcher


class JITFunction(KernelFunction):
    """A `@tilec.jit` kernel: `kernel[grid](*args, **meta)` launches it."""

    def __getitem__(self, grid: Any) -> Callable[..., Any]:
        """`kernel[grid](*args, **meta)`: `grid` is an int, a tuple or a callable of the meta dict."""
        return launcher(self, grid)

    def _unsafe_update_src(self, new_src: str) -> None:
        """Triton's: compile `new_src` from the next launch on (see `KernelFunction`). Every
        kernel's launch caches and fast launches are dropped (they would launch the code of the
        old source, also in kernels that inline this one); compiled kernels stay cached."""
        super()._unsafe_update_src(new_src)
        cache.generation += 1  # what `cache.clear_memory` bumps, without forgetting compiles

    @user_entry
    def warmup(self, *args: Any, grid: Any, **meta: Any) -> Any:
        """Compile for these arguments and options, as `kernel[grid](*args, **meta)` would,
        without launching; returns the `CompiledKernel` (Triton's `warmup`). Arguments are the
        values of a launch (arrays, scalars); Triton's dtype-only placeholders are refused,
        since pointer alignment enters tilec's specialization. `grid` is accepted for Triton's
        signature and not used: a compile does not depend on it. A user's mistake is raised as
        a launch's is (`tilec.runtime.entry.user_entry`)."""
        for name in ("check", "stream"):
            if name in meta:
                raise LaunchArgumentError(
                    f"{self.__name__}.warmup() launches nothing: drop {name}="
                )
        for arg in args:
            if type(arg).__name__ == "dtype" or isinstance(arg, type):
                raise LaunchArgumentError(
                    f"{self.__name__}.warmup() takes the arguments of a launch (arrays, "
                    f"scalars), not the dtype {arg!r}: pass an array of that dtype"
                )
        meta = dict(meta)
        backend_name = meta.pop("backend", None) or compiler._chosen or settings.backend()
        return Launcher(self, grid)._specialize(kernel_info(self), args, meta, backend_name)


def jit(fn: Callable[..., Any]) -> JITFunction:
    """jit(fn)

    Mark `fn` as a kernel written in `tilec.language` (`import tilec.language as tl`); parameters
    annotated `tl.constexpr` are compile-time constants. `kernel[grid](*args, **meta)` launches
    it: `grid` is an int, a tuple or a callable of the meta dict; `meta` holds constexpr values
    and launch options (`num_warps`, `num_stages`, ...), plus tilec's `backend=`, `check=` and
    `stream=`. `kernel.warmup(*args, grid=grid, **meta)` compiles without launching. Only the
    bare `@tilec.jit` form is taken: Triton's decorator keywords (`do_not_specialize`, `debug`,
    `noinline`, ...) are not.
    """
    return JITFunction(fn)
