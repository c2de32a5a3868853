"""tilec: a plugin-based, multi-backend tile-level GPU kernel compiler framework."""

from tilec.language import cdiv
from tilec.runtime.jit import jit

__version__ = "0.1.0"

__all__ = ["__version__", "cdiv", "jit"]
