"""`kernel[grid](*args, **meta)`: bind arguments, specialize, compile through the cache, run.

`meta` holds constexpr values and launch options (`num_warps`, `num_stages`, ... of the backend's
options); `backend=`, `check=` and `stream=` are reserved (`check=True` also runs the launch on
the interpreter and compares the results, see `tilec.runtime.check`; `stream=` is the stream to
launch on, see `tilec.driver`: it is no compile option and never enters the cache key). A
launch like an earlier one runs that call shape's fast launch (`tilec.runtime.hot_path`: inline
guards, then the prepared runner); others take the general path (`Launcher`): one small key per
call, looked up, compiled on a miss. A launch returns the `CompiledKernel` it ran (`.asm`,
`.metadata`), as Triton's does.
"""

from __future__ import annotations

import logging
import sys
import threading
from collections.abc import Callable, Sequence
from typing import Any

import attrs

from tilec import settings
from tilec.backend import Backend
from tilec.errors import (
    FreedArrayError,
    LaunchArgumentError,
    OptionError,
    OptionTypeError,
    TilecError,
)
from tilec.frontend import tuple_params
from tilec.frontend.kernel import KernelFunction
from tilec.language import constexpr
from tilec.runtime import cache, compiler
from tilec.runtime import check as checking
from tilec.runtime.compiler import compile_cached, get_backend
from tilec.runtime.entry import user_entry as user_entry  # re-exported: it was defined here
from tilec.runtime.entry import user_error
from tilec.runtime.hot_path import (
    MAX_FAST,
    MISS,
    RESERVED,
    FastLaunch,
    launch_grid,
    make_fast_launch,
)
from tilec.runtime.specialization import arg_type, spec_token
from tilec.tools.tensor_descriptor import TensorDescriptor

log = logging.getLogger(__name__)

TRITON_OPTIONS: dict[str, tuple[Any, str]] = {
    "num_ctas": (1, "tilec runs each program as one CTA (no thread-block clusters)"),
    "launch_cooperative_grid": (False, "tilec has no cooperative (grid-synchronizing) launch"),
    "sanitize_overflow": (False, "tilec adds no integer-overflow checks (Triton's, under debug)"),
}
"""Triton launch options of every vendor that a backend may lack: the value that describes what
tilec does (accepted) and why any other value is refused. A vendor's own options are declared by
its plugin (`Backend.options_class`, `Backend.vendor_options`)."""


class KernelInfo:
    """Per-kernel facts the launcher needs (parameter names, constexprs, defaults: the frontend's
    `KernelFunction`) and the kernel's hot-path cache of earlier launches."""

    def __init__(self, kernel: KernelFunction):
        self.names = kernel.arg_names
        self.constexpr = kernel.constexpr_flags
        self.runtime = {p for p, cx in zip(self.names, self.constexpr, strict=True) if not cx}
        self.defaults = kernel.defaults
        self.first_constexpr = next(
            (i for i, cx in enumerate(self.constexpr) if cx), len(self.names)
        )
        self.runtime_count = len(self.runtime)
        self.launches: dict[Any, Any] = {}
        self.generation = cache.generation
        self.fast: tuple[FastLaunch, ...] = ()
        """Fast launches of calls like earlier ones, newest first (`tilec.runtime.hot_path`)."""
        self.fast_shapes: dict[Any, tuple[FastLaunch, ...]] = {}
        """The fast launches of each call shape (key, positional count, keywords), oldest first;
        empty for shapes that have none."""
        self.lock = threading.Lock()
        """Held while `fast` and `fast_shapes` change."""


def kernel_info(kernel: KernelFunction) -> KernelInfo:
    info = kernel.__dict__.get("_launch_info")
    if info is None:
        info = kernel._launch_info = KernelInfo(kernel)
    if info.generation != cache.generation:
        info.launches.clear()
        info.fast = ()
        info.fast_shapes.clear()
        info.generation = cache.generation
    return info


def _add_fast_launch(
    info: KernelInfo, shape: Any, make: Callable[[], tuple[FastLaunch, ...]]
) -> None:
    """Make the fast launches of a call shape that has none yet (tried in order: native, then
    Python); keep those of the newest MAX_FAST shapes."""
    if shape in info.fast_shapes:
        return
    fast = make()
    with info.lock:
        info.fast_shapes[shape] = fast
        kept = [(s, f) for s, f in info.fast_shapes.items() if f]
        for old, _ in kept[:-MAX_FAST]:
            del info.fast_shapes[old]  # may have a fast launch again when it comes back
        info.fast = tuple(f for _, fs in reversed(kept[-MAX_FAST:]) for f in fs)


def launcher(kernel: KernelFunction, grid: Any) -> Callable[..., Any]:
    """`kernel[grid]`: a function that launches. It tries the kernel's fast launches (calls
    like earlier ones, `tilec.runtime.hot_path`), then the general path (`Launcher`). A plain
    function, not an object with `__call__`: CPython calls it several hundred nanoseconds
    faster. A user's mistake (a `TilecError`) is raised as `user_error` says: the user sees
    their own call and the message."""
    info = kernel.__dict__.get("_launch_info") or kernel_info(kernel)

    def launch(*args: Any, **meta: Any) -> Any:
        try:
            for fast in info.fast:
                compiled = fast(grid, args, meta)
                if compiled is not MISS:
                    return compiled
            return Launcher(kernel, grid)._launch(args, meta)
        except TilecError as error:
            if not user_error(error, sys._getframe(1)):
                raise
            raise error.with_traceback(None)  # noqa: B904 (the same error, its cause kept)

    return launch


def _flattened(value: Any) -> bool:
    """Whether argument `value` is several arguments (`tilec.frontend.tuple_params`)."""
    return isinstance(value, (tuple, TensorDescriptor))


class Launcher:
    """The general path of `kernel[grid](...)`: one key of small per-argument tokens, one
    dictionary lookup (compiling on a miss), then the backend's prepared runner."""

    __slots__ = ("grid", "kernel")

    def __init__(self, kernel: KernelFunction, grid: Any):
        self.kernel = kernel
        self.grid = grid

    def __call__(self, *args: Any, **meta: Any) -> Any:
        return launcher(self.kernel, self.grid)(*args, **meta)

    def _launch(self, args: tuple, meta: dict) -> Any:
        """The general path: key, look-up (compiling on a miss), runner; then a fast launch for
        calls like this one (`tilec.runtime.hot_path`)."""
        kernel = self.kernel
        info = kernel.__dict__.get("_launch_info")
        if info is None or info.generation != cache.generation:
            info = kernel_info(kernel)
        given = meta
        if meta:
            meta = dict(meta)
            backend_name = meta.pop("backend", None) or compiler._chosen or settings.backend()
            check = meta.pop("check", None)
            stream = meta.pop("stream", None)
        else:
            backend_name = compiler._chosen or settings.backend()
            check = stream = None
        try:
            if len(args) <= info.first_constexpr:
                tokens = tuple(map(spec_token, args))
            else:
                tokens = tuple(
                    a if cx else spec_token(a) for a, cx in zip(args, info.constexpr, strict=False)
                )
            if info.runtime.isdisjoint(meta):
                extra = tuple(meta.items())
            else:
                extra = tuple(
                    (k, spec_token(v) if k in info.runtime else v) for k, v in meta.items()
                )
            key = (kernel.cache_key, backend_name, tokens, extra)
            hot = info.launches.get(key)
        except (TypeError, FreedArrayError):  # an unhashable value, a freed array: take the
            key, hot = None, None  # slow path, which reports it naming the argument
        if hot is None:
            compiled = self._specialize(info, args, meta, backend_name)
            hot = (compiled, None)
            if key is not None and len(args) <= len(info.constexpr):
                info.launches[key] = hot
        compiled, runner = hot
        grid = launch_grid(self.grid, info.names, info.defaults, args, meta, self.kernel.__name__)
        flattened = any(  # a tuple or descriptor for a runtime parameter: its elements are
            _flattened(a) and not cx for a, cx in zip(args, info.constexpr, strict=False)
        ) or any(_flattened(v) and k in info.runtime for k, v in given.items())  # arguments
        tuples = flattened and (
            any(
                isinstance(a, tuple) and not cx for a, cx in zip(args, info.constexpr, strict=False)
            )
            or any(isinstance(v, tuple) and k in info.runtime for k, v in given.items())
        )
        if (
            len(args) == info.runtime_count == len(compiled.signature) <= info.first_constexpr
            and not flattened
        ):
            runtime_args = args  # every runtime argument given by position, in order, no None
        else:
            bound = {**info.defaults, **dict(zip(info.names, args, strict=False)), **meta}
            runtime_args = [tuple_params.element(bound, p) for p in compiled.runtime_params]
        if check or (check is None and checking.enabled):
            if stream is not None:
                raise LaunchArgumentError(
                    f"{kernel.__name__}: check=True launches on the default stream and waits "
                    "for the result; drop stream= (or check=True / tilec run --check)"
                )
            checking.run_checked(
                compiled, grid, list(runtime_args), lambda: self._reference(compiled)
            )
            return compiled
        if runner is None:
            runner = compiled.backend.driver.make_runner(compiled, runtime_args)
            if key is not None and key in info.launches:
                info.launches[key] = (compiled, runner)
        runner(grid, runtime_args, stream)
        if key is not None and not tuples:  # tuple arguments take this path every time
            # (descriptors take a fast launch: `hot_path` reads their parts)
            _add_fast_launch(info, (key, len(args), frozenset(given)), lambda: make_fast_launch(
                kernel, info, args, given, backend_name, compiled, runner, self.grid
            ))  # fmt: skip
        return compiled

    def _reference(self, compiled: Any) -> Any:
        """The interp compile of `compiled`'s kernel and specialization (for `check=True`)."""
        interp = get_backend("interp")
        return compile_cached(
            self.kernel, dict(compiled.signature), dict(compiled.constexprs), (), interp,
            interp.parse_options(),
        )  # fmt: skip

    def _specialize(self, info: KernelInfo, args: tuple, meta: dict, backend_name: str | None):
        backend = get_backend(backend_name)
        spec = bind_launch(
            self.kernel, info.names, info.constexpr, info.defaults, args, meta, backend
        )
        return compile_cached(*spec[:-1], equal_to_1=spec[-1])


def bind_launch(
    kernel: KernelFunction,
    names: Sequence[str],
    constexpr_flags: Sequence[bool],
    defaults: dict[str, Any],
    args: tuple,
    meta: dict[str, Any],
    backend: Backend,
) -> tuple:
    """What the launch `kernel[grid](*args, **meta)` on `backend` compiles: the arguments `(kernel,
    signature, constexprs, divisible, backend, options, equal_to_1)` of `compile_cached`, from the
    arguments bound to the parameters, each runtime argument's type and specialization, and the
    launch options. A None argument is a constexpr, as in Triton (the kernel folds `x is None`).
    A wrong argument or an unknown keyword raises LaunchArgumentError (a TypeError), naming it.
    The launcher and the autotuner (which compiles a launch's configs ahead) share it."""
    name = kernel.__name__
    option_names = set(attrs.fields_dict(backend.options_class))
    if len(args) > len(names):
        raise LaunchArgumentError(
            f"{name} takes {len(names)} arguments ({', '.join(names)}); got {len(args)}"
        )
    bound = dict(zip(names, args, strict=False))
    options = {}
    for key, value in meta.items():
        if key in bound:
            raise LaunchArgumentError(f"{name} got multiple values for argument '{key}'")
        if key in names:
            bound[key] = value
        elif key in option_names:
            options[key] = value
        elif not other_option(name, backend, key, value):
            raise LaunchArgumentError(
                f"{name} got an unknown keyword '{key}' (parameters: {', '.join(names)}; "
                f"launch options: {', '.join(sorted(option_names | set(RESERVED)))})"
            )
    for key, value in getattr(kernel, "default_options", {}).items():  # @jit(debug=...)
        options.setdefault(key, value)
    unspecialized = getattr(kernel, "do_not_specialize", ())
    unaligned = getattr(kernel, "do_not_specialize_on_alignment", ())
    signature, constexprs, divisible, equal_to_1 = {}, {}, [], []
    for param, cx in zip(names, constexpr_flags, strict=True):
        if param not in bound and param in defaults:
            bound[param] = defaults[param]
        if param not in bound:
            raise LaunchArgumentError(
                f"{name} is missing {'constexpr' if cx else 'argument'} '{param}'"
            )
        if cx or bound[param] is None:  # None: a compile-time constant, as in Triton
            value = bound[param]  # tl.constexpr(v), passed or a default (tl.core.CONSTEXPR_0), is v
            constexprs[param] = value.value if isinstance(value, constexpr) else value
            continue
        # a tuple is its elements (frontend/tuple_params.py), each an argument of its own
        try:
            elements = tuple_params.flatten(param, bound[param])
        except TilecError as error:  # a descriptor changed since it was made
            raise type(error)(f"argument '{param}' of {name}: {error}") from None
        for arg, value in elements:
            if value is None or isinstance(value, type) or (type(value) is tuple and not value):
                constexprs[arg] = value
                continue
            if type(value) is tuple_params.Constant:  # of a tensor descriptor
                constexprs[arg] = value.value
                continue
            signature[arg], divisible_16 = arg_type(name, arg, value)
            if type(value) is tuple_params.Int64:
                signature[arg] = "i64"
            if param in unspecialized or (param in unaligned and signature[arg][0] == "*"):
                continue  # @jit(do_not_specialize=...): no facts of the value
            if divisible_16:
                divisible.append(arg)
            if signature[arg] in ("i32", "i64") and value == 1:
                equal_to_1.append(arg)
    try:
        parsed = backend.parse_options(**options)
    except OptionError as error:
        raise type(error)(f"{name}: {error}") from None
    return kernel, signature, constexprs, tuple(divisible), backend, parsed, tuple(equal_to_1)


def other_option(kernel: str, backend: Backend, key: str, value: Any) -> bool:
    """Whether `key`, no option of `backend`'s `options_class`, is a Triton option tilec knows:
    one of the backend's vendor it does not honour or one of every vendor (accepted where
    `value` is what the backend does anyway, else OptionTypeError saying why), or another
    installed backend's (accepted with no effect, logged). False: no backend knows it. The
    launcher and `triton.compile` under `tilec.as_triton` sort options with it."""
    if key in backend.vendor_options:
        _check_triton_option(kernel, backend.name, key, value, backend.vendor_options)
    elif key in TRITON_OPTIONS:
        _check_triton_option(kernel, backend.name, key, value)
    elif (owner := _option_owner(backend, key)) is not None:
        _log_foreign_option(kernel, backend.name, key, owner)
    else:
        return False
    return True


def _option_owner(backend: Backend, key: str) -> str | None:
    """The installed backend, other than `backend`, whose launch option `key` is (an option it
    honours or a Triton option of its vendor it declares); None if no backend has it."""
    for other in compiler.automatic_order():
        if other.name == backend.name:
            continue
        if key in attrs.fields_dict(other.options_class) or key in other.vendor_options:
            return other.name
    return None


_logged_foreign: set[tuple[str, str, str]] = set()


def _log_foreign_option(kernel: str, backend: str, key: str, owner: str) -> None:
    """Say once (TILEC_LOG=info) that another backend's option has no effect on `backend`."""
    if (kernel, backend, key) in _logged_foreign:
        return
    _logged_foreign.add((kernel, backend, key))
    log.info(
        "%s: launch option '%s' belongs to backend '%s'; it has no effect on backend '%s' "
        "(as in Triton, an option of another vendor's backend is accepted)",
        kernel, key, owner, backend,
    )  # fmt: skip


def _check_triton_option(
    kernel: str,
    backend: str,
    key: str,
    value: Any,
    table: dict[str, tuple[Any, str]] = TRITON_OPTIONS,
) -> None:
    """Accept a Triton launch option that backend `backend` lacks where `value` is what tilec
    does anyway; otherwise raise OptionTypeError naming the option and why. `table` is the
    core's `TRITON_OPTIONS` or the backend's own `vendor_options`."""
    honoured, reason = table[key]
    if value is None or value == honoured or (honoured is None and not value):
        return
    raise OptionTypeError(
        f"{kernel}: launch option {key}={value!r} is not supported by backend '{backend}': "
        f"{reason}; leave it out" + (f" or pass {key}={honoured!r}" if honoured is not None else "")
    )
