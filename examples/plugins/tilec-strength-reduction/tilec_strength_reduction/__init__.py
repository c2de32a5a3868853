"""An example third-party tilec pass plugin: the `strength-reduction` pass.

`StrengthReduction` loads when first named: importing the plugin's hook module
(`tilec_strength_reduction.plugin`) imports this package, and should import no pass or IR.
"""

from __future__ import annotations

from typing import Any

__all__ = ["StrengthReduction"]


def __getattr__(name: str) -> Any:
    if name == "StrengthReduction":
        from tilec_strength_reduction.strength_reduction import StrengthReduction

        return StrengthReduction
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
