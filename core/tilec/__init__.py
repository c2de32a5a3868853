"""tilec: a plugin-based, multi-backend tile-level GPU kernel compiler framework."""

from tilec.language import cdiv
from tilec.runtime.jit import jit

__version__ = "0.1.0"

from tilec.runtime.compiler import compile, set_backend  # after __version__: imported by it


def to_device(array, backend: str | None = None):
    """A copy of the NumPy `array` in the memory of `backend` (default: the selected backend's
    device), usable as a kernel argument without copies; `.numpy()` copies it back. On the interp
    backend the array itself is returned."""
    from tilec.runtime.compiler import get_backend

    return get_backend(backend).driver.to_device(array)


__all__ = ["__version__", "cdiv", "compile", "jit", "set_backend", "to_device"]
