"""The `nvidia` entry point of the `tilec` group: registers the NVIDIA backend."""

from __future__ import annotations

from tilec.backend import Backend
from tilec.plugin import hookimpl

# The tensor-core layouts (#gpu.mma, #gpu.dot_op, #gpu.nvmma_shared), their thread mappings and
# wgmma's ops, registered with the parser and the layout code as the plugin loads (light
# modules: the passes and the lowering load with a compile).
from tilec_nvidia import tensor_core_mapping, wgmma_ops  # noqa: F401
from tilec_nvidia.backend import NvidiaBackend


@hookimpl
def tilec_backends() -> list[Backend]:
    return [NvidiaBackend()]
