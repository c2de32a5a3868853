"""The AST visitor that ties expressions, statements and control flow together."""

from __future__ import annotations

import ast
import inspect
import linecache
from typing import Any

import tilec.dialects  # noqa: F401 - registers the ops
from tilec.frontend.builtins import Builtins
from tilec.frontend.context import Scope, TensorValue
from tilec.frontend.control_flow import ControlFlowMixin
from tilec.frontend.errors import CompilationError, UserError
from tilec.frontend.expressions import ExpressionsMixin, unwrap
from tilec.frontend.semantics import Semantics, op_class
from tilec.frontend.statements import StatementsMixin
from tilec.ir.attributes import FileLineColLoc, StringAttr, TypeAttr
from tilec.ir.builder import Builder
from tilec.ir.core import Block, Region
from tilec.ir.module import ModuleOp
from tilec.ir.types import FloatType, FunctionType, IntegerType, PointerType, Type
from tilec.language import constexpr
from tilec.runtime.jit import JITFunction

SCALAR_TYPES: dict[str, Type] = {
    "i1": IntegerType(1), "i8": IntegerType(8), "i16": IntegerType(16), "i32": IntegerType(32),
    "i64": IntegerType(64), "u8": IntegerType(8, True), "u16": IntegerType(16, True),
    "u32": IntegerType(32, True), "u64": IntegerType(64, True), "fp16": FloatType("f16"),
    "bf16": FloatType("bf16"), "fp32": FloatType("f32"), "fp64": FloatType("f64"),
}  # fmt: skip


def parse_signature_type(text: str) -> Type:
    """`*fp32` -> `!tile.ptr<f32>`, `i32` -> `i32`: Triton's signature strings."""
    if text.startswith("*"):
        return PointerType(parse_signature_type(text[1:]))
    if text not in SCALAR_TYPES:
        raise ValueError(f"unknown signature type {text!r}; expected one of {sorted(SCALAR_TYPES)}")
    return SCALAR_TYPES[text]


class CodeGenerator(ExpressionsMixin, StatementsMixin, ControlFlowMixin, ast.NodeVisitor):
    """Walks one kernel's AST, emitting tile IR at `builder` with the node's location."""

    def __init__(self, fn: JITFunction, builder: Builder, scope: Scope):
        self.fn, self.builder, self.scope = fn, builder, scope
        self.sem = Semantics(builder)
        self.builtins = Builtins(self.sem, self.inline_call)
        self.returned: Any = None

    def location(self, node: ast.AST) -> FileLineColLoc:
        line = self.fn.first_line + node.lineno - 1  # type: ignore[attr-defined]
        return FileLineColLoc(self.fn.file, line, node.col_offset + self.fn.indent + 1)  # type: ignore[attr-defined]

    def visit(self, node: ast.AST) -> Any:
        if not hasattr(node, "lineno"):
            return super().visit(node)
        loc = self.location(node)
        try:
            with self.builder.loc(loc):
                return super().visit(node)
        except UserError as err:
            line_text = linecache.getline(loc.file, loc.line).rstrip()
            raise CompilationError(
                err.message, loc.file, loc.line, loc.col, line_text, err.hint
            ) from None

    def inline_call(self, callee: JITFunction, args: list[Any], kwargs: dict[str, Any]) -> Any:
        """Calls to other @jit functions are inlined, so constexpr arguments stay constant."""
        tree = ast.parse(callee.src).body[0]
        assert isinstance(tree, ast.FunctionDef)
        params = [a.arg for a in tree.args.args]
        if len(args) > len(params):
            raise UserError(f"{callee.__name__}() takes {len(params)} arguments, got {len(args)}")
        bound = dict(zip(params, args, strict=False)) | kwargs
        defaults = dict(
            zip(params[len(params) - len(tree.args.defaults) :], tree.args.defaults, strict=True)
        )
        inner = CodeGenerator(callee, self.builder, Scope())
        for name in params:
            if name in bound:
                inner.scope[name] = bound[name]
            elif name in defaults:
                inner.scope[name] = inner.visit(defaults[name])
            else:
                raise UserError(f"{callee.__name__}() is missing the argument '{name}'")
        inner.visit_body(tree.body)
        return None if inner.returned == () else inner.returned


def compile_to_tir(
    fn: JITFunction, signature: dict[str, str], constexprs: dict[str, object] | None = None
) -> ModuleOp:
    """Compile kernel `fn` to a tile IR module holding one `func.func`.

    `signature` maps each runtime parameter to a Triton type string (`*fp32`, `i32`, ...);
    `constexprs` gives the values of the compile-time parameters.
    """
    constexprs = dict(constexprs or {})
    tree = ast.parse(fn.src).body[0]
    if not isinstance(tree, ast.FunctionDef):
        raise TypeError(f"{fn!r} is not a function")
    params = [a.arg for a in tree.args.args]
    runtime = [
        p
        for p in params
        if p not in constexprs and signature.get(p) != "constexpr" and not _is_constexpr(fn, p)
    ]
    for p in runtime:
        if p not in signature:
            raise TypeError(
                f"parameter '{p}' of {fn.__name__} has neither a signature type nor a constexpr value"
            )
    inputs = [parse_signature_type(signature[p]) for p in runtime]
    entry = Block(inputs)
    func = op_class("func.func").create(
        attributes={
            "sym_name": StringAttr(fn.__name__),
            "function_type": TypeAttr(FunctionType(inputs, [])),
        },
        regions=[Region([entry])],
    )
    module = ModuleOp([func])
    scope = Scope()
    for name, arg in zip(runtime, entry.args, strict=True):
        arg.name_hint = name
        scope[name] = TensorValue(arg)
    defaults = inspect.signature(fn.fn).parameters
    for name in params:
        if name in scope:
            continue
        if name in constexprs:
            scope[name] = constexprs[name]
        elif defaults[name].default is not inspect.Parameter.empty:
            scope[name] = unwrap(defaults[name].default)
        else:
            raise TypeError(f"constexpr parameter '{name}' of {fn.__name__} has no value")
    builder = Builder.at_end(entry)
    generator = CodeGenerator(fn, builder, scope)
    func.location = generator.location(tree)
    generator.visit_body(tree.body)
    if generator.returned not in (None, ()):
        raise TypeError(f"kernel {fn.__name__} must not return a value")
    with builder.loc(generator.location(tree)):
        builder.create(op_class("tile.return"))
    return module


def _is_constexpr(fn: JITFunction, param: str) -> bool:
    """Whether `param` is annotated `tl.constexpr` (also as a string, under postponed annotations)."""
    annotation = fn.fn.__annotations__.get(param)
    if isinstance(annotation, str):
        return annotation.split(".")[-1] == "constexpr"
    return annotation is constexpr or isinstance(annotation, constexpr)
