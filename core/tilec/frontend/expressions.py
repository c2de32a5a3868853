"""Expressions: names, constants, operators, subscripts, attributes and calls."""

from __future__ import annotations

import ast
import builtins as py_builtins
from typing import Any

import attrs

from tilec.frontend import indexing
from tilec.frontend.block_pointers import BlockPointerValue
from tilec.frontend.context import TensorValue
from tilec.frontend.errors import UserError
from tilec.frontend.kernel import KernelFunction
from tilec.frontend.semantics import NONE_HINT
from tilec.ir.core import Block
from tilec.ir.types import i1
from tilec.language import block_type, constexpr, constexpr_type, dtype, dtype_of

BINARY_SYMBOLS = {
    ast.Add: "+", ast.Sub: "-", ast.Mult: "*", ast.Div: "/", ast.FloorDiv: "//", ast.Mod: "%",
    ast.BitAnd: "&", ast.BitOr: "|", ast.BitXor: "^", ast.LShift: "<<", ast.RShift: ">>",
    ast.Pow: "**",
}  # fmt: skip
COMPARE_SYMBOLS = {
    ast.Lt: "<", ast.LtE: "<=", ast.Gt: ">", ast.GtE: ">=", ast.Eq: "==", ast.NotEq: "!=",
}  # fmt: skip
PYTHON_OPERATORS = {
    "+": lambda a, b: a + b, "-": lambda a, b: a - b, "*": lambda a, b: a * b,
    "/": lambda a, b: a / b, "//": lambda a, b: a // b, "%": lambda a, b: a % b,
    "&": lambda a, b: a & b, "|": lambda a, b: a | b, "^": lambda a, b: a ^ b,
    "<<": lambda a, b: a << b, ">>": lambda a, b: a >> b, "**": lambda a, b: a**b,
    "<": lambda a, b: a < b,
    "<=": lambda a, b: a <= b, ">": lambda a, b: a > b, ">=": lambda a, b: a >= b,
    "==": lambda a, b: a == b, "!=": lambda a, b: a != b,
}  # fmt: skip
ALLOWED_PYTHON_CALLS = {py_builtins.min, py_builtins.max, py_builtins.len, py_builtins.int}
ALLOWED_PYTHON_CALLS |= {py_builtins.float, py_builtins.bool, py_builtins.isinstance}


TENSOR_METHODS = frozenset({
    "to", "cast", "abs", "argmax", "argmin", "associative_scan", "broadcast_to", "cdiv", "ceil",
    "cos", "cumprod", "cumsum", "div_rn", "erf", "exp", "exp2", "expand_dims", "flip", "floor",
    "gather", "histogram", "log", "log2", "max", "min", "permute", "ravel", "reduce", "reshape",
    "rsqrt", "sigmoid", "sin", "softmax", "sort", "split", "sqrt", "sqrt_rn", "sum", "trans",
    "view", "xor_sum", "item", "store", "atomic_add", "atomic_and", "atomic_cas", "atomic_max",
    "atomic_min", "atomic_or", "atomic_xchg", "atomic_xor",
})  # fmt: skip
"""Triton's tensor methods: `x.name(*args)` is `tl.name(x, *args)`."""


@attrs.frozen
class TensorMethod:
    """A method looked up on a tensor, such as `x.to`, waiting for its call."""

    tensor: TensorValue
    name: str


_UNBOUND = object()


def unwrap(value: Any) -> Any:
    return value.value if isinstance(value, constexpr) else value


class ExpressionsMixin:
    """Evaluates expression nodes to `TensorValue`s or constexpr Python values."""

    def visit_Constant(self, node: ast.Constant) -> Any:
        return node.value

    def visit_Name(self, node: ast.Name) -> Any:
        if node.id in self.scope:
            return self.scope[node.id]
        found = self.fn.captured(node.id, _UNBOUND)  # type: ignore[attr-defined]
        if found is not _UNBOUND:
            return unwrap(found)
        if hasattr(py_builtins, node.id):
            return getattr(py_builtins, node.id)
        raise UserError(
            f"name '{node.id}' is not defined",
            "define it before use, pass it as a kernel argument, or import it at module level",
        )

    def visit_Tuple(self, node: ast.Tuple) -> tuple:
        return tuple(self.visit(e) for e in node.elts)

    visit_List = visit_Tuple

    def visit_Attribute(self, node: ast.Attribute) -> Any:
        base = self.visit(node.value)
        if isinstance(node.value, ast.Name) and node.value.id in self.number_names:  # type: ignore[attr-defined]
            base = self.number_value(base)
        return self.attribute(base, node.attr)

    def number_value(self, base: Any) -> Any:
        """`base` as Triton has a name that a plain assignment bound to a number (`x = 1`,
        not `x: tl.constexpr = 1`): a scalar tensor, whose attributes (`x.dtype`, `x.to(...)`)
        are a tensor's."""
        if type(base) not in (int, float, bool):
            return base
        return self.sem.to_value(base)

    def attribute(self, base: Any, name: str) -> Any:
        """`base.name`: a tensor's attributes and methods as Triton's, a Python value's own."""
        if isinstance(base, BlockPointerValue):
            if name != "advance":
                raise UserError(
                    f"block pointers have no attribute '{name}' in tilec",
                    "move one with p.advance(offsets), read its block with tl.load(p)",
                )
            return TensorMethod(base, "advance")  # type: ignore[arg-type]
        if isinstance(base, TensorValue):
            if name == "dtype":
                return dtype_of(base.dtype)
            if name == "shape":
                return base.shape
            if name == "T":
                return self.sem.trans(base)
            if name == "type":  # Triton's x.type: a block_type for tensors
                element = dtype_of(base.dtype)
                return block_type(element, base.shape) if base.is_tensor else element
            if name == "numel":
                return base.type.numel if base.is_tensor else 1  # type: ignore[attr-defined]
            if name in TENSOR_METHODS:
                return TensorMethod(base, name)
            raise UserError(f"tensors have no attribute '{name}'")
        if base is None:
            raise UserError(f"None has no attribute '{name}'", NONE_HINT)
        if not hasattr(base, name):
            if name == "type":  # Triton's compile-time values have a constexpr type
                return constexpr_type(base)
            raise UserError(f"{base!r} has no attribute '{name}'")
        return unwrap(getattr(base, name))

    def visit_BinOp(self, node: ast.BinOp) -> Any:
        lhs, rhs = self.visit(node.left), self.visit(node.right)
        symbol = BINARY_SYMBOLS.get(type(node.op))
        if symbol is None:
            raise UserError(f"operator {type(node.op).__name__} is not supported in kernels")
        return self.apply_binary(symbol, lhs, rhs)

    def apply_binary(self, symbol: str, lhs: Any, rhs: Any) -> Any:
        if isinstance(lhs, BlockPointerValue) or isinstance(rhs, BlockPointerValue):
            raise UserError(
                f"operator {symbol} is not defined on block pointers",
                "move a block pointer with tl.advance(p, offsets); load its block to compute",
            )
        if not isinstance(lhs, TensorValue) and not isinstance(rhs, TensorValue):
            if (lhs is None or rhs is None) and symbol not in ("==", "!="):
                raise UserError(f"operator {symbol} on None", NONE_HINT)
            return PYTHON_OPERATORS[symbol](lhs, rhs)
        if symbol == "**":
            raise UserError(
                "operator ** is defined only on compile-time constants in kernels",
                "multiply, or use tl.exp2(y * tl.log2(x)) for a float power",
            )
        rhs = self.safe_divisor(symbol, lhs, rhs)  # type: ignore[attr-defined]
        return self.sem.binary(symbol, lhs, rhs)

    def visit_Compare(self, node: ast.Compare) -> Any:
        if len(node.ops) != 1:
            raise UserError("chained comparisons are not supported", "write (a < b) & (b < c)")
        symbol = COMPARE_SYMBOLS.get(type(node.ops[0]))
        lhs, rhs = self.visit(node.left), self.visit(node.comparators[0])
        if symbol is None:
            if isinstance(node.ops[0], (ast.Is, ast.IsNot)):
                # as Triton: the identity of the compile-time objects, folded (`W is not None`
                # is True for a tensor W, False for a None argument or default)
                same = unwrap(lhs) is unwrap(rhs)
                return same if isinstance(node.ops[0], ast.Is) else not same
            raise UserError(
                f"comparison {type(node.ops[0]).__name__} is not supported in kernels",
                "compute it outside the kernel and pass the result as a tl.constexpr",
            )
        return self.apply_binary(symbol, lhs, rhs)

    def visit_UnaryOp(self, node: ast.UnaryOp) -> Any:
        operand = self.visit(node.operand)
        if isinstance(operand, BlockPointerValue):
            raise UserError(
                f"operator {type(node.op).__name__} is not defined on block pointers",
                "move a block pointer with tl.advance(p, offsets); load its block to compute",
            )
        if operand is None and not isinstance(node.op, ast.Not):
            raise UserError(f"operator {type(node.op).__name__} on None", NONE_HINT)
        if not isinstance(operand, TensorValue):
            ops = {ast.USub: lambda x: -x, ast.UAdd: lambda x: +x, ast.Not: lambda x: not x}
            ops[ast.Invert] = lambda x: ~x
            return ops[type(node.op)](operand)
        if isinstance(node.op, ast.USub):
            return self.sem.negate(operand)
        if isinstance(node.op, ast.UAdd):
            return operand
        if isinstance(node.op, ast.Not):
            return self.sem.logical_not(operand)
        return self.sem.invert(operand)

    def visit_BoolOp(self, node: ast.BoolOp) -> Any:
        """`and` / `or` as Triton compiles them: operands are evaluated in order, and a
        compile-time one that decides the result (a false one in `and`, a true one in `or`)
        is the result, the operands after it not evaluated (`k is None or k == 0`); the other
        compile-time ones drop out. Runtime operands (booleans) are all evaluated and combined
        with `&` / `|` (no short circuit), as Triton's logical_and / logical_or."""
        is_and = isinstance(node.op, ast.And)
        word = "and" if is_and else "or"
        runtime: list[TensorValue] = []
        value: Any = None
        for operand in node.values:
            value = self.visit(operand)
            if not isinstance(value, TensorValue):
                if bool(value) is not is_and:  # decides the result
                    return value
                continue
            dtype = value.dtype
            if dtype != i1:
                raise UserError(
                    f"'{word}' on runtime values needs booleans (int1), got {dtype}",
                    "compare first (x != 0), or use '&' / '|' on integers",
                )
            runtime.append(value)
        if not runtime:
            return value
        while len(runtime) >= 2:
            rhs, lhs = runtime.pop(), runtime.pop()
            runtime.append(self.sem.binary("&" if is_and else "|", lhs, rhs))
        return runtime[0]

    def visit_IfExp(self, node: ast.IfExp) -> Any:
        """`a if c else b` as Triton compiles it: on a compile-time `c` only the chosen branch
        is compiled; on a runtime scalar an `scf.if` runs only the taken branch (a load or an
        atomic on the other path does not happen); a tensor `c` is an error, except per element
        in a mapped function (tl.map_elementwise), where each branch runs under its lanes' mask."""
        condition = self.visit(node.test)
        if not isinstance(condition, TensorValue):
            return self.visit(node.body if condition else node.orelse)
        if condition.is_tensor:
            if self.elementwise:  # type: ignore[attr-defined]
                return self.elementwise_if_expression(node, condition)  # type: ignore[attr-defined]
            raise UserError(
                f"the condition of 'a if c else b' must be a scalar, but '{ast.unparse(node.test)}' "
                f"is a tensor of shape {list(condition.shape)}",
                "use tl.where(c, a, b) to choose per element",
            )
        condition = self.sem.cast(condition, i1)  # type: ignore[attr-defined]
        blocks, values = [Block(), Block()], []
        for block, branch in zip(blocks, (node.body, node.orelse), strict=True):
            with self.builder.at(block):  # type: ignore[attr-defined]
                value = unwrap(self.visit(branch))
                if value is not None and not isinstance(value, (TensorValue, BlockPointerValue)):
                    value = self.sem.to_value(value)  # type: ignore[attr-defined]
                values.append(value)
        if values == [None, None]:  # `tl.store(p, x) if c else tl.store(p, y)`: no result
            self.create_if(condition, blocks, [[], []])  # type: ignore[attr-defined]
            return None
        if any(isinstance(v, BlockPointerValue) for v in values):
            name = ast.unparse(node)
            branches = [(block, {name: v}) for block, v in zip(blocks, values, strict=True)]
            yields: list = [[], []]
            merged = self.yield_block_pointers([name], branches, yields)  # type: ignore[attr-defined]
            template, parts = merged[name]
            results = iter(self.create_if(condition, blocks, yields).results)  # type: ignore[attr-defined]
            return template.with_parts(
                [TensorValue(next(results)) if p is None else p for p in parts]
            )
        types = [v.type if isinstance(v, TensorValue) else "void" for v in values]
        if types[0] != types[1]:  # Triton's check: no promotion between the branches
            raise UserError(
                f"Ternary expression with dynamic condition has inconsistent types {types[0]} "
                f"and {types[1]}",
                "give both branches one type, e.g. with .to(tl.float32) or a literal like 0.0",
            )
        return TensorValue(self.create_if(condition, blocks, [[values[0]], [values[1]]]).results[0])  # type: ignore[attr-defined]

    def visit_Subscript(self, node: ast.Subscript) -> Any:
        base = self.visit(node.value)
        index = self.visit(node.slice)
        if base is None:
            raise UserError("None cannot be indexed", NONE_HINT)
        if not isinstance(base, TensorValue):
            return indexing.python_subscript(base, index)
        return indexing.subscript(self.sem, base, index)

    def visit_Slice(self, node: ast.Slice) -> slice:
        parts = (node.lower, node.upper, node.step)
        return slice(*(unwrap(self.visit(p)) if p is not None else None for p in parts))

    def visit_Call(self, node: ast.Call) -> Any:
        if any(k.arg is None for k in node.keywords) or any(
            isinstance(a, ast.Starred) for a in node.args
        ):
            raise UserError("*args and **kwargs are not supported in kernel calls", "name each one")
        callee = self.visit(node.func)
        args = [self.visit(a) for a in node.args]
        kwargs = {k.arg: self.visit(k.value) for k in node.keywords}
        if isinstance(callee, TensorMethod) and callee.name == "item":  # not a tl function
            return indexing.item(self.builtins, callee.tensor, *args, **kwargs)
        if isinstance(callee, TensorMethod):  # x.to(...) is tl.cast(x, ...), x.sum() tl.sum(x)
            name = "cast" if callee.name == "to" else callee.name
            return self.builtins.call(name, [callee.tensor, *args], kwargs)
        if callee is py_builtins.getattr or callee is py_builtins.hasattr:  # Triton's builtins
            return self.call_getattr(callee, node, args, kwargs)
        if isinstance(getattr(callee, "__self__", None), dtype):  # x.dtype.is_floating()
            return callee(*args, **kwargs)
        if callee is constexpr:  # tl.constexpr(v) in a kernel is v
            return unwrap(args[0]) if len(args) == 1 and not kwargs else callee(*args, **kwargs)
        if any(callee is t for t in (constexpr_type, dtype, block_type)):  # compile-time types
            if any(isinstance(a, TensorValue) for a in [*args, *kwargs.values()]):
                raise UserError(f"tl.{callee.__name__}() takes compile-time values only")
            try:
                return callee(*map(unwrap, args), **{k: unwrap(v) for k, v in kwargs.items()})
            except (TypeError, ValueError) as error:
                raise UserError(f"tl.{callee.__name__}(): {error}") from None
        if callee is py_builtins.print:  # Triton compiles print() in kernels as tl.device_print
            return self.builtins.call("device_print", args, kwargs)
        name = getattr(callee, "__tilec_builtin__", None)
        if name is not None:
            return self.builtins.call(name, args, kwargs)
        if isinstance(callee, KernelFunction):
            return self.inline_call(callee, args, kwargs)
        if getattr(callee, "__tilec_constexpr_function__", False):  # tl.target_info's queries
            if any(isinstance(a, TensorValue) for a in [*args, *kwargs.values()]):
                raise UserError(f"{callee.__name__}() takes compile-time values only")
            return callee(*map(unwrap, args), **{k: unwrap(v) for k, v in kwargs.items()})
        if callee in ALLOWED_PYTHON_CALLS:
            if callee is py_builtins.isinstance:  # isinstance(x, tl.tensor) holds for values
                return callee(*args, **kwargs)
            if any(isinstance(a, TensorValue) for a in args):
                if callee in (py_builtins.min, py_builtins.max) and len(args) == 2:
                    kind = "minimum" if callee is py_builtins.min else "maximum"
                    return self.builtins.call(kind, args, {})
                raise UserError(f"{callee.__name__}() cannot take tensors here")
            return callee(*args, **kwargs)
        if isinstance(callee, dtype):
            raise UserError(f"{callee!r} cannot be called", "cast with x.to(tl.float32)")
        what = getattr(callee, "__name__", repr(callee))
        raise UserError(
            f"cannot call '{what}': it is a plain Python function, not a kernel builtin",
            "decorate it with @tilec.jit to call it from a kernel, or use a tl.* function",
        )

    def call_getattr(self, callee: Any, node: ast.Call, args: list, kwargs: dict) -> Any:
        """`getattr(obj, "name"[, default])` and `hasattr(obj, "name")` in a kernel, with a
        compile-time name: the attribute as `obj.name` gives it (a tensor's too)."""
        what = callee.__name__
        most = 3 if callee is py_builtins.getattr else 2
        if kwargs or not 2 <= len(args) <= most:
            raise UserError(f"{what}() takes an object and an attribute name (and a default)")
        obj, name = args[0], unwrap(args[1])
        if not isinstance(name, str):
            raise UserError(f"{what}()'s attribute name must be a compile-time str, got {name!r}")
        first = node.args[0]
        if isinstance(first, ast.Name) and first.id in self.number_names:  # type: ignore[attr-defined]
            obj = self.number_value(obj)
        try:
            found = self.attribute(obj, name)
        except UserError:
            if callee is py_builtins.hasattr:
                return False
            if len(args) == 3:
                return args[2]
            raise
        return True if callee is py_builtins.hasattr else found

    def dtype_arg(self, value: Any) -> Any:
        if not isinstance(value, dtype):
            raise UserError(f"expected a tl dtype such as tl.float32, got {value!r}")
        return value.ir_type

    def visit_Lambda(self, node: ast.Lambda) -> Any:
        raise UserError("lambda is not supported in kernels", "define a @tilec.jit function")

    def visit_JoinedStr(self, node: ast.JoinedStr) -> Any:
        raise UserError("f-strings are not supported in kernels", "use tl.device_print")
