"""An example third-party tilec pass plugin: the `strength-reduction` pass."""

from tilec_strength_reduction.strength_reduction import StrengthReduction

__all__ = ["StrengthReduction"]
