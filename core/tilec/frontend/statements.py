"""Statements: assignments, expression statements, returns, asserts and rejected constructs."""

from __future__ import annotations

import ast
from typing import Any

from tilec.frontend.context import TensorValue
from tilec.frontend.errors import UserError
from tilec.frontend.expressions import BINARY_SYMBOLS

UNSUPPORTED = {
    ast.Try: ("try/except is not supported in kernels", "check conditions with tl.where or if"),
    ast.With: ("'with' is not supported in kernels", "remove the with block"),
    ast.ClassDef: ("classes cannot be defined in kernels", "define them outside the kernel"),
    ast.FunctionDef: ("functions cannot be nested in kernels", "define a @tilec.jit function"),
    ast.Global: ("kernels cannot change globals", "pass values as arguments and store results"),
    ast.Nonlocal: ("kernels cannot change enclosing variables", "return values instead"),
    ast.Delete: ("'del' is not supported in kernels", "remove it"),
    ast.Raise: ("'raise' is not supported in kernels", "use tl.static_assert"),
    ast.Import: ("imports are not allowed in kernels", "import at module level"),
    ast.ImportFrom: ("imports are not allowed in kernels", "import at module level"),
}


def lift_returns(statements: list[ast.stmt]) -> list[ast.stmt]:
    """`statements` with the ones after an `if` that may return moved into each of its branches
    that does not always return (as Python runs them), so that every `return` ends its block and
    an `if` on a runtime value can yield what its branches return."""
    for i, statement in enumerate(statements):
        if isinstance(statement, ast.If) and any(
            isinstance(n, ast.Return) for n in ast.walk(statement)
        ):
            rest = statements[i + 1 :]
            body, orelse = (
                lift_returns(block if _always_returns(block) else block + rest)
                for block in (statement.body, statement.orelse)
            )
            lifted = ast.copy_location(
                ast.If(test=statement.test, body=body, orelse=orelse), statement
            )
            return [*statements[:i], lifted]
    return statements


def _always_returns(statements: list[ast.stmt]) -> bool:
    return any(
        isinstance(s, ast.Return)
        or (isinstance(s, ast.If) and _always_returns(s.body) and _always_returns(s.orelse))
        for s in statements
    )


class StatementsMixin:
    def visit_body(self, statements: list[ast.stmt]) -> None:
        for statement in lift_returns(statements):
            if self.returned is not None:
                return  # the rest is dead code, as in Python
            self.visit(statement)

    def check_no_return(self, what: str) -> None:
        if self.returned is not None:
            raise UserError(
                f"'return' inside {what} is not supported yet",
                "assign the result to a variable and return it at the end of the function",
            )

    def visit_Assign(self, node: ast.Assign) -> None:
        value = self.visit(node.value)
        for target in node.targets:
            self.assign(target, value)

    def visit_AnnAssign(self, node: ast.AnnAssign) -> None:
        if node.value is None:
            return
        value = self.visit(node.value)
        self.assign(node.target, value)
        if ast.unparse(node.annotation).split(".")[-1] == "constexpr":  # x: tl.constexpr = 1
            self.number_names.discard(getattr(node.target, "id", None))

    def visit_AugAssign(self, node: ast.AugAssign) -> None:
        if not isinstance(node.target, ast.Name):
            raise UserError(
                "only augmented assignments to names are supported",
                "store to memory with tl.store(pointer, value)",
            )
        current = self.visit(ast.Name(id=node.target.id, ctx=ast.Load()))
        self.assign(
            node.target,
            self.apply_binary(BINARY_SYMBOLS[type(node.op)], current, self.visit(node.value)),
        )

    def assign(self, target: ast.expr, value: Any) -> None:
        if isinstance(target, ast.Name):
            if isinstance(value, TensorValue) and value.value.name_hint is None:
                value.value.name_hint = target.id
            self.scope[target.id] = value
            if type(value) in (int, float, bool):  # a number by a plain assignment (`x = 1`)
                self.number_names.add(target.id)
            else:
                self.number_names.discard(target.id)
            return
        if isinstance(target, (ast.Tuple, ast.List)):
            if not isinstance(value, tuple) or len(value) != len(target.elts):
                raise UserError("cannot unpack: the number of values does not match")
            for element, item in zip(target.elts, value, strict=True):
                self.assign(element, item)
            return
        raise UserError(
            "only assignments to names are supported",
            "store to memory with tl.store(pointer, value)",
        )

    def visit_Expr(self, node: ast.Expr) -> None:
        if isinstance(node.value, ast.Constant) and isinstance(node.value.value, str):
            return
        self.visit(node.value)

    def visit_Pass(self, node: ast.Pass) -> None:
        pass

    def visit_Return(self, node: ast.Return) -> None:
        self.returned = self.visit(node.value) if node.value is not None else ()

    def visit_Assert(self, node: ast.Assert) -> None:
        condition = self.visit(node.test)
        if isinstance(condition, TensorValue):  # Triton compiles it as tl.device_assert
            message = self.visit(node.msg) if node.msg is not None else ""
            self.builtins.call("device_assert", [condition, message], {})
            return
        if not condition:
            raise UserError("assertion failed at compile time")

    def generic_visit(self, node: ast.AST) -> Any:
        message, hint = UNSUPPORTED.get(
            type(node), (f"{type(node).__name__} is not supported in kernels", "")
        )
        raise UserError(message, hint)
