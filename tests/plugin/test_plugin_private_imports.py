"""Plugins use only the core's public names (issue 21): a backend author copies from
`plugins/` and `examples/plugins/`, so what they import from `tilec` is the documented
contract. A name that starts with `_` (`from tilec.lowering.context import _where`, or
`context._where` on an imported core module) is a private helper that may change without
notice: give it a public name in the core (docs/backend-guide.md lists them) instead.
"""

from __future__ import annotations

import ast
import importlib.util
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PLUGIN_FOLDERS = (ROOT / "plugins", ROOT / "examples" / "plugins")


def _is_core(module: str) -> bool:
    return module == "tilec" or module.startswith("tilec.")


def _is_module(name: str) -> bool:
    try:
        return importlib.util.find_spec(name) is not None
    except (ImportError, ValueError):
        return False


def private_uses(source: str) -> list[tuple[int, str]]:
    """(line, what) of every private core name `source` imports or reads off a core module."""
    found: list[tuple[int, str]] = []
    modules: dict[str, str] = {}  # local name -> the core module it is
    tree = ast.parse(source)
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.level == 0 and _is_core(node.module or ""):
            for alias in node.names:
                if alias.name.startswith("_"):
                    found.append((node.lineno, f"from {node.module} import {alias.name}"))
                elif _is_module(f"{node.module}.{alias.name}"):
                    modules[alias.asname or alias.name] = f"{node.module}.{alias.name}"
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if not _is_core(alias.name):
                    continue
                if any(part.startswith("_") for part in alias.name.split(".")):
                    found.append((node.lineno, f"import {alias.name}"))
                modules[alias.asname or "tilec"] = alias.name if alias.asname else "tilec"
    for node in ast.walk(tree):
        if not isinstance(node, ast.Attribute):
            continue
        chain = [node.attr]
        base = node.value
        while isinstance(base, ast.Attribute):
            chain.append(base.attr)
            base = base.value
        if not isinstance(base, ast.Name) or base.id not in modules:
            continue
        dotted = [base.id, *reversed(chain)]
        private = next((part for part in dotted[1:] if part.startswith("_")), None)
        if private is not None and not private.startswith("__"):
            found.append((node.lineno, ".".join(dotted)))
    return sorted(set(found))


def test_the_scan_finds_private_core_names():
    source = (
        "from tilec.lowering.context import F32, _where\n"
        "from tilec.dialects import gpu\n"
        "import tilec.lowering.context as context\n"
        "import tilec\n"
        "x = gpu._ints\n"
        "y = context._where(None)\n"
        "z = tilec.dialects.gpu._array\n"
        "ok = gpu.ints_parameter, F32.__class__, context.location_prefix\n"
    )
    assert private_uses(source) == [
        (1, "from tilec.lowering.context import _where"),
        (5, "gpu._ints"),
        (6, "context._where"),
        (7, "tilec.dialects.gpu._array"),
    ]


def test_no_plugin_uses_a_private_core_name():
    uses = [
        f"{path.relative_to(ROOT)}:{line}: {what}"
        for folder in PLUGIN_FOLDERS
        for path in sorted(folder.rglob("*.py"))
        if ".egg-info" not in str(path)
        for line, what in private_uses(path.read_text())
    ]
    assert not uses, (
        "plugins use private names of the core (give each a public, documented name in the "
        "core, docs/backend-guide.md, and import that):\n" + "\n".join(uses)
    )
