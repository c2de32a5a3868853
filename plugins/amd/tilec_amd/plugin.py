"""The `amd` entry point of the `tilec` group: registers the AMD backend."""

from __future__ import annotations

from tilec.backend import Backend
from tilec.plugin import hookimpl
from tilec_amd import matrix_instructions  # noqa: F401  (registers the #gpu.amd_* layouts)
from tilec_amd.backend import AmdBackend


@hookimpl
def tilec_backends() -> list[Backend]:
    return [AmdBackend()]
