"""The top-level container op, `builtin.module`, which holds functions."""

from __future__ import annotations

from collections.abc import Iterator

from tilec.ir.attributes import StringAttr
from tilec.ir.core import Block, Operation, Region, VerifyError, region_def, register_op
from tilec.ir.printer import print_module
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
        return next((f for f in self.functions if _symbol(f) == symbol), None)

    def verify_(self) -> None:
        seen: set[str] = set()
        for function in self.functions:
            name = _symbol(function)
            if name is None:
                continue  # a malformed `sym_name` is reported when the function is verified
            if name in seen:
                raise VerifyError(f"redefinition of function @{name}", function)
            seen.add(name)

    def __str__(self) -> str:
        return print_module(self)


def _symbol(function: Operation) -> str | None:
    """The function's name, or None when its `sym_name` is missing or not a string."""
    name = function.attributes.get("sym_name")
    return name.value if isinstance(name, StringAttr) else None
