"""torch's Dynamo and tilec's own code under the alias.

Dynamo compiles the Python frames that a compiled function calls, but for the modules it skips
(torch's own, NumPy, Triton's backends, ...). A launch of a tilec kernel that Dynamo does not put
in its graph (an autotuned kernel with hooks, which Dynamo refuses) runs tilec's launcher, which
Dynamo would try to compile frame by frame, failing inside tilec on what it cannot trace (DLPack
devices, `data_ptr`). `skip_tilec` adds tilec's modules (but `TRACED`: `tilec.language`, whose
`cdiv` grids call, and the alias's heuristics launch) and the packages of its installed plugins
to Dynamo's skipped modules (`torch._dynamo.trace_rules.add`): Dynamo then breaks the graph at
such a launch, which runs as it does without `torch.compile`. Where Dynamo is not loaded yet, a
finder on `sys.meta_path` does it when Dynamo loads `trace_rules`.
`unskip_tilec` (the alias removed) takes them out again.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.util
import pkgutil
import sys
from importlib.metadata import entry_points
from pathlib import Path
from typing import Any

import tilec

TRACE_RULES = "torch._dynamo.trace_rules"
_added: list[str] = []
"""The folders `skip_tilec` added to Dynamo's `SKIP_DIRS`."""


TRACED = ("tilec.language", "tilec.as_triton.heuristics")
"""What Dynamo traces: `tilec.language` (whose `cdiv` and `next_power_of_2` grid functions call)
and the alias's heuristics launch (Triton's `Heuristics.run`, which Dynamo traces into its
graph)."""


def _modules(package: Any) -> list[str]:
    """The modules of `package` to skip: a package holding a traced module by its modules."""
    names = []
    for found in pkgutil.iter_modules(package.__path__, f"{package.__name__}."):
        if found.name in TRACED:
            continue
        if any(t.startswith(f"{found.name}.") for t in TRACED):
            names += _modules(importlib.import_module(found.name))
        else:
            names.append(found.name)
    return names


def _packages() -> list[str]:
    """tilec's modules but the `TRACED` ones, and the top-level packages of the installed
    plugins (entry point group `tilec`)."""
    plugins = {ep.value.split(":")[0].split(".")[0] for ep in entry_points(group="tilec")}
    return [*_modules(tilec), *sorted(plugins - {"tilec"})]


def _add_to(rules: Any) -> None:
    before = list(rules.SKIP_DIRS)
    for package in _packages():
        rules.add(package)
    alias = importlib.import_module("tilec.as_triton").__file__  # the split package's __init__
    rules.SKIP_DIRS.append(Path(alias).as_posix())
    rules._recompile_re()
    _added.extend(d for d in rules.SKIP_DIRS if d not in before)


class _WhenLoaded(importlib.abc.MetaPathFinder):
    """Finds `torch._dynamo.trace_rules` as the other finders do and adds tilec's packages once
    the module has run."""

    def find_spec(self, fullname: str, path: Any = None, target: Any = None) -> Any:
        if fullname != TRACE_RULES:
            return None
        sys.meta_path.remove(self)  # once; the other finders find the module
        spec = importlib.util.find_spec(fullname)
        if spec is None or spec.loader is None:
            return spec
        run = spec.loader.exec_module

        def exec_module(module: Any) -> None:
            run(module)
            _add_to(module)

        spec.loader.exec_module = exec_module
        return spec


_finder = _WhenLoaded()


def skip_tilec() -> None:
    rules = sys.modules.get(TRACE_RULES)
    if rules is not None:
        if not _added:
            _add_to(rules)
    elif _finder not in sys.meta_path:
        sys.meta_path.insert(0, _finder)


def unskip_tilec() -> None:
    if _finder in sys.meta_path:
        sys.meta_path.remove(_finder)
    rules = sys.modules.get(TRACE_RULES)
    if rules is not None and _added:
        for folder in _added:
            if folder in rules.SKIP_DIRS:
                rules.SKIP_DIRS.remove(folder)
        rules._recompile_re()
    _added.clear()
