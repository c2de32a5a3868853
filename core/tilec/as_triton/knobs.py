"""`triton.knobs` under the alias: the knobs Triton programs read and set, each either tied to
what tilec does or refused.

- `cache.dir` is tilec's cache folder (`TILEC_CACHE_DIR`; setting it sets that variable);
  `cache.dump_dir`, `cache.override_dir` and `cache.manager_class` are what
  `triton.runtime.cache` uses.
- `runtime.interpret` is `TRITON_INTERPRET`: when on, launches run on the interp backend
  (`tilec.set_backend("interp")`); turned off, the choice before it is back.
- `language.fp32_default` is `TILEC_F32_DEFAULT`, `autotuning.print` `TILEC_PRINT_AUTOTUNING`.
- The rest (compilation dumps and overrides, hooks, `runtime.debug`, ...) read as Triton's
  defaults; setting one to anything else is an `OptionValueError` naming the knob, since tilec
  would not honour it. A knob Triton lacks, or one of a group tilec does not have (`amd`,
  `build`, `proton`; of `nvidia` all but its tools), is an `AttributeError` saying so.
- `nvidia.ptxas` is the ptxas the installed nvidia backend runs (`Backend.tool_path`), with its
  `release X.Y` version, as Triton's (None where there is none).

Each group has Triton's `scope()`: the values on entry come back on exit.
"""

from __future__ import annotations

import contextlib
import functools
import os
import re
import subprocess
from collections.abc import Iterator
from typing import Any

import attrs

from tilec import settings
from tilec.errors import OptionValueError
from tilec.runtime import compiler


def _set_variable(setting: settings.Setting, value: str | None) -> None:
    if value is None:
        os.environ.pop(setting.name, None)
    else:
        os.environ[setting.name] = value


@attrs.frozen
class EnvKnob:
    """What Triton's `knob_descriptors` hold for a knob (its `env_base`): the environment
    variable behind it, `key`."""

    key: str


class base_knobs:
    """Triton's `triton.knobs.base_knobs`, the class of every knob group: `knob_descriptors`
    (the knobs read from environment variables, with their `key`), `knobs` (name to value),
    `copy()`, `reset()` (the group's own settings back to their defaults) and `scope()`.
    Triton's test fixture `fresh_knobs` uses them."""

    _variables: dict[str, str] = {}
    """Each knob read from an environment variable, and that variable."""

    def _fresh(self) -> dict[str, Any]:
        """The group's own settings (beside its environment variables) as on creation."""
        return {}

    @property
    def knob_descriptors(self) -> dict[str, EnvKnob]:
        return {name: EnvKnob(key) for name, key in self._variables.items()}

    @property
    def knobs(self) -> dict[str, Any]:
        return {name: getattr(self, name) for name in self._knobs()}

    def _knobs(self) -> list[str]:
        return []

    def copy(self) -> Any:
        result = type(self).__new__(type(self))
        vars(result).update(vars(self))
        return result

    def reset(self) -> Any:
        vars(self).update(self._fresh())
        return self


class _Group(base_knobs):
    """A group of knobs: `_fixed` are Triton's defaults (the only value accepted), the
    properties of the subclass are tied to tilec."""

    _name = ""
    _fixed: dict[str, Any] = {}
    _why = ""

    def _knobs(self) -> list[str]:
        tied = [n for n, v in vars(type(self)).items() if isinstance(v, property)]
        return sorted([*tied, *self._fixed])

    def __getattr__(self, name: str) -> Any:
        if name in self._fixed:
            return self._fixed[name]
        raise AttributeError(
            f"triton.knobs.{self._name}.{name}: tilec has no such knob (it has "
            f"{', '.join(self._knobs()) or 'none in this group'})"
        )

    def __setattr__(self, name: str, value: Any) -> None:
        prop = getattr(type(self), name, None)
        if isinstance(prop, property):
            prop.__set__(self, value)
            return
        if name in self._fixed:
            if value != self._fixed[name]:
                raise OptionValueError(
                    f"triton.knobs.{self._name}.{name} = {value!r}: tilec does not honour it "
                    f"({self._why}); only Triton's default {self._fixed[name]!r} is accepted"
                )
            return
        raise AttributeError(
            f"triton.knobs.{self._name}.{name}: tilec has no such knob (it has "
            f"{', '.join(self._knobs()) or 'none in this group'})"
        )

    @contextlib.contextmanager
    def scope(self) -> Iterator[None]:
        """Triton's `scope()`: the knobs' values on entry are restored on exit."""
        saved = {n: getattr(self, n) for n in self._knobs()}
        try:
            yield
        finally:
            for name, value in saved.items():
                setattr(self, name, value)


class CacheKnobs(_Group):
    _name = "cache"
    _fixed = {"remote_manager_class": None}
    _why = "tilec has no remote cache"
    _variables = {"dir": settings.CACHE_DIR.name}

    def __init__(self) -> None:
        vars(self).update(self._fresh())

    def _fresh(self) -> dict[str, Any]:
        return {"_dump_dir": None, "_override_dir": None, "_manager_class": None}

    @property
    def dir(self) -> str:
        return str(settings.cache_dir())

    @dir.setter
    def dir(self, value: str | None) -> None:
        _set_variable(settings.CACHE_DIR, None if value is None else os.fspath(value))

    @property
    def dump_dir(self) -> str | None:
        return vars(self)["_dump_dir"]

    @dump_dir.setter
    def dump_dir(self, value: str | None) -> None:
        vars(self)["_dump_dir"] = value

    @property
    def override_dir(self) -> str | None:
        return vars(self)["_override_dir"]

    @override_dir.setter
    def override_dir(self, value: str | None) -> None:
        vars(self)["_override_dir"] = value

    @property
    def manager_class(self) -> Any:
        return vars(self)["_manager_class"]

    @manager_class.setter
    def manager_class(self, value: Any) -> None:
        vars(self)["_manager_class"] = value


class CompilationKnobs(_Group):
    _name = "compilation"
    _fixed = {
        name: False
        for name in ("always_compile", "dump_ir", "override", "store_binary_only", "use_ir_loc",
                     "enable_asan", "disable_line_info", "front_end_debugging",
                     "allow_non_constexpr_globals", "enable_experimental_consan")
    } | {"listener": None, "instrumentation_mode": ""}  # fmt: skip
    _why = "tilec's compiler has no such switch: `tilec compile --print-ir` shows its IR"


class RuntimeKnobs(_Group):
    _name = "runtime"
    _fixed = {
        name: None
        for name in ("override_arch", "launch_enter_hook", "launch_exit_hook", "jit_cache_hook",
                     "jit_post_compile_hook", "add_stages_inspection_hook",
                     "kernel_load_start_hook", "kernel_load_end_hook")
    } | {"debug": False}  # fmt: skip
    _why = "tilec has no launch hooks; pass debug=True to a launch for device assertions"

    _variables = {"interpret": settings.TRITON_INTERPRET.name}

    def __init__(self) -> None:
        vars(self).update(self._fresh())

    def _fresh(self) -> dict[str, Any]:
        return {"_interpret": None, "_backend_before": None}

    @property
    def interpret(self) -> bool:
        chosen = vars(self)["_interpret"]
        return settings.TRITON_INTERPRET.enabled() if chosen is None else chosen

    @interpret.setter
    def interpret(self, value: bool) -> None:
        value = bool(value)
        if value and compiler._chosen != "interp":
            vars(self)["_backend_before"] = compiler._chosen
            compiler.set_backend("interp")
        elif not value and compiler._chosen == "interp":
            compiler.set_backend(vars(self)["_backend_before"])
        vars(self)["_interpret"] = value


class LanguageKnobs(_Group):
    _name = "language"
    _variables = {"fp32_default": settings.F32_DEFAULT.name}

    @property
    def fp32_default(self) -> str:
        return settings.f32_default()

    @fp32_default.setter
    def fp32_default(self, value: str | None) -> None:
        if value is not None and value not in settings.F32_PRECISIONS:
            raise OptionValueError(
                f"triton.knobs.language.fp32_default = {value!r}: expected one of "
                f"{', '.join(settings.F32_PRECISIONS)} or None"
            )
        _set_variable(settings.F32_DEFAULT, value)


class AutotuningKnobs(_Group):
    _name = "autotuning"
    _fixed = {"cache": True}
    _why = "tilec always keeps tuning results under its cache folder; `tilec cache clear autotune`"
    _variables = {"print": settings.PRINT_AUTOTUNING.name}

    @property
    def print(self) -> bool:
        return settings.PRINT_AUTOTUNING.enabled()

    @print.setter
    def print(self, value: bool) -> None:
        _set_variable(settings.PRINT_AUTOTUNING, "1" if value else None)


class _AbsentGroup(_Group):
    def __init__(self, name: str, why: str) -> None:
        vars(self).update(_name=name, _why=why)

    def __getattr__(self, name: str) -> Any:
        raise AttributeError(f"triton.knobs.{self._name}.{name}: {self._why}")

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError(f"triton.knobs.{self._name}.{name}: {self._why}")


@attrs.frozen
class NvidiaTool:
    """Triton's `knobs.nvidia.ptxas`: a tool's path and its `release X.Y` version."""

    path: str
    version: str


@functools.cache
def _tool(path: str) -> NvidiaTool | None:
    try:
        text = subprocess.run([path, "--version"], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.SubprocessError):
        return None
    found = re.search(r"release (\d+\.\d+)", text.stdout + text.stderr)
    return NvidiaTool(path, found[1]) if found else None


class _ToolGroup(_AbsentGroup):
    """A vendor's knob group: its tools (`ptxas`) as the installed backend of that Triton name
    runs them (`Backend.tool_path`), None where it finds none; its other knobs are refused."""

    def __init__(self, name: str, triton_name: str, tools: tuple[str, ...], why: str) -> None:
        super().__init__(name, f"{why}, no other {name} knob")
        vars(self).update(_triton_name=triton_name, _tools=tools)

    def __getattr__(self, name: str) -> Any:
        if name not in self._tools:
            return super().__getattr__(name)
        backend = next((b for b in compiler.automatic_order()
                        if b.triton_name == self._triton_name), None)  # fmt: skip
        path = backend.tool_path(name) if backend else None
        return _tool(path) if path else None


cache = CacheKnobs()
compilation = CompilationKnobs()
runtime = RuntimeKnobs()
language = LanguageKnobs()
autotuning = AutotuningKnobs()
nvidia = _ToolGroup("nvidia", "cuda", ("ptxas",), "tilec's nvidia backend reads TILEC_PTXAS")
amd = _AbsentGroup("amd", "tilec's amd backend reads TILEC_LLD, no other tool knob")
build = _AbsentGroup("build", "tilec builds no C extension (no compiler or library knobs)")
proton = _AbsentGroup("proton", "tilec has no profiler (proton)")
propagate_env = True
"""Triton's switch that makes setting a knob set its environment variable: tilec's tied knobs
always do."""


def apply_environment() -> None:
    """`TRITON_INTERPRET` at activation: launches go to the interp backend."""
    if settings.TRITON_INTERPRET.enabled():
        runtime.interpret = True


__all__ = ["amd", "autotuning", "base_knobs", "build", "cache", "compilation", "language", "nvidia",
           "propagate_env", "proton", "runtime"]  # fmt: skip
