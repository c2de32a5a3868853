"""The hook tilec calls, found through the `tilec` entry-point group (see pyproject.toml).

The pass's module (and the IR it imports) loads when tilec asks for passes, in a compile, not
when tilec loads the plugin: a program's launch from the disk cache loads every plugin to find
its backend and should pay for none of their passes.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from tilec.plugin import hookimpl

if TYPE_CHECKING:
    from tilec.passes.base import Pass


@hookimpl
def tilec_passes() -> list[type[Pass]]:
    from tilec_strength_reduction.strength_reduction import StrengthReduction

    return [StrengthReduction]
