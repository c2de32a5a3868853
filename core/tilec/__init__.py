"""tilec: a plugin-based, multi-backend tile-level GPU kernel compiler framework."""

from tilec import testing
from tilec.language import cdiv
from tilec.runtime.autotune import Config, autotune, heuristics
from tilec.runtime.compiler import compile, get_backend, set_backend
from tilec.runtime.jit import jit
from tilec.version import __version__


def to_device(array, backend: str | None = None):
    """A copy of the NumPy `array` in the memory of `backend` (default: the selected backend's
    device), usable as a kernel argument without copies; `.numpy()` copies it back. On the interp
    backend the array itself is returned."""
    return get_backend(backend).driver.to_device(array)


__all__ = [
    "Config",
    "__version__",
    "autotune",
    "cdiv",
    "compile",
    "heuristics",
    "jit",
    "set_backend",
    "testing",
    "to_device",
]
