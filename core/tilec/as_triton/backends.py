"""`triton.backends` (and `triton.backends.compiler`) under the alias.

`backends` is Triton's table of installed backends, name -> `Backend(compiler, driver)`: one
entry per tilec backend, under its name ("nvidia", "amd", "interp", as Triton names its
"nvidia" and "amd"), GPU backends first; and, where the backend launches use now runs on the
host (interp), that backend again under "cpu", the name of Triton's CPU backend, since Triton
kernels then run on CPU tensors (torch's Inductor looks for it there to generate Triton code for
CPU graphs). `compiler` is a `TritonBackend` class for that backend (Triton's `BaseBackend`:
`make_backend(target)` gives an instance), `driver` a `DriverView` class: `is_active()` says
whether the backend is a GPU backend that can run here, and `driver.set_active(view())` selects
the backend (`tilec.set_backend`) unless launches use it already.

`backend_of(target)` is the tilec backend of a Triton `GPUTarget` (`backend` "cuda", "hip",
"cpu" or a tilec backend's name) and `honoured_options` sorts `triton.compile`'s options as a
launch's are sorted. `GPUTarget` is tilec's.
"""

from __future__ import annotations

import dataclasses
import logging
import sys
import types
from collections.abc import Mapping
from typing import Any

import attrs

from tilec.errors import OptionTypeError, UnknownBackendError
from tilec.runtime import compiler as tilec_compiler
from tilec.runtime import launcher
from tilec.runtime.driver import GPUTarget

log = logging.getLogger("tilec.as_triton")

__path__: list[str] = []
"""A package to the import system: `tilec.as_triton.finder` answers its submodules."""

HOST = "cpu"
"""Triton's name of its CPU backend (`GPUTarget("cpu", ...)`, `triton.backends.backends["cpu"]`)."""


@dataclasses.dataclass(frozen=True)
class Backend:
    """Triton's entry of `triton.backends.backends`: the compiler and driver classes."""

    compiler: type
    driver: type


def _runs_on_host(backend: Any) -> bool:
    return backend.driver.torch_device == "cpu"


def _device_arch(backend: Any) -> tuple[str, str | None] | None:
    """The current device's (arch, target to compile for) where `backend` is an available GPU
    backend, else None."""
    if not hasattr(backend, "device_target") or not tilec_compiler._available(backend):
        return None
    return backend.device_target()


def host_backend() -> str:
    """The tilec backend for Triton's "cpu" target: the selected one where it runs on the host
    (interp, a third-party host backend), else interp."""
    selected = tilec_compiler.get_backend(require_available=False)
    return selected.name if _runs_on_host(selected) else "interp"


def backend_of(target: Any) -> tuple[str | None, str | None]:
    """tilec's (backend, target) of a Triton `GPUTarget` (None: the selected backend)."""
    if target is None:
        return None, None
    installed = tilec_compiler._backends()
    names = {b.triton_name or n: n for n, b in installed.items()}
    if target.backend == HOST:
        return host_backend(), None
    backend = names.get(target.backend, target.backend)
    if backend not in installed:
        raise UnknownBackendError(
            f"GPUTarget({target.backend!r}, ...): no installed tilec backend compiles for it "
            f"(Triton's names: {', '.join(sorted([*names, HOST]))})"
        )
    if _runs_on_host(installed[backend]):
        return backend, None
    arch = f"sm_{target.arch}" if backend == "nvidia" else str(target.arch)
    device = _device_arch(installed[backend])
    if device is not None and device[0] == arch and device[1] is not None:
        return backend, device[1]  # what a launch on the device compiles for (sm_90a on 9.0)
    return backend, arch


def honoured_options(kernel: str, backend: str | None, options: Mapping[str, Any]) -> dict:
    """The options of `triton.compile` that `backend`'s options class takes; the others are
    checked as a launch checks them (`tilec.runtime.launcher.other_option`): accepted where
    tilec does what they ask anyway or they belong to another backend, else an error."""
    chosen = tilec_compiler.get_backend(backend, require_available=False)
    fields = attrs.fields_dict(chosen.options_class)
    honoured = {}
    for key, value in options.items():
        if key in fields:
            honoured[key] = value
        elif not launcher.other_option(kernel, chosen, key, value):
            raise OptionTypeError(
                f"{kernel}: triton.compile option {key}={value!r} is no option of any tilec "
                f"backend (backend '{chosen.name}' takes {', '.join(sorted(fields))})"
            )
    return honoured


class TritonBackend:
    """Triton's `BaseBackend` (what `make_backend(target)` returns) for a tilec backend:
    `target`, `binary_ext`, `hash()`, `parse_options(dict)` (Triton's options object, whose
    attributes are the tilec backend's options), `pack_metadata(metadata)` and
    `supports_target(target)`."""

    def __init__(self, target: GPUTarget) -> None:
        self.target = target
        name, self._arch = backend_of(target)
        self.backend = tilec_compiler.get_backend(name, require_available=False)
        self.name = self.backend.name

    @classmethod
    def supports_target(cls, target: GPUTarget) -> bool:
        try:
            backend_of(target)
        except UnknownBackendError:
            return False
        return True

    @property
    def binary_ext(self) -> str:
        """The stage of the binary a launch loads (`cubin`, `hsaco`), `tir` on interp."""
        return self.backend.launch_stages[-1] if self.backend.launch_stages else "tir"

    def parse_options(self, options: Mapping[str, Any]) -> types.SimpleNamespace:
        kernel = f"make_backend({self.target})"
        honoured = honoured_options(kernel, self.name, options)
        if self._arch is not None and "target" in attrs.fields_dict(self.backend.options_class):
            honoured.setdefault("target", self._arch)
        parsed = self.backend.parse_options(**honoured)
        return types.SimpleNamespace(**attrs.asdict(parsed, recurse=False))

    def hash(self) -> str:
        return self.backend.hash()

    def pack_metadata(self, metadata: Any) -> tuple[int, int, int]:
        return (metadata.num_warps, 1, metadata.shared)


TORCH_ACTIVE = {
    "cuda": lambda torch: torch.cuda.is_available() and torch.version.hip is None,
    "hip": lambda torch: torch.cuda.is_available() and torch.version.hip is not None,
}
"""Triton's drivers' `is_active()`, by Triton's backend name: what torch says of the device."""


class DriverView:
    """Triton's driver class of one tilec backend (`triton.backends.backends[name].driver`)."""

    backend_name = ""

    @classmethod
    def is_active(cls) -> bool:
        """Whether the backend is a GPU backend that can run here; a host backend is never one.
        Where torch is loaded and the backend is one of Triton's, the answer is Triton's: torch's
        (`TORCH_ACTIVE`), which also holds in the compile workers Inductor forks from a process
        that initialised the device, where a driver call of the worker's own fails (and Inductor's
        generated modules ask it before they compile: `set_driver_to_gpu`). Elsewhere the
        backend's own availability."""
        backend = tilec_compiler._backends()[cls.backend_name]  # a probe: no backend is used
        if _runs_on_host(backend):
            return False
        torch = sys.modules.get("torch")
        torch_active = TORCH_ACTIVE.get(backend.triton_name)
        if torch is not None and torch_active is not None:
            return bool(torch_active(torch))
        return bool(tilec_compiler._available(backend))


def _entry(name: str) -> Backend:
    compiler = type(f"{name.capitalize()}Backend", (TritonBackend,), {})
    driver = type(f"{name.capitalize()}Driver", (DriverView,), {"backend_name": name})
    return Backend(compiler, driver)


def __getattr__(name: str) -> Any:
    if name == "backends":  # computed on use: the plugins load when first asked for
        table = {b.name: _entry(b.name) for b in tilec_compiler.automatic_order()}
        if _runs_on_host(tilec_compiler.get_backend(require_available=False)):
            table[HOST] = table[host_backend()]
        return table
    raise AttributeError(
        f"triton.backends has no {name!r} under tilec.as_triton: tilec's backends are plugins "
        "(tilec.runtime.compiler.get_backend)"
    )


__all__ = ["Backend", "DriverView", "GPUTarget", "TritonBackend", "backend_of"]
