"""The compile stages: tir -> gir -> llir -> the backend's code generation, run in order.

The core provides `tir` (the target-neutral passes) and, for a `GpuBackend`, `gir` (layout
assignment and the gir passes) and `llir` (the core LLVM lowering with the backend's
`TargetInfo`); `backend.add_stages` appends its own (`ptx`, `cubin`, `amdgcn`, `hsaco`). Every stage
is `function(src, metadata) -> output`: its output is the next stage's input and its text (or
bytes) is kept in `asm`; a stage that returns None is left out. The core's stage functions are
closures over what they need (the backend, its options and pass pipeline, the instrumentations):
`metadata` holds only JSON values, because it is stored in the compile cache.
"""

from __future__ import annotations

import contextlib
import logging
import time
from collections.abc import Callable, Sequence
from typing import Any

import attrs

from tilec import settings
from tilec.backend import Backend, BackendOptions, GpuBackend
from tilec.ir import print_module
from tilec.ir.core import Operation
from tilec.layout.assignment import to_gir
from tilec.layout.rules import GpuTarget
from tilec.passes.instrumentation import PassInstrumentation
from tilec.pipeline.pass_pipeline import PassPipeline, pass_pipeline

log = logging.getLogger(__name__)

Stage = Callable[[Any, dict[str, Any]], Any]


@attrs.frozen
class CompiledStages:
    """What running the stages gives: each stage's text or bytes, the metadata the driver needs,
    and the tir printed with source locations."""

    asm: dict[str, str | bytes]
    metadata: dict[str, Any]
    located: str


def compile_module(
    module: Operation,
    backend: Backend,
    options: BackendOptions,
    *,
    name: str,
    target: Any = None,
    instrumentations: Sequence[PassInstrumentation] = (),
) -> CompiledStages:
    """Run every stage of `backend` on the tir `module` of kernel `name`, from `tir` on."""
    passes = pass_pipeline(backend, options)
    stages = core_stages(backend, options, passes, instrumentations)
    with contextlib.suppress(NotImplementedError):
        backend.add_stages(stages, options)
    metadata: dict[str, Any] = {"name": name, "target": target}
    src: Any = module
    asm: dict[str, str | bytes] = {}
    located = ""
    for stage_name, stage in stages.items():
        start = time.perf_counter()
        output = stage(src, metadata)
        log.info("%s: stage %s took %.3f s", name, stage_name, time.perf_counter() - start)
        if output is None:  # the stage does not apply here (a cubin without a usable ptxas)
            continue
        src = output
        asm[stage_name] = src if isinstance(src, (str, bytes)) else print_module(src)
        if stage_name == "tir":
            located = print_module(src, locations=True)
    return CompiledStages(asm, metadata, located)


def core_stages(
    backend: Backend,
    options: BackendOptions,
    passes: PassPipeline,
    instrumentations: Sequence[PassInstrumentation] = (),
) -> dict[str, Stage]:
    """The core's stages for `backend`, in order: `tir`, and `gir`, `llir` for a GPU backend."""

    def tir(module: Operation, metadata: dict[str, Any]) -> Operation:
        tir_instrumentations = list(instrumentations)
        if settings.VALIDATE_PASSES.enabled():
            from tilec.pipeline.validation import ValidatePasses  # deferred: needs NumPy

            tir_instrumentations.insert(0, ValidatePasses())
        passes.run(module, "tir", target=metadata["target"], instrumentations=tir_instrumentations)
        return module

    stages: dict[str, Stage] = {"tir": tir}
    if isinstance(backend, GpuBackend):
        stages["gir"] = lambda module, metadata: make_gir(
            module, metadata, backend, options, passes, instrumentations
        )
        stages["llir"] = lambda module, metadata: make_llir(module, metadata, backend, options)
    return stages


def make_gir(
    module: Operation,
    metadata: dict[str, Any],
    backend: GpuBackend,
    options: Any,
    passes: PassPipeline,
    instrumentations: Sequence[PassInstrumentation] = (),
) -> Operation:
    """The `gir` stage: layouts for the target's lanes and `num_warps` (the gir passes of the
    backend's pipeline, without other backends' passes), then the gir verifier."""
    arch = metadata["target"] = backend.resolve_target(options)
    target = GpuTarget(backend.layout_rules(arch), arch, options.num_warps, options.num_stages)
    to_gir(module, target, passes.manager, instrumentations, skip_origins=passes.skip_origins)
    return module


def make_llir(
    module: Operation, metadata: dict[str, Any], backend: GpuBackend, options: Any
) -> str:
    """The `llir` stage: the core lowering with the backend's `TargetInfo`; the launch facts
    (warps, shared memory, parameters, written pointers) go into `metadata`."""
    from tilec.lowering import lower_module  # deferred: imports llvmlite, which only llir needs

    arch = metadata["target"]
    target = backend.target_info(arch, options)
    target.fp_fusion = options.enable_fp_fusion
    lowered = lower_module(module, target, metadata["name"])
    limit = backend.shared_memory_bytes(arch)
    if lowered.shared_bytes > limit:
        raise RuntimeError(
            f"{metadata['name']}: needs {lowered.shared_bytes} bytes of "
            f"{backend.shared_memory_name}, more than the {limit} a block may use on {arch} "
            f"(num_warps={options.num_warps}, num_stages={options.num_stages}); use smaller "
            "blocks or fewer pipeline stages (num_stages)"
        )
    metadata.update(
        num_warps=lowered.num_warps,
        threads_per_warp=lowered.threads_per_warp,
        shared_bytes=lowered.shared_bytes,
        params=list(lowered.params),
        written=list(lowered.written),
        kernel=lowered.name,
    )
    metadata.update(lowered.metadata)  # the target's added parameters (tensor maps)
    if options.extern_libs:
        from tilec.lowering.extern_libs import link_extern_libs  # deferred: as lower_module

        return link_extern_libs(lowered.llvm_ir, options.extern_libs)
    return lowered.llvm_ir


__all__ = ["CompiledStages", "Stage", "compile_module", "core_stages", "make_gir", "make_llir"]
