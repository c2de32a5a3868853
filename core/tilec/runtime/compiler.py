"""Backend selection and `tilec.compile`: kernel + signature -> `CompiledKernel`, through the cache.

Selection order: the `backend=` argument, then `tilec.set_backend(name)`, then the
`TILEC_BACKEND` environment variable, then the first available of nvidia, amd, interp.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import attrs

import tilec
from tilec.backend import Backend, BackendOptions
from tilec.frontend import compile_to_tir
from tilec.ir import IntegerAttr, parse_module, print_module
from tilec.runtime import cache

AUTO_ORDER = ("nvidia", "amd", "interp")
_chosen: str | None = None
_availability: dict[str, Any] = {}


def set_backend(name: str | None) -> None:
    """Make `name` the default backend of launches and compiles (None: back to automatic)."""
    global _chosen
    if name is not None:
        _backends(name)
    _chosen = name


def _backends(name: str | None = None) -> dict[str, Backend]:
    from tilec.plugin.manager import load_backends

    backends = load_backends()
    if name is not None and name not in backends:
        raise ValueError(f"unknown backend '{name}'; known backends: {', '.join(sorted(backends))}")
    return backends


def _available(backend: Backend) -> Any:
    if backend.name not in _availability:
        _availability[backend.name] = backend.is_available()
    return _availability[backend.name]


def requested_backend(name: str | None = None) -> str | None:
    """The backend name asked for (argument, `set_backend`, `TILEC_BACKEND`); None: automatic."""
    return name or _chosen or os.environ.get("TILEC_BACKEND") or None


def get_backend(name: str | None = None, *, require_available: bool = True) -> Backend:
    """The backend a launch or compile uses; errors name the known ones or the reason."""
    name = requested_backend(name)
    if name is None:
        backends = _backends()
        reasons = []
        for auto in AUTO_ORDER:
            if auto in backends:
                availability = _available(backends[auto])
                if availability:
                    return backends[auto]
                reasons.append(f"{auto}: {availability.reason}")
        raise RuntimeError(f"no backend is available ({'; '.join(reasons)})")
    backend = _backends(name)[name]
    if require_available:
        availability = _available(backend)
        if not availability:
            raise RuntimeError(f"backend '{name}' is not available: {availability.reason}")
    return backend


@attrs.define(eq=False)
class CompiledKernel:
    """A kernel compiled for one backend and specialization. `asm` maps stage -> text."""

    name: str
    asm: dict[str, str]
    module: Any
    backend: Backend
    options: BackendOptions
    signature: dict[str, str]
    constexprs: dict[str, Any]
    key: str

    @property
    def runtime_params(self) -> list[str]:
        """The parameters the compiled function takes, in order."""
        return list(self.signature)

    def run(self, grid: tuple[int, ...], args: list[Any]) -> None:
        self.backend.run(self, grid, args, self.options)


def compile(
    kernel: Any,
    signature: Mapping[str, str],
    constexprs: Mapping[str, Any] | None = None,
    backend: str | Backend | None = None,
    target: Any = None,
    divisibility: Iterable[str] = (),
    instrumentations: Sequence[Any] = (),
    **options: Any,
) -> CompiledKernel:
    """Compile `kernel` ahead of time (no launch). `divisibility` names the arguments known to
    be multiples of 16 (or 16-byte aligned pointers). The backend need not be available here.
    With `instrumentations` (pass timing, IR printing) the passes always run, skipping the cache
    lookup, so that there is something to print and time; the result is still cached."""
    if not isinstance(backend, Backend):
        backend = get_backend(backend, require_available=False)
    return compile_cached(
        kernel, dict(signature), dict(constexprs or {}), tuple(divisibility), backend,
        backend.parse_options(**options), target, instrumentations,
    )  # fmt: skip


def compile_cached(
    kernel: Any,
    signature: dict[str, str],
    constexprs: dict[str, Any],
    divisible: tuple[str, ...],
    backend: Backend,
    options: BackendOptions,
    target: Any = None,
    instrumentations: Sequence[Any] = (),
) -> CompiledKernel:
    """Memory cache, then disk cache (a bad entry is recompiled and rewritten), then compile."""
    unknown = sorted(set(signature) - set(kernel.arg_names))
    if unknown:
        raise TypeError(f"{kernel.__name__} has no parameter '{unknown[0]}'")
    signature = {
        p: signature[p]
        for p in kernel.arg_names
        if p in signature and p not in constexprs and signature[p] != "constexpr"
    }
    spec = (sorted(signature.items()), sorted(constexprs.items(), key=repr), sorted(divisible))
    key = cache.make_key(
        kernel.cache_key, spec, repr(options), backend.hash(options), tilec.__version__
    )
    hit = None if instrumentations else cache.memory.get(key)
    if hit is not None:
        return hit
    module = None
    text = None if instrumentations else cache.read(key)
    if text is not None:
        try:
            module = parse_module(text)
        except Exception:  # a corrupt entry is recompiled, never trusted
            module = None
    if module is None:
        module = _compile_tir(
            kernel, signature, constexprs, divisible, backend, target, instrumentations
        )
        text = print_module(module)
        cache.write(key, text)
    compiled = CompiledKernel(
        kernel.__name__, {"tir": text}, module, backend, options, signature, constexprs, key
    )
    cache.memory[key] = compiled
    return compiled


def _compile_tir(kernel, signature, constexprs, divisible, backend, target, instrumentations=()):
    from tilec.dialects.func import FuncOp
    from tilec.passes.manager import PassManager, backend_stages, other_backend_origins

    module = compile_to_tir(kernel, signature, constexprs)
    runtime = [p for p in kernel.arg_names if p in signature and p not in constexprs]
    func = next(
        op for op in module.walk() if isinstance(op, FuncOp) and op.name_str == kernel.__name__
    )
    for index, param in enumerate(runtime):
        if param in divisible:
            func.set_argument_attribute(index, "tile.divisibility", IntegerAttr(16))
    stages = tuple(s for s in backend_stages(backend) if s == "tir")
    skip = other_backend_origins(backend, _backends())
    PassManager.from_plugins().run(
        module,
        None,
        stages=stages,
        skip_origins=skip,
        target=target,
        instrumentations=instrumentations,
    )
    return module
