"""`arith.*`: integer and float arithmetic, comparisons, select and casts.

Binary ops take operands of one type (scalars, or tensors of one shape) and give that type.
Signedness is a property of the op (`divsi` vs `divui`), as in MLIR; `u32` and `i32` only differ in
how the frontend chooses ops. Each op folds when its operands are constants and applies the
algebraic identities that are exact for every input (`x + 0`, `x * 1`, `x - x` on integers;
`x * 1.0`, `x + -0.0` on floats).
"""

from __future__ import annotations

from tilec.dialects import arith_folding as folding
from tilec.ir.attributes import Attribute, DenseAttr, FloatAttr, IntegerAttr, StringAttr
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
from tilec.ir.types import FloatType, IntegerType, TensorType, Type, element_type, shape_of


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


class BinaryOp(Operation):
    """Base of `arith` binary ops; subclasses set `name`, the constraint and `evaluate`."""

    lhs = operand_def(INT_LIKE)
    rhs = operand_def(INT_LIKE)
    result = result_def(INT_LIKE)
    traits = (Pure(), Elementwise(), SameOperandsAndResultType())

    def __init__(self, lhs: Value, rhs: Value):
        super().__init__(operands=[lhs, rhs], result_types=[lhs.type])

    def fold(self, constants):
        return folding.fold_binary(self, constants)


def _int_binary(class_name: str, op_name: str, commutative: bool = False) -> type[BinaryOp]:
    traits = (Pure(), Elementwise(), SameOperandsAndResultType())
    if commutative:
        traits = (*traits, Commutative())
    body = {"name": op_name, "traits": traits, "__module__": __name__}
    return register_op(type(class_name, (BinaryOp,), body))  # type: ignore[return-value]


def _float_binary(class_name: str, op_name: str, commutative: bool = False) -> type[BinaryOp]:
    traits = (Pure(), Elementwise(), SameOperandsAndResultType())
    if commutative:
        traits = (*traits, Commutative())
    body = {
        "name": op_name,
        "traits": traits,
        "lhs": operand_def(FLOAT_LIKE),
        "rhs": operand_def(FLOAT_LIKE),
        "result": result_def(FLOAT_LIKE),
        "__module__": __name__,
    }
    return register_op(type(class_name, (BinaryOp,), body))  # type: ignore[return-value]


AddIOp = _int_binary("AddIOp", "arith.addi", commutative=True)
SubIOp = _int_binary("SubIOp", "arith.subi")
MulIOp = _int_binary("MulIOp", "arith.muli", commutative=True)
DivSIOp = _int_binary("DivSIOp", "arith.divsi")
DivUIOp = _int_binary("DivUIOp", "arith.divui")
RemSIOp = _int_binary("RemSIOp", "arith.remsi")
RemUIOp = _int_binary("RemUIOp", "arith.remui")
AndIOp = _int_binary("AndIOp", "arith.andi", commutative=True)
OrIOp = _int_binary("OrIOp", "arith.ori", commutative=True)
XOrIOp = _int_binary("XOrIOp", "arith.xori", commutative=True)
ShLIOp = _int_binary("ShLIOp", "arith.shli")
ShRSIOp = _int_binary("ShRSIOp", "arith.shrsi")
ShRUIOp = _int_binary("ShRUIOp", "arith.shrui")
MaxSIOp = _int_binary("MaxSIOp", "arith.maxsi", commutative=True)
MinSIOp = _int_binary("MinSIOp", "arith.minsi", commutative=True)
MaxUIOp = _int_binary("MaxUIOp", "arith.maxui", commutative=True)
MinUIOp = _int_binary("MinUIOp", "arith.minui", commutative=True)

AddFOp = _float_binary("AddFOp", "arith.addf", commutative=True)
SubFOp = _float_binary("SubFOp", "arith.subf")
MulFOp = _float_binary("MulFOp", "arith.mulf", commutative=True)
DivFOp = _float_binary("DivFOp", "arith.divf")
RemFOp = _float_binary("RemFOp", "arith.remf")
MaxNumFOp = _float_binary("MaxNumFOp", "arith.maxnumf", commutative=True)
MinNumFOp = _float_binary("MinNumFOp", "arith.minnumf", commutative=True)
MaximumFOp = _float_binary("MaximumFOp", "arith.maximumf", commutative=True)
MinimumFOp = _float_binary("MinimumFOp", "arith.minimumf", commutative=True)


@register_op
class NegFOp(Operation):
    name = "arith.negf"
    operand = operand_def(FLOAT_LIKE)
    result = result_def(FLOAT_LIKE)
    traits = (Pure(), Elementwise(), SameOperandsAndResultType())

    def fold(self, constants):
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

    def verify_(self) -> None:
        predicate = self.attributes["predicate"].value  # type: ignore[attr-defined]
        if predicate not in self.predicates:
            raise VerifyError(
                f"unknown predicate '{predicate}'; expected one of {', '.join(self.predicates)}",
                self,
            )

    def fold(self, constants):
        return folding.fold_compare(self, constants)


@register_op
class CmpIOp(_CompareOp):
    """`%b = arith.cmpi %x, %y {predicate = "slt"} : i1`."""

    name = "arith.cmpi"
    lhs = operand_def(INT_LIKE)
    rhs = operand_def(INT_LIKE)
    predicates = INT_PREDICATES


@register_op
class CmpFOp(_CompareOp):
    """`%b = arith.cmpf %x, %y {predicate = "olt"} : i1` (ordered/unordered as in LLVM)."""

    name = "arith.cmpf"
    lhs = operand_def(FLOAT_LIKE)
    rhs = operand_def(FLOAT_LIKE)
    predicates = FLOAT_PREDICATES


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
    source_kind: type = IntegerType
    result_kind: type = IntegerType
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


def _cast(
    class_name: str, op_name: str, source_kind: type, result_kind: type, width_rule: str
) -> type[CastOp]:
    body = {
        "name": op_name,
        "source_kind": source_kind,
        "result_kind": result_kind,
        "width_rule": width_rule,
        "__module__": __name__,
    }
    return register_op(type(class_name, (CastOp,), body))  # type: ignore[return-value]


ExtSIOp = _cast("ExtSIOp", "arith.extsi", IntegerType, IntegerType, "wider")
ExtUIOp = _cast("ExtUIOp", "arith.extui", IntegerType, IntegerType, "wider")
TruncIOp = _cast("TruncIOp", "arith.trunci", IntegerType, IntegerType, "narrower")
ExtFOp = _cast("ExtFOp", "arith.extf", FloatType, FloatType, "wider")
TruncFOp = _cast("TruncFOp", "arith.truncf", FloatType, FloatType, "narrower")
SIToFPOp = _cast("SIToFPOp", "arith.sitofp", IntegerType, FloatType, "any")
UIToFPOp = _cast("UIToFPOp", "arith.uitofp", IntegerType, FloatType, "any")
FPToSIOp = _cast("FPToSIOp", "arith.fptosi", FloatType, IntegerType, "any")
FPToUIOp = _cast("FPToUIOp", "arith.fptoui", FloatType, IntegerType, "any")
BitcastOp = _cast(
    "BitcastOp", "arith.bitcast", (IntegerType, FloatType), (IntegerType, FloatType), "same"
)  # type: ignore[arg-type]
