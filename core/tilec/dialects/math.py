"""`math.*`: transcendental and other float functions, element by element.

No constant folding here: the device evaluates these with its own approximations, and folding
with NumPy's would give results that differ from an unfolded kernel's.
"""

from __future__ import annotations

from tilec.ir.attributes import UnitAttr
from tilec.ir.core import Operation, Value, attr_def, operand_def, register_op, result_def
from tilec.ir.traits import FLOAT_LIKE, INT_LIKE, Elementwise, Pure, SameOperandsAndResultType


class UnaryMathOp(Operation):
    operand = operand_def(FLOAT_LIKE)
    result = result_def(FLOAT_LIKE)
    traits = (Pure(), Elementwise(), SameOperandsAndResultType())

    def __init__(self, operand: Value):
        super().__init__(operands=[operand], result_types=[operand.type])


@register_op
class ExpOp(UnaryMathOp):
    """`e ** x`."""

    name = "math.exp"


@register_op
class Exp2Op(UnaryMathOp):
    """`2 ** x`."""

    name = "math.exp2"


@register_op
class LogOp(UnaryMathOp):
    """Natural logarithm."""

    name = "math.log"


@register_op
class Log2Op(UnaryMathOp):
    """Base-2 logarithm."""

    name = "math.log2"


@register_op
class SqrtOp(UnaryMathOp):
    """Square root. `ieee`: correctly rounded (`tl.sqrt_rn`); without it, Triton's `tl.sqrt`: a
    backend may take a faster float32 root (NVIDIA's `sqrt.approx.f32`), and correctly rounded
    is a valid result."""

    name = "math.sqrt"
    ieee = attr_def(UnitAttr, optional=True)


@register_op
class RsqrtOp(UnaryMathOp):
    """`1 / sqrt(x)`."""

    name = "math.rsqrt"


@register_op
class SinOp(UnaryMathOp):
    """Sine."""

    name = "math.sin"


@register_op
class CosOp(UnaryMathOp):
    """Cosine."""

    name = "math.cos"


@register_op
class ErfOp(UnaryMathOp):
    """The error function."""

    name = "math.erf"


@register_op
class TanhOp(UnaryMathOp):
    """Hyperbolic tangent."""

    name = "math.tanh"


@register_op
class FloorOp(UnaryMathOp):
    """Round toward negative infinity."""

    name = "math.floor"


@register_op
class CeilOp(UnaryMathOp):
    """Round toward positive infinity."""

    name = "math.ceil"


@register_op
class AbsFOp(UnaryMathOp):
    """Absolute value of a float."""

    name = "math.absf"


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
