"""The import hook behind `tilec.as_triton`: a meta path finder that answers `triton` and
`triton.*` with tilec's modules (or the small facades of this package), so that
`sys.modules["triton.language"] is tilec.language`.

`ALIASES` maps each Triton module to the tilec module that stands for it. A Triton module with no
tilec equivalent is a `ModuleNotFoundError` (an `ImportError`: code that probes with
`try: import triton.x` sees it absent) that names the module and says what tilec has instead;
nothing is imported from a real Triton installation while the alias is active.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import logging
import sys
from types import ModuleType
from typing import Any

log = logging.getLogger("tilec.as_triton")

ALIASES: dict[str, str] = {
    "triton": "tilec.as_triton.top",
    "triton.language": "tilec.language",
    "triton.language.extra": "tilec.language.extra",
    "triton.language.extra.libdevice": "tilec.language.extra.libdevice",
    "triton.language.extra.cuda": "tilec.language.extra.cuda",
    "triton.language.extra.cuda.libdevice": "tilec.language.extra.cuda.libdevice",
    "triton.language.math": "tilec.language.math",
    "triton.language.random": "tilec.language.random",
    "triton.language.core": "tilec.as_triton.language_core",
    "triton.language.standard": "tilec.as_triton.language_core",
    "triton.runtime": "tilec.as_triton.runtime",
    "triton.runtime.jit": "tilec.as_triton.jit",
    "triton.runtime.autotuner": "tilec.as_triton.runtime",
    "triton.runtime.errors": "tilec.as_triton.errors",
    "triton.runtime.driver": "tilec.as_triton.driver",
    "triton.runtime.cache": "tilec.as_triton.cache",
    "triton.runtime._allocation": "tilec.as_triton.allocation",
    "triton.testing": "tilec.testing",
    "triton.compiler": "tilec.as_triton.compiler",
    "triton.compiler.compiler": "tilec.as_triton.compiler",
    "triton.compiler.errors": "tilec.as_triton.errors",
    "triton.errors": "tilec.as_triton.errors",
    "triton.knobs": "tilec.as_triton.knobs",
    "triton.backends": "tilec.as_triton.backends",
    "triton.backends.compiler": "tilec.as_triton.backends",
    "triton.tools": "tilec.as_triton.tools",
    "triton.tools.tensor_descriptor": "tilec.as_triton.tools",
}
"""Triton module -> the tilec module that stands for it."""

EAGER: dict[str, tuple[str, ...]] = {
    "triton": ("triton.language.core", "triton.language.standard"),
}
"""Submodules imported with a module, as Triton's `__init__` files import them (programs read
`triton.language.core` without importing it)."""

PREFIX = "triton"


def is_triton_name(fullname: str) -> bool:
    return fullname == PREFIX or fullname.startswith(PREFIX + ".")


class _AliasLoader(importlib.abc.Loader):
    """Loads a Triton name as the tilec module itself (not a copy): the import system stores
    that module under the Triton name and sets it as its parent's attribute."""

    def __init__(self, name: str, target: str):
        self.name = name
        self.target = target

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType:
        module = importlib.import_module(self.target)
        self.own_spec = module.__spec__
        return module

    def exec_module(self, module: ModuleType) -> None:
        """The tilec module ran when `create_module` imported it; the submodules Triton's
        `__init__` would import come now (the module is in `sys.modules` by this time). The
        import system gave the module the Triton name's spec: its own comes back, so that tilec
        keeps seeing `tilec.language` as itself (relative imports, reloads)."""
        module.__spec__ = self.own_spec
        for name in EAGER.get(self.name, ()):
            importlib.import_module(name)


class TritonAlias(importlib.abc.MetaPathFinder):
    """Answers `triton` and `triton.*` (see the module's docstring)."""

    def find_spec(self, fullname: str, path: Any = None, target: Any = None) -> Any:
        if not is_triton_name(fullname):
            return None
        module = ALIASES.get(fullname)
        if module is None:
            raise ModuleNotFoundError(
                f"tilec.as_triton: Triton's module '{fullname}' has no tilec equivalent (the "
                f"alias provides {', '.join(sorted(ALIASES))}); import it from a real Triton "
                "installation without the alias, or file an issue naming what the program "
                "needs from it",
                name=fullname,
            )
        return importlib.machinery.ModuleSpec(fullname, _AliasLoader(fullname, module))


_finder = TritonAlias()


def active() -> bool:
    return _finder in sys.meta_path


def activate() -> None:
    """Put the alias first on `sys.meta_path`. A real Triton already imported in this process
    cannot be replaced in the modules that hold it: that is an error saying so."""
    if active():
        return
    real = sys.modules.get(PREFIX)
    if real is not None and not getattr(real, "__tilec_alias__", False):
        torch = (
            " (torch._dynamo, imported already, imports it where Triton is installed; "
            "torch._inductor and torch.compile load torch._dynamo)"
            if "torch._dynamo" in sys.modules
            else ""
        )
        raise ImportError(
            "tilec.as_triton: a real Triton was imported before the alias "
            f"({getattr(real, '__file__', real)!r}); import tilec.as_triton (or run the "
            f"program with `python -m tilec.as_triton`) before anything imports triton{torch}"
        )
    sys.meta_path.insert(0, _finder)
    from tilec.as_triton import inductor  # deferred: a sibling that needs the finder installed

    inductor.apply()


def deactivate() -> None:
    """Remove the alias, forget the `triton` modules it gave and let torch's Inductor look for
    Triton again (tests, tools)."""
    if _finder not in sys.meta_path:
        return
    sys.meta_path.remove(_finder)
    for name in [n for n in sys.modules if is_triton_name(n)]:
        del sys.modules[name]
    from tilec.as_triton import inductor  # deferred: a sibling that needs the finder installed

    inductor.restore()
