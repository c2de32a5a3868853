"""The AST visitor that ties expressions, statements and control flow together."""

from __future__ import annotations

import ast
import linecache
from typing import Any

import tilec.dialects  # noqa: F401 - registers the ops
from tilec.dialects.func import FuncOp
from tilec.dialects.tile import ReturnOp
from tilec.errors import ArgumentValueError, LaunchArgumentError
from tilec.frontend import tuple_params
from tilec.frontend.builtins import Builtins
from tilec.frontend.context import Scope, TensorValue
from tilec.frontend.control_flow import ControlFlowMixin
from tilec.frontend.descriptors import from_parameter
from tilec.frontend.elementwise import IfConversionMixin
from tilec.frontend.errors import CompilationError, UserError
from tilec.frontend.expressions import ExpressionsMixin, unwrap
from tilec.frontend.kernel import KernelFunction
from tilec.frontend.semantics import Semantics
from tilec.frontend.statements import StatementsMixin
from tilec.ir.attributes import FileLineColLoc, StringAttr, TypeAttr
from tilec.ir.builder import Builder
from tilec.ir.core import Block, Region
from tilec.ir.module import ModuleOp
from tilec.ir.type_names import parse_signature_type
from tilec.ir.types import FunctionType
from tilec.ir.verifier import Diagnostic, verify
from tilec.language import const as tl_const

MAX_INLINE_DEPTH = 24
"""How deep calls of @jit functions may nest. The frontend inlines every call, so a recursion
must end at compile time (on constexpr arguments); deeper nesting would exhaust Python's stack."""


class CodeGenerator(
    ExpressionsMixin, StatementsMixin, ControlFlowMixin, IfConversionMixin, ast.NodeVisitor
):
    """Walks one kernel's AST, emitting tile IR at `builder` with the node's location."""

    def __init__(
        self, fn: KernelFunction, builder: Builder, scope: Scope, calls: tuple[str, ...] = ()
    ):
        self.fn, self.builder, self.scope = fn, builder, scope
        self.calls = calls
        """The @jit functions being inlined around this one, outermost first."""
        self.sem = Semantics(builder)
        self.builtins = Builtins(self.sem, self.inline_call)
        self.returned: Any = None
        self.elementwise = False
        """Inside a function `tl.map_elementwise` maps (inlined on tensors, if-converted)."""
        self.number_names: set[str] = set()
        """Names a plain assignment bound to a Python number (`x = 1`), which Triton makes a
        scalar tensor: their attributes are a tensor's (`x.dtype`, `x.to(tl.int64)`)."""
        self.lane_mask: TensorValue | None = None
        """The elements an if-converted branch applies to (`frontend/elementwise.py`)."""

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
            line_text = self.fn.line_text(loc.line)
            # the cause is the bare message, as Triton's CompilationError has its semantic
            # error as `__cause__` (which Triton's tests read)
            raise CompilationError(
                err.message, loc.file, loc.line, loc.col, line_text, err.hint
            ) from err.with_traceback(None)

    def inline_call(
        self,
        callee: KernelFunction,
        args: list[Any],
        kwargs: dict[str, Any],
        elementwise: bool = False,
    ) -> Any:
        """Calls to other @jit functions are inlined, so constexpr arguments stay constant;
        `elementwise`: the callee is mapped by `tl.map_elementwise`."""
        chain = (*self.calls, self.fn.__name__, callee.__name__)
        if len(chain) > MAX_INLINE_DEPTH:
            shown = " -> ".join((*chain[:3], "...", *chain[-2:]))
            raise UserError(
                f"calls of @jit functions nest deeper than {MAX_INLINE_DEPTH} levels ({shown}); "
                "tilec inlines every call, so a recursion must end at compile time",
                "end the recursion on a tl.constexpr argument, or rewrite it as a loop",
            )
        tree = ast.parse(callee.src).body[0]
        assert isinstance(tree, ast.FunctionDef)
        params = [a.arg for a in tree.args.args]
        if len(args) > len(params):
            raise UserError(f"{callee.__name__}() takes {len(params)} arguments, got {len(args)}")
        bound = dict(zip(params, args, strict=False)) | kwargs
        defaults = dict(
            zip(params[len(params) - len(tree.args.defaults) :], tree.args.defaults, strict=True)
        )
        inner = CodeGenerator(callee, self.builder, Scope(), (*self.calls, self.fn.__name__))
        inner.elementwise = self.elementwise or elementwise
        inner.builtins.const_pointers = self.builtins.const_pointers
        inner.set_lane_mask(self.lane_mask)
        for name in params:
            if name in bound:
                inner.scope[name] = bound[name]
            elif name in defaults:
                inner.scope[name] = inner.visit(defaults[name])
            else:
                raise UserError(f"{callee.__name__}() is missing the argument '{name}'")
        inner.visit_body(tree.body)
        return None if inner.returned == () else inner.returned


def _annotated_const(fn: KernelFunction, param: str) -> bool:
    """Whether `param` is annotated `tl.const` (a pointer to data the kernel only reads)."""
    annotation = getattr(fn.fn, "__annotations__", {}).get(param)
    if isinstance(annotation, str):
        return annotation.split(".")[-1] == "const"
    return annotation is tl_const


def _parameter_type(fn: KernelFunction, param: str, text: Any) -> Any:
    """The IR type of signature type `text` (`*fp32`) of parameter `param`; an unknown one is
    an ArgumentValueError (a ValueError) naming the parameter."""
    if not isinstance(text, str):
        raise LaunchArgumentError(
            f"parameter '{param}' of {fn.__name__}: a signature type is a string such as "
            f"'*fp32' or 'i32'; got {text!r}"
        )
    try:
        return parse_signature_type(text)
    except ValueError as error:
        raise ArgumentValueError(f"parameter '{param}' of {fn.__name__}: {error}") from None


def compile_to_tir(
    fn: KernelFunction, signature: dict[str, str], constexprs: dict[str, object] | None = None
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
    elements = {p for p in [*signature, *constexprs] if tuple_params.root(p) != p}
    tuples = {tuple_params.root(e) for e in elements}
    for p in params:
        if not (p in signature or p in constexprs or p in tuples or fn.is_constexpr(p)):
            raise LaunchArgumentError(
                f"parameter '{p}' of {fn.__name__} has neither a signature type nor a constexpr value"
            )
    runtime = [  # a tuple parameter's elements in its place (frontend/tuple_params.py)
        p
        for p in tuple_params.expand(params, signature)
        if p not in constexprs and signature[p] != "constexpr" and not fn.is_constexpr(p)
    ]
    inputs = [_parameter_type(fn, p, signature[p]) for p in runtime]
    entry = Block(inputs)
    func = FuncOp.create(
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
    for name in params:  # a tuple parameter: its runtime and constexpr elements, rebuilt
        parts = {e: scope[e] if e in scope else constexprs[e] for e in elements if
                 tuple_params.root(e) == name}  # fmt: skip
        if parts:
            scope[name] = from_parameter(tuple_params.rebuild(parts))  # or a descriptor
    for name in params:
        if name in scope:
            continue
        if name in constexprs:
            scope[name] = constexprs[name]
        elif name in fn.defaults:
            scope[name] = unwrap(fn.defaults[name])
        else:
            raise LaunchArgumentError(f"constexpr parameter '{name}' of {fn.__name__} has no value")
    builder = Builder.at_end(entry)
    generator = CodeGenerator(fn, builder, scope)
    generator.builtins.const_pointers = frozenset(
        arg for name, arg in zip(runtime, entry.args, strict=True) if _annotated_const(fn, name)
    )
    func.location = generator.location(tree)
    try:
        generator.visit_body(tree.body)
    except RecursionError:
        loc = func.location
        raise CompilationError(
            f"kernel {fn.__name__} nests too deeply for tilec's frontend (inlined calls, "
            "expressions or blocks within each other)",
            loc.file,
            loc.line,
            loc.col,
            fn.line_text(loc.line),
            "split the deepest expression into statements, or the work into helper functions",
        ) from None
    if generator.returned not in (None, ()):
        raise TypeError(f"kernel {fn.__name__} must not return a value")
    with builder.loc(generator.location(tree)):
        builder.create(ReturnOp)
    _verify_frontend_output(module, func)
    return module


def _verify_frontend_output(module: ModuleOp, func: FuncOp) -> None:
    """Verify the frontend's IR before any pass runs: an op it built wrongly is reported at the
    kernel line that made it, instead of being blamed on the first pass ("pass 'inline' produced
    invalid IR")."""
    try:
        verify(module)
    except Diagnostic as diagnostic:
        loc = diagnostic.op.location if diagnostic.op is not None else None
        if not isinstance(loc, FileLineColLoc):
            loc = func.location
        message = str(diagnostic).splitlines()[0].split(": error: ", 1)[-1]
        raise CompilationError(
            message,
            loc.file,
            loc.line,
            loc.col,
            linecache.getline(loc.file, loc.line).rstrip(),
            "tilec accepted this line but built invalid IR for it, which is a tilec bug: "
            "please report it with this message (writing the line differently may avoid it)",
        ) from None
