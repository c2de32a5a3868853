"""`Config` (one set of meta-parameters to try) and the kernel wrappers: `Heuristics`, and the
base `KernelWrapper` that `Autotuner` shares. A wrapper launches as a kernel does
(`kernel[grid](*args, **kwargs)`) and forwards other attributes (`arg_names`, `best_config`, ...)
to the kernel it wraps, so that wrappers stack in either order over `@tilec.jit`."""

from __future__ import annotations

import functools
import warnings
from collections.abc import Callable, Mapping
from typing import Any

from tilec.errors import DecoratorTypeError, DecoratorValueError, LaunchArgumentError
from tilec.runtime.entry import user_entry, user_stacklevel
from tilec.runtime.jit import JITFunction


class Config:
    """Triton's `Config`: constexpr values `kwargs` and the launch options `num_warps` and
    `num_stages`; `pre_hook(named_args)` runs before each launch with this config. A `kwargs`
    that is no dict or a `pre_hook` that is no function is a `DecoratorTypeError`."""

    @user_entry
    def __init__(
        self,
        kwargs: Mapping[str, Any],
        num_warps: int = 4,
        num_stages: int = 3,
        pre_hook: Callable[[dict[str, Any]], Any] | None = None,
    ):
        if not isinstance(kwargs, Mapping):
            raise DecoratorTypeError(
                f"tilec.Config takes the meta-parameters as a dict, as in "
                f"tilec.Config({{'BLOCK': 128}}, num_warps=4); got {kwargs!r}"
            )
        if pre_hook is not None and not callable(pre_hook):
            raise DecoratorTypeError(
                f"tilec.Config's pre_hook is a function of the named arguments "
                f"(pre_hook=lambda args: ...); got {pre_hook!r}"
            )
        self.kwargs = dict(kwargs)
        self.num_warps = num_warps
        self.num_stages = num_stages
        self.pre_hook = pre_hook

    def all_kwargs(self) -> dict[str, Any]:
        """The keyword arguments a launch with this config gets."""
        return {**self.kwargs, "num_warps": self.num_warps, "num_stages": self.num_stages}

    def key(self) -> str:
        """A stable text naming this config (the disk store keys timings by it)."""
        return ", ".join(f"{k}={v!r}" for k, v in sorted(self.all_kwargs().items()))

    def __str__(self) -> str:
        return ", ".join(f"{k}: {v}" for k, v in self.all_kwargs().items())

    def __repr__(self) -> str:
        return f"Config({self})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Config) and self.key() == other.key()

    def __hash__(self) -> int:
        return hash(self.key())


class KernelWrapper:
    """A wrapper of a `@tilec.jit` kernel (or of another wrapper): `self[grid](*args, **kw)`."""

    def __init__(self, fn: Any, what: str):
        if not isinstance(fn, (JITFunction, KernelWrapper)):
            name = getattr(fn, "__name__", None)
            raise DecoratorTypeError(
                f"{what} over {name or repr(fn)}: it wraps a @tilec.jit kernel, put @tilec.jit "
                f"below it (got a {type(fn).__name__})"
            )
        self.fn = fn

    def __getattr__(self, name: str) -> Any:
        if name == "fn":
            raise AttributeError(name)
        return getattr(self.fn, name)

    def __getitem__(self, grid: Any) -> Callable[..., Any]:
        return functools.partial(self._launch, grid)

    @user_entry
    def _launch(self, grid: Any, /, *args: Any, **kwargs: Any) -> Any:
        return self.run(grid, args, kwargs)

    def run(self, grid: Any, args: tuple, kwargs: dict[str, Any]) -> Any:
        raise NotImplementedError

    def resolve(self, args: tuple, kwargs: dict[str, Any]) -> tuple[JITFunction, dict[str, Any]]:
        """The innermost kernel and the keyword arguments it is launched with."""
        raise NotImplementedError


def resolve(fn: Any, args: tuple, kwargs: dict[str, Any]) -> tuple[JITFunction, dict[str, Any]]:
    """`fn.resolve` for wrappers; a `@tilec.jit` kernel is launched with `kwargs` as given."""
    if isinstance(fn, KernelWrapper):
        return fn.resolve(args, kwargs)
    return fn, kwargs


class HeuristicsWarning(UserWarning):
    """A value passed at launch for a parameter that `@tilec.heuristics` computes, which the
    heuristic's value replaces (as in Triton), differs from it."""


def _same(passed: Any, computed: Any) -> bool:
    try:
        return bool(passed == computed)
    except Exception:  # an array's ambiguous truth value, a comparison that raises
        return passed is computed


class Heuristics(KernelWrapper):
    """Triton's `heuristics`: each named meta-parameter is `fn(named_args)` at launch."""

    def __init__(self, fn: Any, values: Mapping[str, Callable[[dict[str, Any]], Any]]):
        super().__init__(fn, "@tilec.heuristics")
        name = fn.__name__
        if not isinstance(values, Mapping):
            raise DecoratorTypeError(
                f"@tilec.heuristics over {name} takes a dict {{parameter name: function of the "
                f"arguments}}, as in @tilec.heuristics({{'BLOCK': lambda args: 128}}); "
                f"got {values!r}"
            )
        unknown = [param for param in values if param not in fn.arg_names]
        if unknown:
            raise DecoratorValueError(
                f"@tilec.heuristics: {name} has no parameter {', '.join(map(repr, unknown))} "
                f"(parameters: {', '.join(fn.arg_names)}); name the parameters it computes"
            )
        for param, heuristic in values.items():
            if not callable(heuristic):
                raise DecoratorTypeError(
                    f"@tilec.heuristics over {name}: the heuristic of {param!r} is {heuristic!r}, "
                    f"no function; give a function of the arguments ({param!r}: lambda args: "
                    f"...), or pass a fixed value at launch"
                )
        self.values = dict(values)

    def _with_values(self, args: tuple, kwargs: dict[str, Any]) -> dict[str, Any]:
        """The launch's keywords with each heuristic's value. As in Triton, a value computed by
        a heuristic replaces a keyword passed at launch (which the heuristic sees among the
        arguments); a passed value that differs from it is named in a `HeuristicsWarning`. A
        computed parameter passed by position is an error (in Triton: "got multiple values")."""
        positional = dict(zip(self.fn.arg_names, args, strict=False))
        clash = sorted(set(positional) & set(self.values))
        if clash:
            raise LaunchArgumentError(
                f"{self.fn.__name__}: {', '.join(map(repr, clash))} is computed by "
                f"@tilec.heuristics; do not pass it at launch by position"
            )
        named = {**self.fn.defaults, **positional, **kwargs}
        extra = dict(kwargs)
        for name, heuristic in self.values.items():
            value = heuristic(named)
            if name in kwargs and not _same(kwargs[name], value):
                warnings.warn(
                    f"{self.fn.__name__}: {name}={kwargs[name]!r} passed at launch is replaced "
                    f"by @tilec.heuristics' {value!r}, as in Triton; pass no {name} to let the "
                    f"heuristic choose it, or take it out of the heuristics to choose it yourself",
                    HeuristicsWarning,
                    stacklevel=user_stacklevel(),
                )
            extra[name] = named[name] = value
        return extra

    def run(self, grid: Any, args: tuple, kwargs: dict[str, Any]) -> Any:
        return self.fn[grid](*args, **self._with_values(args, kwargs))

    def resolve(self, args: tuple, kwargs: dict[str, Any]) -> tuple[JITFunction, dict[str, Any]]:
        return resolve(self.fn, args, self._with_values(args, kwargs))


def heuristics(values: Mapping[str, Callable[[dict[str, Any]], Any]]) -> Callable[[Any], Any]:
    """`@tilec.heuristics({"BLOCK": lambda args: ...})` above `@tilec.jit` (or `@tilec.autotune`).
    Its mistakes (`DecoratorError`) are raised where it is applied, naming the kernel, with the
    decorator's line as their `call_site` (`tilec.runtime.entry.user_entry`)."""

    @user_entry
    def decorate(fn: Any) -> Heuristics:
        return Heuristics(fn, values)

    return decorate
