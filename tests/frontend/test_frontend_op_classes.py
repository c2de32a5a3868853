"""The frontend emits ops through their classes, never by op-name string."""

from __future__ import annotations

from pathlib import Path

import tilec.frontend.semantics as semantics
from tilec.frontend.builtins import UNARY_MATH
from tilec.ir.core import OP_REGISTRY

FRONTEND = Path(semantics.__file__).parent


def test_operator_tables_hold_registered_op_classes():
    tables = [semantics.INT_BINARY, semantics.UNSIGNED_BINARY, semantics.FLOAT_BINARY, UNARY_MATH]
    for table in tables:
        for op_class in table.values():
            assert OP_REGISTRY[op_class.name] is op_class
