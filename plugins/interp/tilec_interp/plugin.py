"""The `interp` entry point of the `tilec` group: registers the interpreter backend."""

from __future__ import annotations

from tilec.backend import Backend
from tilec.plugin import hookimpl
from tilec_interp.backend import InterpBackend


@hookimpl
def tilec_backends() -> list[Backend]:
    return [InterpBackend()]
