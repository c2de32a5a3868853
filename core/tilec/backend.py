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

from tilec.version import __version__


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
    version: ClassVar[str] = __version__
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


class GpuBackend(Backend):
    """A backend that compiles through the core's layouts (gir) and LLVM lowering (llir).

    What differs between GPU vendors is data and a few methods (tinygrad's renderers are the
    model): the `targets`, the lanes of a warp and the shared memory of each target, the
    `TargetInfo` the lowering uses and the device's own target. The stages after `llir` (PTX and
    cubin, amdgcn and hsaco) and the driver side stay the subclass's.
    """

    targets: ClassVar[tuple[str, ...]] = ()
    example_target: ClassVar[str] = ""
    shared_memory_name: ClassVar[str] = "shared memory"

    def lanes(self, target: str) -> int:
        """Threads of a warp (wavefront) on `target`."""
        raise NotImplementedError

    def shared_memory_bytes(self, target: str) -> int:
        """Shared memory (LDS) one block may use on `target`."""
        raise NotImplementedError

    def target_info(self, target: str, options: BackendOptions) -> Any:
        """The `tilec.lowering.target.TargetInfo` for `target` and `options`."""
        raise NotImplementedError

    def device_target(self) -> tuple[str, str | None]:
        """The current device's architecture name and the entry of `targets` to compile for
        it (None where there is none). Called only when the backend is available."""
        raise NotImplementedError

    def layout_rules(self, target: str) -> Any:
        from tilec.layout import LayoutRules

        if target not in self.targets:
            raise ValueError(
                f"unsupported {self.name} target {target!r}; choose one of {', '.join(self.targets)}"
            )
        return LayoutRules(
            threads_per_warp=self.lanes(target),
            max_vector_bytes=16,
            shared_memory_bytes=self.shared_memory_bytes(target),
            default_num_warps=4,
        )

    def resolve_target(self, options: Any) -> str:
        """The architecture to compile for: the `target` option, else the current device's."""
        if options.target is not None:
            return options.target
        availability = self.is_available()
        if not availability:
            raise RuntimeError(
                f"the {self.name} backend needs a target to compile without a device: pass "
                f"target={self.example_target!r} (one of {', '.join(self.targets)}); "
                f"{availability.reason}"
            )
        arch, target = self.device_target()
        if target is None:
            raise RuntimeError(
                f"the device's architecture {arch} is not one tilec compiles for "
                f"({', '.join(self.targets)}); pass target= explicitly"
            )
        return target

    def hash(self, options: Any = None) -> str:
        """As `Backend.hash`, plus the device's target when the options leave it open."""
        options = options or self.parse_options()
        if options.target is None and self.is_available():
            options = attrs.evolve(options, target=self.device_target()[1])
        return super().hash(options)

    def make_gir(self, module: Any, metadata: dict[str, Any], options: Any) -> Any:
        """The `gir` stage: layouts for the target's lanes and `num_warps`; other backends'
        gir passes stay out of the pipeline."""
        from tilec.layout import GpuTarget, to_gir
        from tilec.passes.manager import other_backend_origins
        from tilec.plugin.manager import load_backends

        arch = metadata["target"] = self.resolve_target(options)
        context = metadata.get("_context")
        target = GpuTarget(self.layout_rules(arch), arch, options.num_warps)
        skip = other_backend_origins(self, load_backends())
        to_gir(module, target, getattr(context, "instrumentations", ()), skip_origins=skip)
        return module

    def make_llir(self, module: Any, metadata: dict[str, Any], options: Any) -> str:
        """The `llir` stage: the core lowering with this backend's `TargetInfo`; the launch facts
        (warps, shared memory, parameters, written pointers) go into `metadata`."""
        from tilec.lowering import lower_module

        arch = metadata["target"]
        lowered = lower_module(module, self.target_info(arch, options), metadata["name"])
        limit = self.shared_memory_bytes(arch)
        if lowered.shared_bytes > limit:
            raise RuntimeError(
                f"{metadata['name']}: needs {lowered.shared_bytes} bytes of "
                f"{self.shared_memory_name}, more than the {limit} a block may use on {arch} "
                f"(num_warps={options.num_warps}); use smaller blocks"
            )
        metadata.update(
            num_warps=lowered.num_warps,
            threads_per_warp=lowered.threads_per_warp,
            shared_bytes=lowered.shared_bytes,
            params=list(lowered.params),
            written=list(lowered.written),
            kernel=lowered.name,
        )
        return lowered.llvm_ir
