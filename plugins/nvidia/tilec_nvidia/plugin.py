"""The `nvidia` entry point of the `tilec` group: registers the NVIDIA backend."""

from __future__ import annotations

from tilec.backend import Backend
from tilec.plugin import hookimpl
from tilec_nvidia.backend import NvidiaBackend


@hookimpl
def tilec_backends() -> list[Backend]:
    return [NvidiaBackend()]
