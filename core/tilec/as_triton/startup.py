"""The `TILEC_AS_TRITON=1` hook, loaded at every interpreter start by a one-line `.pth` file
that `python -m tilec.as_triton --install-hook` writes into the environment's site-packages.

Why a `.pth` file: it is the standard start-up hook of `site` (sitecustomize is one module per
environment that others own), it is installed only on request and removed with
`--uninstall-hook`. The line loads this file by its path, without importing tilec (about a second
that a process that never imports triton should not pay), and puts `TritonHook` on
`sys.meta_path`, ahead of the path finder. Only when a program first imports `triton` does the
hook import `tilec.settings` and read `TILEC_AS_TRITON` there (the one reader of tilec's
variables); when it is on, the alias answers, even where a real Triton is installed; else the
import goes on to whatever else provides `triton` (a real Triton).

This file imports nothing of tilec at its top: it runs before tilec is importable.
"""

from __future__ import annotations

import importlib
import importlib.abc
import sys
from typing import Any

PTH_NAME = "tilec_as_triton.pth"


class TritonHook(importlib.abc.MetaPathFinder):
    def find_spec(self, fullname: str, path: Any = None, target: Any = None) -> Any:
        if fullname != "triton":
            return None
        settings = importlib.import_module("tilec.settings")
        if not settings.AS_TRITON.enabled():
            return None
        importlib.import_module("tilec.as_triton")  # puts the alias first on sys.meta_path
        return importlib.import_module("tilec.as_triton.finder").TritonAlias().find_spec(fullname)


def install() -> None:
    if not any(type(f).__name__ == "TritonHook" for f in sys.meta_path):
        sys.meta_path.insert(0, TritonHook())  # before the path finder: ahead of a real Triton


def pth_line(path: str) -> str:
    """The `.pth` line that loads this file (`path`) and calls `install()`; nothing happens
    when the file is gone (tilec uninstalled)."""
    return (
        "import importlib.util as _u, os as _o; _p = " + repr(path) + "; "
        "_s = _o.path.exists(_p) and _u.spec_from_file_location('_tilec_as_triton_startup', _p); "
        "_m = _s and _u.module_from_spec(_s); _s and (_s.loader.exec_module(_m), _m.install())\n"
    )
