"""The top-level container op, `builtin.module`, which holds functions."""

from __future__ import annotations

from collections.abc import Iterator

from tilec.ir.core import Block, Operation, Region, region_def, register_op
from tilec.ir.traits import IsolatedFromAbove


@register_op
class ModuleOp(Operation):
    """Holds the functions of a compilation unit. Printed as its functions, one after another
    (or as `module attributes {...} { ... }` when it has attributes)."""

    name = "builtin.module"
    body_region = region_def()
    traits = (IsolatedFromAbove(),)

    def __init__(self, ops: list[Operation] | None = None):
        super().__init__(regions=[Region([Block()])])
        for op in ops or []:
            self.body.append(op)

    @property
    def body(self) -> Block:
        return self.regions[0].block

    @property
    def functions(self) -> Iterator[Operation]:
        return (op for op in self.body.ops if op.name == "func.func")

    def lookup(self, symbol: str) -> Operation | None:
        """The function named `symbol`, or None."""
        return next((f for f in self.functions if f.name_str == symbol), None)  # type: ignore[attr-defined]

    def __str__(self) -> str:
        from tilec.ir.printer import print_module

        return print_module(self)
