"""The `nvidia` entry point of the `tilec` group: registers the NVIDIA backend."""

from __future__ import annotations

from tilec.backend import Backend
from tilec.plugin import hookimpl
from tilec_nvidia.backend import NvidiaBackend


@hookimpl
def tilec_backends() -> list[Backend]:
    return [NvidiaBackend()]


@hookimpl
def tilec_ir_modules() -> list[str]:
    """The tensor-core layouts (#gpu.mma, #gpu.dot_op, #gpu.nvmma_shared), their thread mappings
    and wgmma's ops: imported by tilec before a compile or a parse needs them, not by a launch
    from the disk cache."""
    return ["tilec_nvidia.tensor_core_mapping", "tilec_nvidia.wgmma_ops"]
