"""The `Backend` base class that every backend plugin subclasses.

A backend has two sides, kept apart as in Triton:

- the compiler side: `parse_options` (frozen, hashable options), `layout_rules(target)`,
  `add_stages(stages, options)` and `hash(options)` for the compile-cache key;
- the driver side: `is_available()`, `load(binary)` and `launch(...)`.

A backend module must import nothing of its vendor (cuda.bindings, hip) at module level: vendor
imports go inside the driver-side methods, so that `tilec backends` works on a machine without the
vendor's driver and `is_available()` can say why the backend cannot run.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Sequence
from typing import Any, ClassVar

import attrs

import tilec


@attrs.frozen
class Availability:
    """Whether a backend can run here, and if not, a reason a user can act on."""

    available: bool
    reason: str = ""

    def __bool__(self) -> bool:
        return self.available


def one_of(choices: Sequence[Any]) -> Callable[[Any, attrs.Attribute, Any], None]:
    """An attrs validator accepting only `choices` (None is accepted when the default is None)."""

    def check(instance: Any, attribute: attrs.Attribute, value: Any) -> None:
        if value is None and attribute.default is None:
            return
        if value not in choices:
            raise ValueError(
                f"option '{attribute.name}' must be one of {', '.join(map(str, choices))}; "
                f"got {value!r}"
            )

    return check


def int_in_range(low: int, high: int, *, power_of_two: bool = False) -> Callable[..., None]:
    """An attrs validator for an integer option in `[low, high]`, optionally a power of two."""

    def check(instance: Any, attribute: attrs.Attribute, value: Any) -> None:
        if isinstance(value, bool) or not isinstance(value, int):
            raise ValueError(f"option '{attribute.name}' must be an integer; got {value!r}")
        if not low <= value <= high:
            raise ValueError(
                f"option '{attribute.name}' must be between {low} and {high}; got {value}"
            )
        if power_of_two and value & (value - 1):
            raise ValueError(f"option '{attribute.name}' must be a power of two; got {value}")

    return check


def is_bool(instance: Any, attribute: attrs.Attribute, value: Any) -> None:
    if not isinstance(value, bool):
        raise ValueError(f"option '{attribute.name}' must be True or False; got {value!r}")


@attrs.frozen
class BackendOptions:
    """Options every backend accepts, so that one kernel launch runs on every backend.

    `num_warps` and `num_stages` are the tuning options Triton kernels pass at launch
    (`kernel[grid](..., num_warps=4, num_stages=3)`); a backend that has no use for them (interp)
    accepts and ignores them. Backends subclass this (an attrs frozen class) to add their own.
    """

    num_warps: int = attrs.field(default=4, validator=int_in_range(1, 32, power_of_two=True))
    num_stages: int = attrs.field(default=3, validator=int_in_range(1, 8))
    debug: bool = attrs.field(default=False, validator=is_bool)


class Backend:
    """A compilation target and its driver. Subclasses set `name`, `version`, `options_class`."""

    name: ClassVar[str] = ""
    version: ClassVar[str] = tilec.__version__
    """The version of the plugin that provides the backend; part of the cache key."""
    options_class: ClassVar[type[BackendOptions]] = BackendOptions

    # Compiler side ---------------------------------------------------------------------------

    def parse_options(self, **kwargs: Any) -> BackendOptions:
        """Frozen, hashable options from keyword arguments; defaults for the ones not given.

        Raises TypeError for an unknown option name and ValueError for an invalid value, both
        naming the option.
        """
        valid = attrs.fields_dict(self.options_class)
        unknown = sorted(set(kwargs) - set(valid))
        if unknown:
            raise TypeError(
                f"backend '{self.name}' has no option {', '.join(map(repr, unknown))}; "
                f"valid options: {', '.join(sorted(valid))}"
            )
        try:
            return self.options_class(**kwargs)
        except ValueError as error:
            raise ValueError(f"backend '{self.name}': {error}") from None

    def layout_rules(self, target: Any) -> Any:
        """The `LayoutRules` (lane count, vector width, shared memory, ...) for `target`."""
        raise NotImplementedError(f"backend '{self.name}' does not supply layout rules")

    def add_stages(self, stages: dict[str, Callable[..., Any]], options: BackendOptions) -> None:
        """Add this backend's stages to the ordered mapping `name -> function(src, metadata)`.

        The core fills `stages` with the target-neutral ones (`tir`); a GPU backend adds `gir`,
        `llir` and its code generation (`ptx`, `cubin` / `amdgcn`, `hsaco`).
        """
        raise NotImplementedError(f"backend '{self.name}' does not add compilation stages")

    def hash(self, options: BackendOptions | None = None) -> str:
        """A stable cache-key component: backend name, plugin version and options."""
        if options is None:
            options = self.parse_options()
        text = f"{self.name}|{self.version}|{options!r}"
        return hashlib.sha256(text.encode()).hexdigest()

    # Driver side -----------------------------------------------------------------------------

    def is_available(self) -> Availability:
        """Whether this machine can run the backend. Must report, never raise."""
        raise NotImplementedError(f"backend '{self.name}' does not implement is_available")

    def load(self, binary: bytes) -> Any:
        """Load a compiled binary (cubin, hsaco) and return a handle to its kernel."""
        raise NotImplementedError(f"backend '{self.name}' cannot load binaries yet")

    def launch(
        self, kernel: Any, grid: tuple[int, int, int], args: Sequence[Any], **launch_options: Any
    ) -> None:
        """Launch a loaded kernel on `grid` (x, y, z program counts) with `args`."""
        raise NotImplementedError(f"backend '{self.name}' cannot launch kernels yet")

    def run(
        self, compiled: Any, grid: tuple[int, ...], args: Sequence[Any], options: BackendOptions
    ) -> None:
        """Run a `tilec.runtime.compiler.CompiledKernel` on `grid` with its runtime `args`."""
        raise NotImplementedError(f"backend '{self.name}' cannot run compiled kernels yet")

    def __repr__(self) -> str:
        return f"<{type(self).__name__} '{self.name}' {self.version}>"
