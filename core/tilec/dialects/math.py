"""`math.*`: transcendental and other float functions, element by element.

No constant folding here: the device evaluates these with its own approximations, and folding
with NumPy's would give results that differ from an unfolded kernel's.
"""

from __future__ import annotations

from tilec.ir.core import Operation, Value, operand_def, register_op, result_def
from tilec.ir.traits import FLOAT_LIKE, INT_LIKE, Elementwise, Pure, SameOperandsAndResultType


class UnaryMathOp(Operation):
    operand = operand_def(FLOAT_LIKE)
    result = result_def(FLOAT_LIKE)
    traits = (Pure(), Elementwise(), SameOperandsAndResultType())

    def __init__(self, operand: Value):
        super().__init__(operands=[operand], result_types=[operand.type])


def _unary(class_name: str, op_name: str, doc: str) -> type[UnaryMathOp]:
    body = {"name": op_name, "__doc__": doc, "__module__": __name__}
    return register_op(type(class_name, (UnaryMathOp,), body))  # type: ignore[return-value]


ExpOp = _unary("ExpOp", "math.exp", "e ** x")
Exp2Op = _unary("Exp2Op", "math.exp2", "2 ** x")
LogOp = _unary("LogOp", "math.log", "natural logarithm")
Log2Op = _unary("Log2Op", "math.log2", "base-2 logarithm")
SqrtOp = _unary("SqrtOp", "math.sqrt", "square root (correctly rounded)")
RsqrtOp = _unary("RsqrtOp", "math.rsqrt", "1 / sqrt(x)")
SinOp = _unary("SinOp", "math.sin", "sine")
CosOp = _unary("CosOp", "math.cos", "cosine")
ErfOp = _unary("ErfOp", "math.erf", "the error function")
TanhOp = _unary("TanhOp", "math.tanh", "hyperbolic tangent")
FloorOp = _unary("FloorOp", "math.floor", "round toward negative infinity")
CeilOp = _unary("CeilOp", "math.ceil", "round toward positive infinity")
AbsFOp = _unary("AbsFOp", "math.absf", "absolute value of a float")


@register_op
class AbsIOp(Operation):
    """Absolute value of a signed integer (wraps for the minimum value, as in LLVM)."""

    name = "math.absi"
    operand = operand_def(INT_LIKE)
    result = result_def(INT_LIKE)
    traits = (Pure(), Elementwise(), SameOperandsAndResultType())


@register_op
class FmaOp(Operation):
    """`a * b + c` with a single rounding."""

    name = "math.fma"
    a = operand_def(FLOAT_LIKE)
    b = operand_def(FLOAT_LIKE)
    c = operand_def(FLOAT_LIKE)
    result = result_def(FLOAT_LIKE)
    traits = (Pure(), Elementwise(), SameOperandsAndResultType())
