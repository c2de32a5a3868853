"""The hook tilec calls, found through the `tilec` entry-point group (see pyproject.toml)."""

from __future__ import annotations

from tilec.passes.base import Pass
from tilec.plugin import hookimpl
from tilec_strength_reduction.strength_reduction import StrengthReduction


@hookimpl
def tilec_passes() -> list[type[Pass]]:
    return [StrengthReduction]
