"""The `Backend` base class that every backend plugin subclasses.

A backend has two sides, kept apart as in Triton:

- the compiler: `parse_options` (frozen, hashable options), `layout_rules(target)`,
  `add_stages(stages, options)` and `hash(options)` for the compile-cache key (the compile
  pipeline, `tilec.pipeline`, calls them);
- the driver (`Backend.driver`, a `tilec.driver.Driver`): load, run, runners for the launch hot
  path, and memory (`to_device`, `to_host`).

A backend module must import nothing of its vendor (cuda.bindings, hip) at module level: vendor
imports go inside the driver's methods, so that `tilec backends` works on a machine without the
vendor's driver and `is_available()` can say why the backend cannot run.
"""

from __future__ import annotations

import functools
import hashlib
import importlib
from collections.abc import Callable, Sequence
from typing import Any, ClassVar

import attrs

from tilec.arch import ArchTable, GpuArch
from tilec.driver import Availability, Driver
from tilec.errors import BackendUnavailableError, OptionTypeError, OptionValueError
from tilec.extern_libraries import ExternLibs, check_extern_libs, extern_libs
from tilec.settings import Setting
from tilec.version import __version__

__all__ = ["Availability", "Backend", "BackendOptions", "Driver", "GpuBackend", "GpuOptions"]


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
    enable_fp_fusion: bool = attrs.field(default=True, validator=is_bool)
    """Triton's option: the compiler may contract a floating-point multiply and an add or
    subtract of its result into one fused multiply-add (one rounding instead of two), as Triton
    does by default; False keeps every operation rounded (the interpreter always does)."""
    extern_libs: ExternLibs = attrs.field(
        default=(), converter=extern_libs, validator=check_extern_libs
    )
    """Triton's `{name: path}` of LLVM bitcode libraries, linked where a kernel declares their
    functions (`tilec.extern_libraries`)."""


@attrs.frozen
class GpuOptions(BackendOptions):
    """The options of every `GpuBackend`: `BackendOptions`' and the two its compiles read. A GPU
    backend's `options_class` derives from it and adds its vendor's options."""

    target: str | None = None
    """The architecture to compile for, one of the backend's `archs` (`GpuBackend.parse_options`
    checks it); None: the current device's (`GpuBackend.device_target`)."""
    opt_level: int = attrs.field(default=3, validator=one_of((0, 1, 2, 3)))
    """LLVM's optimization level for the kernel."""


class Backend:
    """A compilation target and its driver. Subclasses set `name`, `version`, `options_class`
    and `driver_class` (or `make_driver`)."""

    name: ClassVar[str] = ""
    version: ClassVar[str] = __version__
    """The version of the plugin that provides the backend; part of the cache key."""
    options_class: ClassVar[type[BackendOptions]] = BackendOptions
    driver_class: ClassVar[type[Driver] | str | None] = None
    """The driver's class, or its `"module:Class"` path, imported on first use so that loading
    the plugin does not load the driver (array interop, the launch runner). Its modules import
    no vendor library at module level."""
    priority: ClassVar[int] = 0
    """Where the automatic backend choice tries this backend: available backends of higher
    priority first (ties by name). A GPU backend declares a high one, a host backend 0."""
    triton_name: ClassVar[str] = ""
    """Triton's name of this backend (`GPUTarget.backend`: "cuda", "hip"); empty: `name`."""
    vendor_options: ClassVar[dict[str, tuple[Any, str]]] = {}
    """Launch options of this backend's vendor in Triton that the backend does not honour,
    `name -> (value, reason)`: `value` describes what the backend does anyway (accepted), any
    other value is refused with `reason`. The options the backend honours are the fields of
    `options_class`. Another backend accepts both kinds, with no effect, as Triton accepts an
    option of another vendor's backend."""
    settings: ClassVar[tuple[Setting, ...]] = ()
    """The `TILEC_*` variables this backend reads, `tilec.settings.Setting`s its plugin defines
    (the path of a vendor tool: nvidia's `TILEC_PTXAS`) and reads with `Setting.get()`;
    README.md's table lists them with the core's (`tilec.plugin.settings.all_settings()`)."""
    launch_stages: ClassVar[tuple[str, ...]] = ("tir",)
    """The compiled stages (`asm` keys) that loading and launching a kernel of this backend need:
    a cache entry that lacks one is a miss, recompiled (a stage left out by the compile, such as
    a cubin that ptxas could not make, is not among them)."""
    launch_metadata: ClassVar[tuple[str, ...]] = ()
    """The metadata keys the driver reads to load and launch a kernel; likewise required."""

    # Compiler --------------------------------------------------------------------------------

    def parse_options(self, **kwargs: Any) -> BackendOptions:
        """Frozen, hashable options from keyword arguments; defaults for the ones not given.

        Raises OptionTypeError (a TypeError) for an unknown option name and OptionValueError (a
        ValueError) for an invalid value, both naming the option.
        """
        valid = attrs.fields_dict(self.options_class)
        unknown = sorted(set(kwargs) - set(valid))
        if unknown:
            raise OptionTypeError(
                f"backend '{self.name}' has no option {', '.join(map(repr, unknown))}; "
                f"valid options: {', '.join(sorted(valid))}"
            )
        try:
            return self.options_class(**kwargs)
        except ValueError as error:
            raise OptionValueError(f"backend '{self.name}': {error}") from None

    def tool_path(self, name: str) -> str | None:
        """The path of the vendor tool `name` (`"ptxas"`, `"ld.lld"`) this backend runs, where it
        uses one and finds it; None otherwise. Triton programs read it through
        `triton.knobs.nvidia.ptxas` and the like (`tilec.as_triton`)."""
        return None

    def layout_rules(self, target: Any) -> Any:
        """The `LayoutRules` (lane count, vector width, shared memory, ...) for `target`."""
        raise NotImplementedError(f"backend '{self.name}' does not supply layout rules")

    def add_stages(self, stages: dict[str, Callable[..., Any]], options: BackendOptions) -> None:
        """Add this backend's stages to the ordered mapping `name -> function(src, metadata)`.

        The compile pipeline (`tilec.pipeline`) fills `stages` with the core's: `tir`, and for a
        `GpuBackend` also `gir` (layouts) and `llir` (the core LLVM lowering). A backend adds
        its code generation after them (`ptx`, `cubin` / `amdgcn`, `hsaco`).
        """
        raise NotImplementedError(f"backend '{self.name}' does not add compilation stages")

    def frontend_features(self, options: BackendOptions) -> frozenset[str]:
        """What this backend lowers itself that the frontend otherwise composes: none by
        default; `tensor_map_loads`: loads of host-side tensor descriptors become
        `tile.descriptor_load` (`TargetInfo.descriptor_load` lowers them; docs/tma.md). A
        feature that depends on more than the options must enter `hash`."""
        return frozenset()

    def hash(self, options: BackendOptions | None = None) -> str:
        """A stable cache-key component: backend name, plugin version and options."""
        if options is None:
            options = self.parse_options()
        text = f"{self.name}|{self.version}|{options!r}"
        return hashlib.sha256(text.encode()).hexdigest()

    # Driver ----------------------------------------------------------------------------------

    def make_driver(self) -> Driver:
        """The backend's driver (built once, on first use, by `driver`)."""
        driver_class = self.driver_class
        if driver_class is None:
            raise NotImplementedError(f"backend '{self.name}' has no driver")
        if isinstance(driver_class, str):
            driver_class = self._import_driver_class(driver_class)
        return driver_class()

    def _import_driver_class(self, path: str) -> type[Driver]:
        module_name, _, class_name = path.partition(":")
        try:
            return getattr(importlib.import_module(module_name), class_name)
        except (ImportError, AttributeError) as error:
            raise RuntimeError(
                f"backend '{self.name}': cannot import its driver {path!r} "
                f"({type(error).__name__}: {error}); reinstall the plugin that provides it"
            ) from None

    @functools.cached_property
    def driver(self) -> Driver:
        """What the runtime calls to load and launch kernels and to move arrays."""
        return self.make_driver()

    def is_available(self) -> Availability:
        """Whether this machine can run the backend (the driver's answer). Never raises."""
        try:
            driver = self.driver
        except RuntimeError as error:
            return Availability(False, str(error))
        return driver.is_available()

    def __repr__(self) -> str:
        return f"<{type(self).__name__} '{self.name}' {self.version}>"


class GpuBackend(Backend):
    """A backend that compiles through the core's layouts (gir) and LLVM lowering (llir), the
    stages the compile pipeline (`tilec.pipeline`) adds for it.

    What differs between GPU vendors is data and a few methods (tinygrad's renderers are the
    model): the `archs` table (lanes and shared memory of each target), the `TargetInfo` the
    lowering uses and the device's own target. The stages after `llir` (PTX and cubin, amdgcn
    and hsaco) and the driver stay the subclass's.
    """

    archs: ClassVar[ArchTable[GpuArch]]
    """The architectures this backend compiles for: the one source of its arch facts."""
    options_class: ClassVar[type[BackendOptions]] = GpuOptions
    binary_stage: ClassVar[str] = ""
    """The stage whose output the driver loads (`cubin`, `hsaco`): the end of a compile."""
    launch_stages: ClassVar[tuple[str, ...]] = ("tir", "gir", "llir")
    launch_metadata: ClassVar[tuple[str, ...]] = (
        "kernel", "params", "shared_bytes", "num_warps", "threads_per_warp",
    )  # fmt: skip
    check_targets: ClassVar[tuple[str, ...]] = ()
    """The targets that checks of code generation on the CPU compile for (`tilec fuzz --mode
    codegen`): a few that cover the backend's kinds of hardware."""

    def parse_options(self, **kwargs: Any) -> BackendOptions:
        """As `Backend.parse_options`; a `target` that is not one of `targets` is an
        OptionValueError naming them."""
        options = super().parse_options(**kwargs)
        target = getattr(options, "target", None)
        if target is not None and target not in self.targets:
            raise OptionValueError(
                f"backend '{self.name}': option 'target' must be one of "
                f"{', '.join(self.targets)}; got {target!r}"
            )
        return options

    @property
    def targets(self) -> tuple[str, ...]:
        """The names of `archs`, the values of the `target` option."""
        return self.archs.names

    @property
    def example_target(self) -> str:
        return self.archs.example

    @property
    def shared_memory_name(self) -> str:
        return self.archs.shared_memory_name

    def lanes(self, target: str) -> int:
        """Threads of a warp (wavefront) on `target`."""
        return self.archs.check(target).lanes

    def shared_memory_bytes(self, target: str) -> int:
        """Shared memory (LDS) one block may use on `target`."""
        return self.archs.check(target).shared_memory_bytes

    def mma_instructions(self, target: str) -> tuple[Any, ...]:
        """The `tilec.layout.rules.MmaInstruction`s `target` has (none by default)."""
        return ()

    def async_copies(self, target: str) -> bool:
        """Whether `target` copies global to shared memory asynchronously (`LayoutRules`)."""
        return True

    def bulk_copies(self, target: str) -> Any:
        """`LayoutRules.bulk_copies` of `target`: which pipelined descriptor loads its bulk
        copies bring into a loop's ring, in which encoding (None by default: none)."""
        return None

    def target_info(self, target: str, options: BackendOptions) -> Any:
        """The `tilec.lowering.target.TargetInfo` for `target` and `options`."""
        raise NotImplementedError(
            f"backend '{self.name}' does not define target_info(target, options): a GpuBackend "
            "returns the tilec.lowering.target.TargetInfo subclass instance the core lowering "
            "emits its code with (docs/backend-guide.md)"
        )

    def device_target(self) -> tuple[str, str | None]:
        """The current device's architecture name and the entry of `targets` to compile for
        it (None where there is none). Called only when the backend is available. The default
        asks the driver's `runtime()` (a `tilec.interop.gpu_driver.GpuDriver`'s) for its properties."""
        runtime = getattr(self.driver, "runtime", None)
        if runtime is None:
            raise NotImplementedError(
                f"backend '{self.name}': its driver ({type(self.driver).__name__}) has no "
                "runtime() to ask for the device's architecture: derive the driver from "
                "tilec.interop.gpu_driver.GpuDriver, or override GpuBackend.device_target()"
            )
        properties = runtime().properties
        return properties.arch, properties.target

    def layout_rules(self, target: str) -> Any:
        # deferred: the layouts (and the dialects they name) load with the compiler
        from tilec.layout.rules import LayoutRules

        arch = self.archs.check(target)
        return LayoutRules(
            threads_per_warp=arch.lanes,
            max_vector_bytes=16,
            shared_memory_bytes=arch.shared_memory_bytes,
            default_num_warps=4,
            mma_instructions=self.mma_instructions(target),
            async_copies=self.async_copies(target),
            bulk_copies=self.bulk_copies(target),
            sm=arch.sm,
        )

    def _check_target_option(self, options: Any) -> None:
        if not hasattr(options, "target"):
            raise TypeError(
                f"backend '{self.name}': a GpuBackend's options need a `target` field (the "
                f"architecture to compile for, None for the device's); "
                f"{type(options).__qualname__} has none: derive its options_class from "
                "tilec.backend.GpuOptions (target, opt_level)"
            )

    def resolve_target(self, options: Any) -> str:
        """The architecture to compile for: the `target` option, else the current device's."""
        self._check_target_option(options)
        if options.target is not None:
            return options.target
        availability = self.is_available()
        if not availability:
            raise BackendUnavailableError(
                f"the {self.name} backend needs a target to compile without a device: pass "
                f"target={self.example_target!r} (one of {', '.join(self.targets)}); "
                f"{availability.reason}"
            )
        arch, target = self.device_target()
        if target is None:
            raise BackendUnavailableError(
                f"the device's architecture {arch} is not one tilec compiles for "
                f"({', '.join(self.targets)}); pass target= explicitly"
            )
        return target

    def hash(self, options: Any = None) -> str:
        """As `Backend.hash`, plus the device's target when the options leave it open."""
        options = options or self.parse_options()
        self._check_target_option(options)
        if options.target is None and self.is_available():
            options = attrs.evolve(options, target=self.device_target()[1])
        return super().hash(options)
