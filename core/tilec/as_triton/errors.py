"""`triton.errors`, `triton.runtime.errors` and `triton.compiler.errors` under the alias: Triton's
exception classes are tilec's, so `except triton.TritonError` catches tilec's errors.

- `TritonError`: `tilec.TilecError`, the base of every error tilec raises for a user's mistake.
- `CompilationError`: `tilec.CompilationError` (a kernel tilec cannot compile, located).
- `OutOfResources`: `tilec.DeviceLimitError` (a launch that needs more than the device has).
- `InterpreterError`: the interp backend's error (an out-of-bounds access, a failed assert).
- `PTXASError`: the nvidia backend's code generation error (ptxas refused the PTX).

The last two live in their backend's plugin and are loaded on first use; without that plugin,
the name is an `ImportError`/`AttributeError` saying so.
"""

from __future__ import annotations

import importlib
from typing import Any

from tilec.errors import DeviceLimitError as OutOfResources
from tilec.errors import TilecError as TritonError
from tilec.frontend import CompilationError

_PLUGIN_ERRORS = {
    "InterpreterError": ("tilec_interp.memory", "InterpreterError", "interp"),
    "PTXASError": ("tilec_nvidia.codegen", "CodegenError", "nvidia"),
}


def plugin_error(module: str, name: str) -> Any:
    """`InterpreterError` or `PTXASError` for a module's `__getattr__`; any other name is the
    AttributeError of `module` (a Triton module name)."""
    if name not in _PLUGIN_ERRORS:
        raise AttributeError(f"module '{module}' (tilec.as_triton) has no attribute {name!r}")
    module_name, attribute, plugin = _PLUGIN_ERRORS[name]
    try:
        found = importlib.import_module(module_name)  # the plugin's, loaded on first use
    except ImportError:
        raise AttributeError(
            f"{module}.{name} is the {plugin} backend's error, and tilec's {plugin} plugin "
            f"is not installed (install tilec's {plugin} plugin)"
        ) from None
    return getattr(found, attribute)


def __getattr__(name: str) -> Any:
    return plugin_error("triton.errors", name)


__all__ = ["CompilationError", "OutOfResources", "TritonError"]  # and the plugins' two
