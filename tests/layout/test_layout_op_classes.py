"""The layout passes act on ops by class (and trait), never by op-name string."""

from __future__ import annotations

import ast
from pathlib import Path

import tilec.layout.transfer as transfer
from tilec.ir.core import OP_REGISTRY, Operation

LAYOUT = Path(transfer.__file__).parent
NOT_YET_CONVERTED = {"assignment.py"}  # the pipeline module; converted with the pipeline work


def op_name_literals(path: Path) -> list[str]:
    tree = ast.parse(path.read_text())
    return [
        f"{path.name}:{node.lineno}: {node.value!r}"
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant) and isinstance(node.value, str)
        if node.value in OP_REGISTRY
    ]


def test_layout_modules_name_no_ops():
    modules = [p for p in sorted(LAYOUT.glob("*.py")) if p.name not in NOT_YET_CONVERTED]
    found = [hit for path in modules for hit in op_name_literals(path)]
    assert not found, "op-name strings in tilec.layout:\n" + "\n".join(found)


def test_axis_info_rules_are_keyed_by_registered_op_classes():
    assert transfer.RULES
    for op_class in transfer.RULES:
        assert isinstance(op_class, type) and issubclass(op_class, Operation)
        assert OP_REGISTRY[op_class.name] is op_class
