"""`arith.*`: integer and float arithmetic, comparisons, select and casts.

Binary ops take operands of one type (scalars, or tensors of one shape) and give that type.
Signedness is a property of the op (`divsi` vs `divui`), as in MLIR; `u32` and `i32` only differ in
how the frontend chooses ops. Each op folds when its operands are constants and applies the
algebraic identities that are exact for every input (`x + 0`, `x * 1`, `x - x` on integers;
`x * 1.0`, `x + -0.0` on floats).
"""

from __future__ import annotations

from tilec.dialects import arith_folding as folding
from tilec.ir.attributes import Attribute, DenseAttr, FloatAttr, IntegerAttr, StringAttr, UnitAttr
from tilec.ir.core import (
    Operation,
    Value,
    VerifyError,
    attr_def,
    operand_def,
    register_op,
    result_def,
)
from tilec.ir.traits import (
    BOOL_LIKE,
    FLOAT_LIKE,
    INT_LIKE,
    NUMERIC_LIKE,
    Commutative,
    ConstantLike,
    Elementwise,
    Pure,
    SameOperandsAndResultType,
    SameOperandsType,
    SameShapeResultBool,
)
from tilec.ir.types import (
    Float8Type,
    FloatType,
    IntegerType,
    TensorType,
    Type,
    element_type,
    shape_of,
)


@register_op
class ConstantOp(Operation):
    """`%c = arith.constant {value = 4 : i32} : i32`; tensors use a splat `dense<...>` value."""

    name = "arith.constant"
    value = attr_def((IntegerAttr, FloatAttr, DenseAttr))
    result = result_def(NUMERIC_LIKE)
    traits = (Pure(), ConstantLike())

    def __init__(self, value: Attribute, result_type: Type | None = None):
        if result_type is None:
            result_type = value.type  # type: ignore[attr-defined]
        super().__init__(result_types=[result_type], attributes={"value": value})

    def verify_(self) -> None:
        value = self.attributes["value"]
        if value.type != self.result.type:  # type: ignore[attr-defined]
            raise VerifyError(
                f"value type {value.type} does not match result type {self.result.type}",  # type: ignore[attr-defined]
                self,
            )

    def fold(self, constants):
        return [self.attributes["value"]]


def constant_attr(value: int | float, type_: Type) -> Attribute:
    """The attribute for `value` as a constant of `type_` (a splat for tensors)."""
    scalar_type = element_type(type_)
    if isinstance(scalar_type, IntegerType):
        scalar: IntegerAttr | FloatAttr = IntegerAttr(
            folding.wrap_int(int(value), scalar_type), scalar_type
        )
    elif isinstance(scalar_type, FloatType):
        scalar = FloatAttr(folding.round_float(float(value), scalar_type), scalar_type)
    else:
        raise TypeError(f"no constants of type {type_}")
    if isinstance(type_, TensorType):
        return DenseAttr(scalar, type_)
    return scalar


# Binary arithmetic -----------------------------------------------------------------------------


_BINARY_TRAITS = (Pure(), Elementwise(), SameOperandsAndResultType())
_COMMUTATIVE_BINARY_TRAITS = (*_BINARY_TRAITS, Commutative())


class BinaryOp(Operation):
    """Base of `arith` binary ops: two operands and a result of one type. Folding evaluates the
    op by the suffix of its name (`arith_folding`)."""

    lhs = operand_def(INT_LIKE)
    rhs = operand_def(INT_LIKE)
    result = result_def(INT_LIKE)
    traits = _BINARY_TRAITS

    def __init__(self, lhs: Value, rhs: Value):
        super().__init__(operands=[lhs, rhs], result_types=[lhs.type])

    def fold(self, constants):
        return folding.fold_binary(self, constants)


class IntBinaryOp(BinaryOp):
    """An integer binary op (integers or tensors of integers)."""


class FloatBinaryOp(BinaryOp):
    """A float binary op (floats or tensors of floats). `nocontract`: the op keeps its own
    rounding under `enable_fp_fusion` (libdevice's `add_rn`, `sub_rn`, `mul_rn`: never fused
    into an FMA)."""

    lhs = operand_def(FLOAT_LIKE)
    rhs = operand_def(FLOAT_LIKE)
    result = result_def(FLOAT_LIKE)
    nocontract = attr_def(UnitAttr, optional=True)


@register_op
class AddIOp(IntBinaryOp):
    """x + y, wrapping (two's complement)."""

    name = "arith.addi"
    traits = _COMMUTATIVE_BINARY_TRAITS


@register_op
class SubIOp(IntBinaryOp):
    """x - y, wrapping."""

    name = "arith.subi"


@register_op
class MulIOp(IntBinaryOp):
    """x * y, wrapping."""

    name = "arith.muli"
    traits = _COMMUTATIVE_BINARY_TRAITS


@register_op
class DivSIOp(IntBinaryOp):
    """Signed division rounding toward zero (C's and Triton's `//` on integers)."""

    name = "arith.divsi"


@register_op
class DivUIOp(IntBinaryOp):
    """Unsigned division."""

    name = "arith.divui"


@register_op
class RemSIOp(IntBinaryOp):
    """The signed remainder, with the sign of the dividend."""

    name = "arith.remsi"


@register_op
class RemUIOp(IntBinaryOp):
    """The unsigned remainder."""

    name = "arith.remui"


@register_op
class AndIOp(IntBinaryOp):
    """Bitwise and."""

    name = "arith.andi"
    traits = _COMMUTATIVE_BINARY_TRAITS


@register_op
class OrIOp(IntBinaryOp):
    """Bitwise or."""

    name = "arith.ori"
    traits = _COMMUTATIVE_BINARY_TRAITS


@register_op
class XOrIOp(IntBinaryOp):
    """Bitwise exclusive or."""

    name = "arith.xori"
    traits = _COMMUTATIVE_BINARY_TRAITS


@register_op
class ShLIOp(IntBinaryOp):
    """Shift left; a shift by the bit width or more gives 0."""

    name = "arith.shli"


@register_op
class ShRSIOp(IntBinaryOp):
    """Arithmetic (sign-filling) shift right."""

    name = "arith.shrsi"


@register_op
class ShRUIOp(IntBinaryOp):
    """Logical (zero-filling) shift right."""

    name = "arith.shrui"


@register_op
class MaxSIOp(IntBinaryOp):
    """The larger, as signed integers."""

    name = "arith.maxsi"
    traits = _COMMUTATIVE_BINARY_TRAITS


@register_op
class MinSIOp(IntBinaryOp):
    """The smaller, as signed integers."""

    name = "arith.minsi"
    traits = _COMMUTATIVE_BINARY_TRAITS


@register_op
class MaxUIOp(IntBinaryOp):
    """The larger, as unsigned integers."""

    name = "arith.maxui"
    traits = _COMMUTATIVE_BINARY_TRAITS


@register_op
class MinUIOp(IntBinaryOp):
    """The smaller, as unsigned integers."""

    name = "arith.minui"
    traits = _COMMUTATIVE_BINARY_TRAITS


@register_op
class AddFOp(FloatBinaryOp):
    """`%z = arith.addf %x, %y : f32`: x + y, rounded once (may be contracted with a multiply unless `nocontract`)."""

    name = "arith.addf"
    traits = _COMMUTATIVE_BINARY_TRAITS


@register_op
class SubFOp(FloatBinaryOp):
    """x - y, rounded once (may be contracted with a multiply unless `nocontract`)."""

    name = "arith.subf"


@register_op
class MulFOp(FloatBinaryOp):
    """x * y, rounded once (may be contracted with an add unless `nocontract`)."""

    name = "arith.mulf"
    traits = _COMMUTATIVE_BINARY_TRAITS


@register_op
class DivFOp(FloatBinaryOp):
    """x / y. `ieee`: correctly rounded (`tl.div_rn`, `tl.fdiv(..., ieee_rounding=True)`);
    without it, Triton's `/`: a backend may divide float32 faster, within 2 ulp (NVIDIA's
    `div.full.f32`), and correctly rounded is a valid result."""

    name = "arith.divf"
    ieee = attr_def(UnitAttr, optional=True)


@register_op
class RemFOp(FloatBinaryOp):
    """The remainder of x / y with the sign of x (C's `fmod`)."""

    name = "arith.remf"


@register_op
class MaxNumFOp(FloatBinaryOp):
    """The larger of x and y; the other operand if one is NaN."""

    name = "arith.maxnumf"
    traits = _COMMUTATIVE_BINARY_TRAITS


@register_op
class MinNumFOp(FloatBinaryOp):
    """The smaller of x and y; the other operand if one is NaN."""

    name = "arith.minnumf"
    traits = _COMMUTATIVE_BINARY_TRAITS


@register_op
class MaximumFOp(FloatBinaryOp):
    """The larger of x and y; NaN if either is NaN."""

    name = "arith.maximumf"
    traits = _COMMUTATIVE_BINARY_TRAITS


@register_op
class MinimumFOp(FloatBinaryOp):
    """The smaller of x and y; NaN if either is NaN."""

    name = "arith.minimumf"
    traits = _COMMUTATIVE_BINARY_TRAITS


@register_op
class NegFOp(Operation):
    """-x (flips the sign bit)."""

    name = "arith.negf"
    operand = operand_def(FLOAT_LIKE)
    result = result_def(FLOAT_LIKE)
    traits = (Pure(), Elementwise(), SameOperandsAndResultType())

    def fold(self, constants):
        source = self.operand.owner
        if isinstance(source, NegFOp):
            return [source.operand]
        return folding.fold_unary(self, constants, lambda x: -x)


# Comparisons and select ------------------------------------------------------------------------

INT_PREDICATES = ("eq", "ne", "slt", "sle", "sgt", "sge", "ult", "ule", "ugt", "uge")
FLOAT_PREDICATES = (
    "false", "oeq", "ogt", "oge", "olt", "ole", "one", "ord",
    "ueq", "ugt", "uge", "ult", "ule", "une", "uno", "true",
)  # fmt: skip


class _CompareOp(Operation):
    predicate = attr_def(StringAttr)
    result = result_def(BOOL_LIKE)
    traits = (Pure(), Elementwise(), SameOperandsType(), SameShapeResultBool())
    predicates: tuple[str, ...] = ()

    @property
    def predicate_str(self) -> str:
        attr = self.attributes["predicate"]
        assert isinstance(attr, StringAttr)
        return attr.value

    def verify_(self) -> None:
        predicate = self.predicate_str
        if predicate not in self.predicates:
            raise VerifyError(
                f"unknown predicate '{predicate}'; expected one of {', '.join(self.predicates)}",
                self,
            )


@register_op
class CmpIOp(_CompareOp):
    """`%b = arith.cmpi %x, %y {predicate = "slt"} : i1`."""

    name = "arith.cmpi"
    lhs = operand_def(INT_LIKE)
    rhs = operand_def(INT_LIKE)
    predicates = INT_PREDICATES

    def fold(self, constants):
        return folding.fold_int_compare(self, self.predicate_str, constants)


@register_op
class CmpFOp(_CompareOp):
    """`%b = arith.cmpf %x, %y {predicate = "olt"} : i1` (ordered/unordered as in LLVM)."""

    name = "arith.cmpf"
    lhs = operand_def(FLOAT_LIKE)
    rhs = operand_def(FLOAT_LIKE)
    predicates = FLOAT_PREDICATES

    def fold(self, constants):
        return folding.fold_float_compare(self, self.predicate_str, constants)


@register_op
class SelectOp(Operation):
    """`%r = arith.select %cond, %a, %b : T`; `%cond` is i1 or a tensor of i1 of T's shape."""

    name = "arith.select"
    condition = operand_def(BOOL_LIKE)
    true_value = operand_def()
    false_value = operand_def()
    result = result_def()
    traits = (Pure(),)

    def verify_(self) -> None:
        t = self.result.type
        if self.true_value.type != t or self.false_value.type != t:
            raise VerifyError(
                f"true and false values must both have the result type {t}, got "
                f"{self.true_value.type} and {self.false_value.type}",
                self,
            )
        cond_shape = shape_of(self.condition.type)
        if cond_shape and cond_shape != shape_of(t):
            raise VerifyError(
                f"condition shape {self.condition.type} does not match the result type {t}", self
            )
        cond = self.condition.type
        if cond_shape and cond.encoding != getattr(t, "encoding", None):  # type: ignore[attr-defined]
            raise VerifyError(f"condition {cond} and result {t} must have one layout", self)

    def fold(self, constants):
        return folding.fold_select(self, constants)


# Casts -----------------------------------------------------------------------------------------


class CastOp(Operation):
    """Base of casts: one operand, one result of the same shape; subclasses check the widths."""

    source = operand_def()
    result = result_def()
    traits = (Pure(), Elementwise())
    source_kind: type | tuple[type, ...] = IntegerType
    result_kind: type | tuple[type, ...] = IntegerType
    width_rule = "any"  # "wider", "narrower", "same" or "any"

    def __init__(self, source: Value, result_type: Type):
        super().__init__(operands=[source], result_types=[result_type])

    def verify_(self) -> None:
        src, dst = element_type(self.source.type), element_type(self.result.type)
        for t, kind, role in ((src, self.source_kind, "source"), (dst, self.result_kind, "result")):
            if not isinstance(t, kind):
                raise VerifyError(f"{role} must be of {kind.__name__} elements, got {t}", self)
        rule = self.width_rule
        src_width, dst_width = src.width, dst.width  # type: ignore[attr-defined]
        if (
            (rule == "wider" and dst_width <= src_width)
            or (rule == "narrower" and dst_width >= src_width)
            or (rule == "same" and dst_width != src_width)
        ):
            raise VerifyError(
                f"result width must be {rule} than the source's: cannot cast {src} to {dst}".replace(
                    "same than", "the same as"
                ),
                self,
            )

    def fold(self, constants):
        return folding.fold_cast(self, constants)


@register_op
class ExtSIOp(CastOp):
    """Sign extension to a wider integer."""

    name = "arith.extsi"
    source_kind = IntegerType
    result_kind = IntegerType
    width_rule = "wider"


@register_op
class ExtUIOp(CastOp):
    """Zero extension to a wider integer."""

    name = "arith.extui"
    source_kind = IntegerType
    result_kind = IntegerType
    width_rule = "wider"


@register_op
class TruncIOp(CastOp):
    """Integer narrowing: the low bits."""

    name = "arith.trunci"
    source_kind = IntegerType
    result_kind = IntegerType
    width_rule = "narrower"


@register_op
class ExtFOp(CastOp):
    """Float widening (f16 -> f32), exact."""

    name = "arith.extf"
    source_kind = FloatType
    result_kind = FloatType
    width_rule = "wider"


@register_op
class TruncFOp(CastOp):
    """Float narrowing (f32 -> f16), rounded to nearest even."""

    name = "arith.truncf"
    source_kind = FloatType
    result_kind = FloatType
    width_rule = "narrower"


@register_op
class SIToFPOp(CastOp):
    """Signed integer to float, rounded to nearest."""

    name = "arith.sitofp"
    source_kind = IntegerType
    result_kind = FloatType
    width_rule = "any"


@register_op
class UIToFPOp(CastOp):
    """Unsigned integer to float, rounded to nearest."""

    name = "arith.uitofp"
    source_kind = IntegerType
    result_kind = FloatType
    width_rule = "any"


@register_op
class FPToSIOp(CastOp):
    """Float to signed integer, rounding toward zero."""

    name = "arith.fptosi"
    source_kind = FloatType
    result_kind = IntegerType
    width_rule = "any"


@register_op
class FPToUIOp(CastOp):
    """Float to unsigned integer, rounding toward zero."""

    name = "arith.fptoui"
    source_kind = FloatType
    result_kind = IntegerType
    width_rule = "any"


@register_op
class BitcastOp(CastOp):
    """The same bits read as another type of the same width (`%f = arith.bitcast %i : f32`)."""

    name = "arith.bitcast"
    source_kind = (IntegerType, FloatType, Float8Type)
    result_kind = (IntegerType, FloatType, Float8Type)
    width_rule = "same"

    def fold(self, constants):
        same_type = element_type(self.source.type) == element_type(self.result.type)
        if constants[0] is None and same_type:
            return [self.source]
        if isinstance(element_type(self.result.type), Float8Type):
            return None  # 8-bit floats have no constants: the bits stay an integer until here
        return folding.fold_cast(self, constants)
