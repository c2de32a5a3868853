"""Ops are named by their classes outside their dialects: no op-name string literal (a key of the
op registry, such as "tile.load") appears in core or plugin code outside `dialects/` and `ir/`,
but for the `name = "..."` of an op class a plugin declares (a plugin's own dialect). The registry
holds every plugin's ops: the plugins are loaded first, whatever ran before.

Lowerings, interpreter handlers, axis-info rules and frontend emission are registered by op class,
and what several ops share is a trait; a name string would bypass both."""

from __future__ import annotations

import ast
from pathlib import Path

import tilec.dialects  # noqa: F401  (fills the registry)
from tilec.ir.core import OP_REGISTRY
from tilec.plugin.manager import load_backends, load_ir_modules

load_backends()
load_ir_modules()  # the plugins' own ops (deferred past load_backends), whatever ran before

ROOT = Path(__file__).resolve().parents[1]
CORE = ROOT / "core" / "tilec"
EXEMPT = (CORE / "dialects", CORE / "ir")  # the op declarations, the parser and the printer


def _declarations(tree: ast.AST) -> set[int]:
    """The `name = "..."` constants of class bodies: an op class declaring its name."""
    return {
        id(stmt.value)
        for cls in ast.walk(tree)
        if isinstance(cls, ast.ClassDef)
        for stmt in cls.body
        if isinstance(stmt, ast.Assign | ast.AnnAssign)
        for target in (stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target])
        if isinstance(target, ast.Name) and target.id == "name"
    }


def op_name_literals(path: Path) -> list[str]:
    tree = ast.parse(path.read_text(), filename=str(path))
    declared = _declarations(tree)
    return [
        f"{path}:{node.lineno}: {node.value!r}"
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant) and isinstance(node.value, str)
        if node.value in OP_REGISTRY and id(node) not in declared
    ]


def source_files() -> list[Path]:
    files = sorted(CORE.rglob("*.py")) + sorted((ROOT / "plugins").rglob("*.py"))
    return [p for p in files if not any(p.is_relative_to(folder) for folder in EXEMPT)]


def test_the_scan_sees_the_code():
    names = {p.relative_to(ROOT).as_posix() for p in source_files()}
    assert "core/tilec/lowering/elementwise.py" in names
    assert "plugins/interp/tilec_interp/interpreter.py" in names
    assert "core/tilec/dialects/tile.py" not in names


def test_no_op_name_strings_outside_the_dialects():
    found = [hit for path in source_files() for hit in op_name_literals(path)]
    assert not found, "op-name strings (use the op class or a trait):\n" + "\n".join(found)


def test_the_check_finds_an_op_name(tmp_path):
    sample = tmp_path / "sample.py"
    sample.write_text('if op.name == "tile.load":\n    pass\n')
    assert op_name_literals(sample) == [f"{sample}:1: 'tile.load'"]


def test_an_op_class_declaring_its_name_is_no_use_of_it(tmp_path):
    sample = tmp_path / "sample.py"
    sample.write_text('class WarpGroupDotOp:\n    name = "gpu.warp_group_dot"\n'
                      'KIND = "gpu.warp_group_dot"\n')  # fmt: skip
    assert "gpu.warp_group_dot" in OP_REGISTRY  # the nvidia plugin's op, loaded above
    assert op_name_literals(sample) == [f"{sample}:3: 'gpu.warp_group_dot'"]
