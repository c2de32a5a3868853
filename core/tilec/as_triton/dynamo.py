"""torch's Dynamo and tilec's own code under the alias.

Dynamo compiles the Python frames that a compiled function calls, but for the modules it skips
(torch's own, NumPy, Triton's backends, ...). A launch of a tilec kernel that Dynamo does not put
in its graph (a `@triton.heuristics` kernel, an autotuned one with hooks, which Dynamo refuses)
runs tilec's launcher, which Dynamo would try to compile frame by frame, failing inside tilec on
what it cannot trace (DLPack devices, `data_ptr`). `skip_tilec` adds tilec's modules (but
`tilec.language`, whose `cdiv` grids call) and the packages of its installed plugins to Dynamo's
skipped modules (`torch._dynamo.trace_rules.add`): Dynamo then breaks the graph at such a launch,
which runs as it does without `torch.compile`. Where Dynamo
is not loaded yet, a finder on `sys.meta_path` does it when Dynamo loads `trace_rules`.
`unskip_tilec` (the alias removed) takes them out again.
"""

from __future__ import annotations

import importlib.abc
import importlib.util
import pkgutil
import sys
from importlib.metadata import entry_points
from typing import Any

import tilec

TRACE_RULES = "torch._dynamo.trace_rules"
_added: list[str] = []
"""The folders `skip_tilec` added to Dynamo's `SKIP_DIRS`."""


def _packages() -> list[str]:
    """tilec's modules but `tilec.language` (whose `cdiv` and `next_power_of_2` grid functions
    call, which Dynamo traces), and the top-level packages of the installed plugins (entry
    point group `tilec`)."""
    own = [f"tilec.{m.name}" for m in pkgutil.iter_modules(tilec.__path__) if m.name != "language"]
    plugins = {ep.value.split(":")[0].split(".")[0] for ep in entry_points(group="tilec")}
    return [*own, *sorted(plugins - {"tilec"})]


def _add_to(rules: Any) -> None:
    before = list(rules.SKIP_DIRS)
    for package in _packages():
        rules.add(package)
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
