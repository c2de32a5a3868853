"""`@tilec.jit`: a kernel's source (`tilec.frontend.kernel.KernelFunction`) that also launches.

`kernel[grid]` is a launch function (`tilec.runtime.launcher.launcher`); everything about the
source (parameters, constexprs, defaults, the cache key) is the frontend's.
"""

from __future__ import annotations

import inspect
import logging
import threading
from collections.abc import Callable, Iterable
from typing import Any

import attrs

from tilec import settings
from tilec.errors import DecoratorValueError, LaunchArgumentError
from tilec.frontend.kernel import KernelFunction
from tilec.runtime import cache, compiler
from tilec.runtime.entry import user_entry
from tilec.runtime.launcher import Launcher, kernel_info, launcher

log = logging.getLogger(__name__)


def _never_unchanged() -> bool:
    return False


@attrs.frozen
class KernelParam:
    """Triton's `KernelParam`, an entry of `JITFunction.params`: a parameter's position, name,
    whether it is a constexpr, its `@jit(do_not_specialize...)` flags and its default."""

    num: int
    name: str
    is_constexpr: bool
    do_not_specialize: bool
    do_not_specialize_on_alignment: bool
    default: Any = inspect.Parameter.empty

    @property
    def has_default(self) -> bool:
        return self.default is not inspect.Parameter.empty


class JITFunction(KernelFunction):
    """A `@tilec.jit` kernel: `kernel[grid](*args, **meta)` launches it."""

    do_not_specialize: frozenset = frozenset()
    do_not_specialize_on_alignment: frozenset = frozenset()
    default_options: dict[str, Any] = {}
    """What `@jit(...)` set (see `jit`); the bare form and `JITFunction(fn)` keep these."""

    def __init__(self, fn: Callable[..., Any]) -> None:
        super().__init__(fn)
        self.__globals__ = fn.__globals__
        """Triton's attributes that torch's Inductor saves, clears and restores around pickling
        a kernel (`prepare_for_pickle`): the function's globals, the global values it used and
        the lock of its hash."""
        self.used_global_vals: dict[Any, Any] = {}
        self._hash_lock: Any = threading.RLock()

    def __getitem__(self, grid: Any) -> Callable[..., Any]:
        """`kernel[grid](*args, **meta)`: `grid` is an int, a tuple or a callable of the meta dict."""
        return launcher(self, grid)

    def repr(self, _: Any = None) -> str:
        """Triton's `JITFunction.repr`: the kernel's name."""
        return self.__name__

    def __getstate__(self) -> dict[str, Any]:
        """A kernel pickled by torch's Inductor, which a compile worker sends to its parent after
        dropping the function (`fn = None`, as it does Triton's): what the kernel's facts need
        (source, parameters, constexpr flags, defaults), without the frontend's and the
        launcher's caches, which hold modules and functions."""
        state = dict(self.__dict__)
        for name in ("_used", "_unchanged_fast", "_names", "_launch_info"):
            state.pop(name, None)
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._used, self._names = (), None
        self._unchanged_fast = _never_unchanged

    @property
    def params(self) -> list[KernelParam]:
        """Triton's `JITFunction.params`: the parameters in order (`KernelParam`)."""
        flags = zip(self.arg_names, self.constexpr_flags, strict=True)
        return [
            KernelParam(
                num,
                name,
                constexpr,
                name in self.do_not_specialize,
                name in self.do_not_specialize_on_alignment,
                self.defaults.get(name, inspect.Parameter.empty),
            )
            for num, (name, constexpr) in enumerate(flags)
        ]

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


def jit(
    fn: Callable[..., Any] | None = None,
    *,
    version: Any = None,
    repr: Any = None,
    launch_metadata: Any = None,
    do_not_specialize: Iterable[int | str] | None = None,
    do_not_specialize_on_alignment: Iterable[int | str] | None = None,
    debug: bool | None = None,
    noinline: bool | None = None,
) -> Any:
    """jit(fn) or jit(**keywords)(fn)

    Mark `fn` as a kernel written in `tilec.language` (`import tilec.language as tl`); parameters
    annotated `tl.constexpr` are compile-time constants. `kernel[grid](*args, **meta)` launches
    it: `grid` is an int, a tuple or a callable of the meta dict; `meta` holds constexpr values
    and launch options (`num_warps`, `num_stages`, ...), plus tilec's `backend=`, `check=` and
    `stream=`. `kernel.warmup(*args, grid=grid, **meta)` compiles without launching.

    Triton's keywords: `do_not_specialize` (parameters, by name or index, whose integer
    arguments are not specialized: no `== 1` constant, no divisibility by 16) and
    `do_not_specialize_on_alignment` (pointers not specialized on 16-byte alignment) are
    honoured; `debug=True` is the kernel's default `debug` launch option (device assertions);
    `noinline=True` is accepted and logged as having no effect (tilec inlines every call: the
    results are the same). `repr(specialization)` names the compiled kernel, as in Triton
    (`frontend/kernel_names.py`). `launch_metadata` (a profiler hook) is refused: tilec has no
    profiler hooks. `version` is accepted and unused, as in Triton.
    """
    if launch_metadata is not None:
        raise DecoratorValueError(
            "@jit(launch_metadata=...): tilec has no profiler hooks; drop launch_metadata="
        )
    if repr is not None and not callable(repr):
        raise DecoratorValueError(
            f"@jit(repr=...) takes a function of the specialization that returns the kernel's "
            f"name, got {repr!r}"
        )

    def decorate(function: Callable[..., Any]) -> JITFunction:
        kernel = JITFunction(function)
        kernel.repr_function = repr
        kernel.do_not_specialize = _parameters(kernel, "do_not_specialize", do_not_specialize)
        kernel.do_not_specialize_on_alignment = _parameters(
            kernel, "do_not_specialize_on_alignment", do_not_specialize_on_alignment
        )
        kernel.default_options = {} if debug is None else {"debug": bool(debug)}
        if noinline:
            log.info(
                "%s: @jit(noinline=True) has no effect: tilec inlines every call to it (the "
                "results are the same)",
                kernel.__name__,
            )
        return kernel

    return decorate if fn is None else decorate(fn)


def _parameters(kernel: JITFunction, keyword: str, given: Iterable[int | str] | None) -> frozenset:
    """The parameter names `given` by name or index, or a DecoratorValueError naming one the
    kernel lacks."""
    names = list(kernel.arg_names)
    chosen = set()
    for item in given or ():
        if isinstance(item, int) and 0 <= item < len(names):
            chosen.add(names[item])
        elif isinstance(item, str) and item in names:
            chosen.add(item)
        else:
            raise DecoratorValueError(
                f"@jit({keyword}=...) of {kernel.__name__}: {item!r} is not one of its "
                f"parameters ({', '.join(names)}) or their indices"
            )
    return frozenset(chosen)
