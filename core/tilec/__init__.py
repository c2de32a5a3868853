"""tilec: a plugin-based, multi-backend tile-level GPU kernel compiler framework."""

from tilec.language import cdiv
from tilec.runtime.jit import jit

__version__ = "0.1.0"

from tilec.runtime.compiler import compile, set_backend  # after __version__: imported by it

__all__ = ["__version__", "cdiv", "compile", "jit", "set_backend"]
