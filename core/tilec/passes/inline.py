"""`inline`: inline every `tile.call` to a function of the same module, then drop private
functions nobody calls any more.

Callees are inlined before their callers, so each call is replaced by a body that holds no calls
itself. The callee's ops are cloned before the call with its arguments mapped to the call's
operands, and the values its `tile.return` returns replace the call's results.

Which functions go afterwards: those with the `private` attribute
(`func.func @helper(...) attributes {private = unit}`) that no op refers to any more. Functions
without it are entry points (kernels) and always stay, called or not.

Recursion cannot be inlined: a cycle of calls is an `InlineError` that names it
(`@a -> @b -> @a`) and where the call closing the cycle is.
"""

from __future__ import annotations

from tilec.dialects.func import FuncOp
from tilec.dialects.tile import CallOp
from tilec.ir.attributes import SymbolRefAttr
from tilec.ir.core import Operation, Value
from tilec.ir.rewriting import Rewriter
from tilec.ir.verifier import Diagnostic, format_diagnostic
from tilec.passes.base import ALL_ANALYSES, ModulePass, PassContext

PRIVATE = "private"


class InlineError(Diagnostic):
    """A call that cannot be inlined (recursion, a callee with more than one block); the text
    names the call and where it is, like the verifier's diagnostics."""

    def __init__(self, call: Operation, message: str):
        super().__init__(format_diagnostic(call, message), call)


class Inline(ModulePass):
    """Inline calls to functions of the module; erase private functions left uncalled."""

    name = "inline"
    stage = "tir"
    description = "inline tile.call to functions of the module, drop uncalled private functions"
    invalidates = ALL_ANALYSES

    def run(self, module: Operation, context: PassContext) -> bool:
        functions = {op.name_str: op for op in _module_ops(module) if isinstance(op, FuncOp)}
        rewriter = Rewriter()
        for name in callees_first(functions):
            for call in _calls(functions[name]):
                callee = functions.get(call.callee_name)
                if callee is not None:
                    inline_call(call, callee, rewriter)
        referenced = _referenced_symbols(module)
        for name, function in functions.items():
            if PRIVATE in function.attributes and name not in referenced:
                rewriter.erase_op(function)
        return rewriter.changed


def _module_ops(module: Operation) -> list[Operation]:
    return [op for region in module.regions for block in region.blocks for op in block.ops]


def _calls(function: Operation) -> list[CallOp]:
    return [op for op in function.walk() if isinstance(op, CallOp)]


def callees_first(functions: dict[str, FuncOp]) -> list[str]:
    """Function names ordered so that every callee comes before its callers (module order
    otherwise). Raises InlineError on a cycle of calls."""
    order: list[str] = []
    done: set[str] = set()
    path: list[tuple[str, Operation | None]] = []

    def visit(name: str, via: Operation | None) -> None:
        if name in done:
            return
        names_on_path = [n for n, _ in path]
        if name in names_on_path:
            assert via is not None
            cycle = [*names_on_path[names_on_path.index(name) :], name]
            raise InlineError(
                via,
                f"cannot inline recursive calls: {' -> '.join('@' + n for n in cycle)}; "
                "rewrite the recursion as a loop",
            )
        path.append((name, via))
        for call in _calls(functions[name]):
            callee = call.callee_name
            if callee in functions:
                visit(callee, call)
        path.pop()
        done.add(name)
        order.append(name)

    for name in functions:
        visit(name, None)
    return order


def inline_call(call: CallOp, callee: FuncOp, rewriter: Rewriter) -> None:
    """Replace `call` by a copy of `callee`'s body with the arguments mapped to its operands."""
    region = callee.regions[0]
    if len(region.blocks) != 1:
        raise InlineError(
            call,
            f"cannot inline @{call.callee_name}: its body has {len(region.blocks)} blocks, "
            "expected one",
        )
    body = region.blocks[0]
    value_map: dict[Value, Value] = dict(zip(body.args, call.operands, strict=True))
    terminator = body.last_op
    for op in body.ops:
        if op is terminator:
            break
        rewriter.insert_before(op.clone(value_map), call)
    returned = [value_map.get(v, v) for v in terminator.operands] if terminator else []
    rewriter.replace_op(call, returned)


def _referenced_symbols(module: Operation) -> set[str]:
    names: set[str] = set()
    for op in module.walk():
        for attr in op.attributes.values():
            if isinstance(attr, SymbolRefAttr):
                names.add(attr.name)
    return names
