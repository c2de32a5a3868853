"""The `hostcpu` entry point of the `tilec` group: registers the host CPU vendor's backend."""

from __future__ import annotations

from tilec.backend import Backend
from tilec.plugin import hookimpl
from tilec_hostcpu.backend import HostCpuBackend


@hookimpl
def tilec_backends() -> list[Backend]:
    return [HostCpuBackend()]
