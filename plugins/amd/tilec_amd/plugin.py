"""The `amd` entry point of the `tilec` group: registers the AMD backend."""

from __future__ import annotations

from tilec.backend import Backend
from tilec.plugin import hookimpl
from tilec_amd.backend import AmdBackend


@hookimpl
def tilec_backends() -> list[Backend]:
    return [AmdBackend()]


@hookimpl
def tilec_ir_modules() -> list[str]:
    """The matrix-core layouts (#gpu.amd_*) and their thread mappings: imported by tilec before
    a compile or a parse needs them, not by a launch from the disk cache."""
    return ["tilec_amd.matrix_instructions"]
