"""The import graph of `core/tilec`: no circles, the layering rules of DESIGN.md, and a reason on
every import made inside a function.

The graph is drawn from the source with `ast`, every import counted, those inside functions too
(only `if TYPE_CHECKING:` blocks are left out: they never run). `from package import name` is an
edge to `package.name` where that is a module, else to `package`.
"""

from __future__ import annotations

import ast
import functools
from collections.abc import Iterator
from pathlib import Path

import attrs

CORE = Path(__file__).resolve().parents[1] / "core" / "tilec"

LAYERS: list[tuple[str, tuple[str, ...], str]] = [
    # (importer prefix, imported prefixes it must not reach, the rule)
    ("tilec.ir", ("tilec",), "ir/ imports nothing else of tilec"),
    *(
        (
            f"tilec.{low}",
            ("tilec.runtime", "tilec.frontend", "tilec.cli", "tilec.plugin", "tilec.pipeline"),
            f"{low}/ never imports runtime/, frontend/, cli, plugin/ or the compile pipeline",
        )
        for low in ("passes", "layout", "lowering")
    ),
    ("tilec.passes", ("tilec.layout",), "passes/ never imports layout/ (built-ins register in "
     "tilec.builtin_passes)"),
    ("tilec.backend", ("tilec.plugin", "tilec.pipeline"), "the Backend base never calls the "
     "plugin host or the pipeline"),
]  # fmt: skip


@attrs.frozen
class Import:
    importer: str
    imported: str
    line: int
    in_function: bool
    explained: bool


def module_name(path: Path) -> str:
    parts = list(path.relative_to(CORE.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {module_name(path): path for path in sorted(CORE.rglob("*.py"))}


def owner_module(name: str) -> str | None:
    """The module of `tilec` that `name` (a module or a name in one) lives in."""
    while name and name not in MODULES:
        name = name.rpartition(".")[0]
    return name or None


@functools.cache
def imports_of(module: str) -> tuple[Import, ...]:
    return tuple(_imports_of(module))


def _imports_of(module: str) -> Iterator[Import]:
    path = MODULES[module]
    source = path.read_text()
    lines = source.splitlines()
    tree = ast.parse(source)
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    yield from _visit(tree, module, package, lines, in_function=False)


def _visit(node: ast.AST, module: str, package: str, lines: list[str], in_function: bool):
    for child in ast.iter_child_nodes(node):
        if isinstance(child, ast.If) and "TYPE_CHECKING" in ast.unparse(child.test):
            yield from (_visit(n, module, package, lines, in_function) for n in child.orelse)
            continue
        if isinstance(child, (ast.Import, ast.ImportFrom)):
            explained = _explained(child, lines)
            for target in _targets(child, package):
                yield Import(module, target, child.lineno, in_function, explained)
            continue
        inner = in_function or isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef))
        yield from _visit(child, module, package, lines, inner)


def _targets(node: ast.Import | ast.ImportFrom, package: str) -> list[str]:
    if isinstance(node, ast.Import):
        return [alias.name for alias in node.names]
    base = node.module or ""
    if node.level:
        parts = package.split(".")[: len(package.split(".")) - node.level + 1]
        base = ".".join([*parts, base] if base else parts)
    return [
        f"{base}.{alias.name}" if f"{base}.{alias.name}" in MODULES else base
        for alias in node.names
    ]


def _explained(node: ast.stmt, lines: list[str]) -> bool:
    """A `# deferred: reason` on the import's lines or the comment lines just above it (above
    a run of imports, it explains all of them)."""
    own = lines[node.lineno - 1 : node.end_lineno]
    if any("# deferred:" in line for line in own):
        return True
    index = node.lineno - 2
    while index >= 0:
        text = lines[index].strip()
        if text.startswith("# deferred:"):
            return True
        if not (text.startswith(("from ", "import ", "#")) or text.endswith((",", "(", ")"))):
            return False
        index -= 1
    return False


def all_imports() -> list[Import]:
    return [imp for module in MODULES for imp in imports_of(module)]


def core_graph() -> dict[str, set[str]]:
    graph: dict[str, set[str]] = {module: set() for module in MODULES}
    for imp in all_imports():
        target = owner_module(imp.imported) if imp.imported.startswith("tilec.") else None
        if imp.imported == "tilec":
            target = "tilec"
        if target is not None and target != imp.importer:
            graph[imp.importer].add(target)
    return graph


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One circle of imports (`[a, b, a]`), or None."""
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    path: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        path.append(node)
        for succ in sorted(graph.get(node, ())):
            if state.get(succ) == 1:
                return [*path[path.index(succ) :], succ]
            if succ not in state:
                found = visit(succ)
                if found:
                    return found
        path.pop()
        state[node] = 2
        return None

    for start in sorted(graph):
        if start not in state:
            found = visit(start)
            if found:
                return found
    return None


def test_the_graph_sees_imports_inside_functions():
    graph = core_graph()
    assert "tilec.lowering" in graph["tilec.pipeline.stages"]  # imported inside make_llir
    assert "tilec.ir" in graph["tilec.pipeline.stages"]


def test_find_cycle_names_a_cycle():
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    cycle = find_cycle(graph)
    assert cycle is not None and set(cycle) >= {"a", "b", "c"} and "d" not in cycle
    assert find_cycle({"a": {"b"}, "b": set()}) is None


def test_no_import_cycles_among_core_modules():
    cycle = find_cycle(core_graph())
    assert cycle is None, f"import cycle: {' -> '.join(cycle or ())}"


def within(name: str, prefix: str) -> bool:
    """Whether module (or name) `name` is `prefix` or inside it."""
    return name == prefix or name.startswith(prefix + ".")


def test_layering_rules():
    broken = [
        f"{imp.importer}:{imp.line} imports {imp.imported} ({rule})"
        for imp in all_imports()
        for layer, forbidden, rule in LAYERS
        if within(imp.importer, layer)
        and not within(imp.imported, layer)
        and any(within(imp.imported, prefix) for prefix in forbidden)
    ]
    assert not broken, "\n".join(broken)


def test_nothing_in_core_imports_a_plugin():
    plugins = [
        f"{imp.importer}:{imp.line} imports {imp.imported}"
        for imp in all_imports()
        if imp.imported.split(".")[0].startswith("tilec_")
    ]
    assert not plugins, "\n".join(plugins)


def test_every_import_inside_a_function_says_why():
    unexplained = sorted(
        {
            f"{imp.importer}:{imp.line} imports {imp.imported}"
            for imp in all_imports()
            if imp.in_function and not imp.explained
        }
    )
    assert not unexplained, (
        "move these imports to the top of the module, or say why they wait with a "
        "'# deferred: reason' comment:\n" + "\n".join(unexplained)
    )
