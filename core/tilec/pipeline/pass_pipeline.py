"""A backend's pass pipeline: its pass stages, the pass manager, and the passes it leaves out.

`pass_pipeline(backend, options)` asks the plugin host for the pass classes and the backends once
and keeps the result per backend and options, until the loaded plugins change
(`tilec.plugin.manager.generation`). Nothing below `tilec.pipeline` (the `Backend` base,
`layout/`, `passes/`) calls the plugin host: they get what they need from here.
"""

from __future__ import annotations

import contextlib
from collections.abc import Mapping, Sequence
from typing import Any

import attrs

from tilec.backend import Backend, BackendOptions, GpuBackend
from tilec.ir.core import Operation
from tilec.passes.base import STAGES
from tilec.passes.instrumentation import PassInstrumentation
from tilec.passes.manager import PassManager
from tilec.plugin import manager as plugin_host

GPU_STAGES = ("gir", "llir")
"""The stages the core adds for a `GpuBackend`, after `tir`: layouts, then the LLVM lowering."""


def core_stage_names(backend: Any) -> tuple[str, ...]:
    """The stages the core provides for `backend`, in order: `tir`, and `gir`, `llir` for a GPU
    backend."""
    return ("tir", *GPU_STAGES) if isinstance(backend, GpuBackend) else ("tir",)


def backend_stages(backend: Any, options: Any = None) -> tuple[str, ...]:
    """The pass stages of `backend`'s pipeline: its `pass_stages` if it declares them, else the
    stages of `STAGES` among the core's stages and those `backend.add_stages` adds."""
    declared = getattr(backend, "pass_stages", None)
    if declared:
        return tuple(declared)
    stages: dict[str, Any] = dict.fromkeys(core_stage_names(backend))
    with contextlib.suppress(NotImplementedError):
        backend.add_stages(stages, backend.parse_options() if options is None else options)
    return tuple(stage for stage in STAGES if stage in stages)


def other_backend_origins(backend: Any, backends: Mapping[str, Any]) -> frozenset[str]:
    """The origins (top-level packages) of the backends other than `backend` (None: of every
    backend), whose passes stay out of `backend`'s default pipeline. Core (`tilec`) is never one."""
    own = None if backend is None else type(backend).__module__.split(".", 1)[0]
    origins = {type(other).__module__.split(".", 1)[0] for other in backends.values()}
    return frozenset(origins - {own, "tilec"})


@attrs.frozen
class PassPipeline:
    """The passes of one backend and options: the pass manager over every plugin's passes, the
    stages that run passes, and the origins (other backends) left out of the default pipeline."""

    manager: PassManager
    stages: tuple[str, ...]
    skip_origins: frozenset[str]

    def run(
        self,
        module: Operation,
        stage: str,
        *,
        target: Any = None,
        instrumentations: Sequence[PassInstrumentation] = (),
    ) -> bool:
        """Run the default pipeline of `stage` on `module` (no pass where the backend's pipeline
        has no such stage); returns whether the IR changed."""
        return self.manager.run(
            module,
            None,
            stages=tuple(s for s in self.stages if s == stage),
            skip_origins=self.skip_origins,
            target=target,
            instrumentations=instrumentations,
        )


_pipelines: dict[tuple[Backend, BackendOptions], PassPipeline] = {}
_pipelines_generation: int | None = None


def pass_pipeline(backend: Backend, options: BackendOptions) -> PassPipeline:
    """The `PassPipeline` of `backend` and `options`, built on first use and kept until the
    loaded plugins change."""
    global _pipelines_generation
    generation = plugin_host.generation()
    if generation != _pipelines_generation:
        _pipelines.clear()
        _pipelines_generation = generation
    key = (backend, options)
    pipeline = _pipelines.get(key)
    if pipeline is None:
        pipeline = _pipelines[key] = _build(backend, options)
    return pipeline


def _build(backend: Backend, options: BackendOptions) -> PassPipeline:
    manager = PassManager.from_classes(plugin_host.load_pass_classes())
    skip = other_backend_origins(backend, plugin_host.load_backends())
    return PassPipeline(manager, backend_stages(backend, options), skip)


def plugin_pass_manager(*, verify_each: bool = True) -> PassManager:
    """A pass manager over the core passes and those of every plugin that loaded."""
    return PassManager.from_classes(plugin_host.load_pass_classes(), verify_each=verify_each)


__all__ = [
    "GPU_STAGES",
    "PassPipeline",
    "backend_stages",
    "core_stage_names",
    "other_backend_origins",
    "pass_pipeline",
    "plugin_pass_manager",
]
