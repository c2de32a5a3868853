"""The layout passes act on ops by class (and trait), never by op-name string."""

from __future__ import annotations

import tilec.layout.transfer as transfer
from tilec.ir.core import OP_REGISTRY, Operation


def test_axis_info_rules_are_keyed_by_registered_op_classes():
    assert transfer.RULES
    for op_class in transfer.RULES:
        assert isinstance(op_class, type) and issubclass(op_class, Operation)
        assert OP_REGISTRY[op_class.name] is op_class
