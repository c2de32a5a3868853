"""The compile pipeline, owned here and nowhere else: a backend's pass pipeline (built once per
backend and options from what the plugin host provides) and the stages that drive a kernel's tir
through gir and llir to the backend's binary.

Who calls whom: `tilec.runtime.compiler` (the cache, `tilec.compile`) hands the frontend's tir to
`compile_module`; `compile_module` gets the backend's `PassPipeline` from `pass_pipeline` (the one
place that asks the plugin host for passes) and runs the core's stages and the backend's.
"""

from tilec.pipeline.pass_pipeline import (
    GPU_STAGES,
    PassPipeline,
    backend_stages,
    core_stage_names,
    other_backend_origins,
    pass_pipeline,
    plugin_pass_manager,
)
from tilec.pipeline.stages import CompiledStages, compile_module, core_stages

__all__ = [
    "GPU_STAGES",
    "CompiledStages",
    "PassPipeline",
    "backend_stages",
    "compile_module",
    "core_stage_names",
    "core_stages",
    "other_backend_origins",
    "pass_pipeline",
    "plugin_pass_manager",
]
