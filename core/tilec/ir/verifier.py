"""Check a module: each op's declaration and traits, terminators, dominance and tensor shapes.

Errors are `VerifyError`s whose text names the op, prints it, and gives its source location
(with the source line, when the file can be read)::

    kernel.py:12:5: error: 'arith.addi' op requires the same type for all operands and results, ...
      %3 = arith.addi %1, %2 : i32
      kernel.py:12: z = x + y
"""

from __future__ import annotations

import linecache

from tilec.ir.attributes import DialectAttr, FileLineColLoc, Location
from tilec.ir.core import Block, BlockArgument, Operation, Value, VerifyError
from tilec.ir.printer import Printer, print_op
from tilec.ir.traits import IsolatedFromAbove, IsTerminator
from tilec.ir.types import (
    Float8Type,
    FloatType,
    FunctionType,
    IntegerType,
    PointerType,
    TensorType,
    Type,
    is_power_of_two,
)


def format_location(loc: Location) -> str:
    return loc.short() if isinstance(loc, FileLineColLoc) else "<unknown>"


def source_line(loc: Location) -> str | None:
    """The source text at `loc`, if the file is readable."""
    if not isinstance(loc, FileLineColLoc):
        return None
    text = linecache.getline(loc.file, loc.line)
    return text.strip() or None


def format_diagnostic(op: Operation | None, message: str, loc: Location | None = None) -> str:
    """`file:line:col: error: 'op.name' op MESSAGE`, the op's text and the source line."""
    if op is None:
        return f"{format_location(loc) if loc else '<unknown>'}: error: {message}"
    loc = op.location if loc is None else loc
    lines = [f"{format_location(loc)}: error: '{op.name}' op {message}"]
    if not op.regions or all(not r.blocks for r in op.regions):
        lines.append("  " + _op_text(op))
    else:
        lines.append("  " + _op_text(op).split("\n", 1)[0] + " ...")
    src = source_line(loc)
    if src is not None and isinstance(loc, FileLineColLoc):
        lines.append(f"  {loc.file}:{loc.line}: {src}")
    return "\n".join(lines)


def _op_text(op: Operation) -> str:
    try:
        return print_op(op)
    except Exception:
        # The op is malformed (that is what is being reported), which can break its custom
        # printer (e.g. `func.func` whose `function_type` is not a type): print it generically.
        printer = Printer()
        printer._print_generic(op)
        return printer.stream.getvalue()


class Diagnostic(Exception):
    """A VerifyError turned into the user-facing text of `format_diagnostic`."""

    def __init__(self, text: str, op: Operation | None = None):
        super().__init__(text)
        self.op = op


class KernelDiagnostic(Diagnostic):
    """A pass's diagnostic of the kernel itself (a limit it passes), not of a tilec bug: the
    compile of a Python kernel reports it as a CompilationError at the op's source line, with
    `hint` saying what to do."""

    def __init__(self, op: Operation, message: str, hint: str):
        super().__init__(format_diagnostic(op, f"{message}: {hint}"), op)
        self.message, self.hint = message, hint


def verify(root: Operation) -> None:
    """Verify `root` and everything nested in it. Raises `Diagnostic` on the first error."""
    try:
        _verify(root)
    except VerifyError as err:
        raise Diagnostic(format_diagnostic(err.op, str(err)), err.op) from None


def _verify(root: Operation) -> None:
    positions: dict[Block, dict[Operation, int]] = {}
    for op in root.walk():
        for value in op.results:
            _check_type(op, value.type)
        op.verify_structure()
        for region in op.regions:
            for block in region.blocks:
                for arg in block.args:
                    _check_type(op, arg.type)
                _check_terminator(op, block)
        for index, operand in enumerate(op.operands):
            _check_dominance(op, index, operand, positions)


def _check_type(op: Operation, t: Type) -> None:
    if isinstance(t, FunctionType):
        raise VerifyError(f"a value cannot have a function type, got {t}", op)
    if isinstance(t, TensorType):
        if not all(is_power_of_two(d) for d in t.shape):
            raise VerifyError(f"tensor dimensions must be powers of two, got {t}", op)
        if not isinstance(t.element_type, (IntegerType, FloatType, Float8Type, PointerType)):
            raise VerifyError(f"tensor elements must be integers, floats or pointers, got {t}", op)
        _check_encoding(op, t)
    if isinstance(t, PointerType):
        _check_type(op, t.pointee)


def _check_encoding(op: Operation, t: TensorType) -> None:
    """A tensor's encoding is a dialect attribute: a register layout such as `#gpu.blocked`, or
    a shared-memory encoding of a tensor-core operand (ops derive layouts from it)."""
    if t.encoding is not None and not isinstance(t.encoding, DialectAttr):
        raise VerifyError(
            f"a tensor's encoding must be a layout attribute such as #gpu.blocked<...>, got {t}",
            op,
        )


def _check_terminator(op: Operation, block: Block) -> None:
    for inner in block.ops:
        if inner.has_trait(IsTerminator) and inner is not block.last_op:
            raise VerifyError("must be the last operation in its block", inner)
    if op.name == "builtin.module":
        return
    last = block.last_op
    if last is None or not last.has_trait(IsTerminator):
        found = f"'{last.name}'" if last is not None else "an empty block"
        raise VerifyError(f"region must end with a terminator op, found {found}", op)


def _check_dominance(
    user: Operation, index: int, value: Value, positions: dict[Block, dict[Operation, int]]
) -> None:
    def_block = value.parent_block
    # Climb from the user to the op that sits directly in the defining block.
    op: Operation | None = user
    while op is not None and op.parent is not def_block:
        parent = op.parent_op
        if parent is not None and parent.has_trait(IsolatedFromAbove):
            op = None
            break
        op = parent
    if op is None or def_block is None:
        raise VerifyError(
            f"operand #{index} is not defined in an enclosing scope of this use "
            "(it does not dominate the use)",
            user,
        )
    if isinstance(value, BlockArgument):
        return
    order = positions.get(def_block)
    if order is None:
        order = positions[def_block] = def_block.index_map()
    if order[value.op] >= order[op]:  # type: ignore[attr-defined]
        raise VerifyError(f"operand #{index} does not dominate this use", user)
