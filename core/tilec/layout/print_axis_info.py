"""The `print-axis-info` pass: write the `axis-info` analysis of every value to stderr.

One line per named tensor or integer/pointer value, in the order the printer names them::

    %offsets: contiguity = [1024], divisibility = [1024], constancy = [1]

For golden tests (`tilec opt FILE --passes print-axis-info 2>&1 | filecheck FILE`); it leaves the
IR unchanged and runs only when named.
"""

from __future__ import annotations

import sys
from typing import TextIO

from tilec.dialects.func import FuncOp
from tilec.ir.core import Block, Operation, Value
from tilec.ir.printer import Printer
from tilec.ir.types import FloatType, element_type
from tilec.passes.base import ModulePass, PassContext


class PrintAxisInfo(ModulePass):
    name = "print-axis-info"
    stage = "tir"
    description = "print the axis-info analysis of every value (to stderr)"
    requires = ("axis-info",)
    invalidates = ()
    default_pipeline = False

    stream: TextIO | None = None

    def run(self, module: Operation, context: PassContext) -> bool:
        result = context.get_analysis("axis-info")
        stream = self.stream or sys.stderr
        for func in (op for op in module.walk() if isinstance(op, FuncOp)):
            stream.write(f"axis-info of @{func.name_str}:\n")
            printer = Printer()
            for value in _values_in_print_order(func):
                name = printer.define(value)
                if not isinstance(element_type(value.type), FloatType):
                    stream.write(f"  {name}: {result.get(value)}\n")
        return False


def _values_in_print_order(func: FuncOp) -> list[Value]:
    """Values in the order `tilec.ir.printer` defines their names."""
    values: list[Value] = list(func.entry_block.args)
    _block_values(func.entry_block, values)
    return values


def _block_values(block: Block, values: list[Value]) -> None:
    for op in block.ops:
        values.extend(op.results)
        for region in op.regions:
            for block_ in region.blocks:
                values.extend(block_.args)
                _block_values(block_, values)
