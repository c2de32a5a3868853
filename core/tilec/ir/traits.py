"""Traits (properties of op classes that passes query) and the type constraints ops declare."""

from __future__ import annotations

from tilec.ir.core import Constraint, Operation, Trait, VerifyError
from tilec.ir.types import (
    Float8Type,
    FloatType,
    IntegerType,
    PointerType,
    TensorType,
    Type,
    element_type,
    i1,
    i32,
    is_pointer,
    shape_of,
)

# Type constraints ------------------------------------------------------------------------------


def _scalar_or_tensor_of(description: str, predicate) -> Constraint:
    return Constraint(
        f"{description} or tensor of {description}s", lambda t: predicate(element_type(t))
    )


INT_LIKE = _scalar_or_tensor_of("integer", lambda t: isinstance(t, IntegerType))
FLOAT_LIKE = _scalar_or_tensor_of("float", lambda t: isinstance(t, FloatType))
BOOL_LIKE = Constraint("i1 or tensor of i1", lambda t: element_type(t) == i1)
PTR_LIKE = _scalar_or_tensor_of("pointer", lambda t: isinstance(t, PointerType))
NUMERIC_LIKE = _scalar_or_tensor_of(
    "integer or float", lambda t: isinstance(t, (IntegerType, FloatType))
)
SCALAR = Constraint(
    "scalar (integer, float or pointer)",
    lambda t: isinstance(t, (IntegerType, FloatType, Float8Type, PointerType)),
)
INT_SCALAR = Constraint("integer scalar", lambda t: isinstance(t, IntegerType))
I32 = Constraint("i32", lambda t: t == i32)
BOOL_SCALAR = Constraint("i1", lambda t: t == i1)
TENSOR = Constraint("tensor", lambda t: isinstance(t, TensorType))
INT_TENSOR = Constraint(
    "tensor of integers",
    lambda t: isinstance(t, TensorType) and isinstance(t.element_type, IntegerType),
)


# Traits ----------------------------------------------------------------------------------------


class Pure(Trait):
    """No side effects: may be removed when unused, merged with an identical op, or hoisted."""


class ReadOnly(Trait):
    """Reads memory but writes none: removable when unused, but never merged or hoisted past writes."""


class MemoryRead(Trait):
    """Reads memory through its pointer operand (`ptr`, the first operand)."""


class MemoryWrite(Trait):
    """Writes memory through its pointer operand (`ptr`, the first operand)."""


class RecursivelyPure(Trait):
    """Side effects are exactly those of the nested ops (scf.if, scf.for, scf.while)."""


class Commutative(Trait):
    """The two operands may be swapped."""


class ConstantLike(Trait):
    """Materializes the constant in its `value` attribute."""


class IsTerminator(Trait):
    """Must be the last op of its block."""


class IsolatedFromAbove(Trait):
    """Its regions may not use values defined outside it (functions)."""


class HasParent(Trait):
    """Must be nested directly inside an op of one of the given classes."""

    def __init__(self, *parents: type[Operation]):
        self.parents = parents

    def verify(self, op: Operation) -> None:
        if not isinstance(op.parent_op, self.parents):
            expected = " or ".join(f"'{p.name}'" for p in self.parents)
            raise VerifyError(f"expects parent op {expected}", op)


class SameOperandsAndResultType(Trait):
    """All operands and results have one and the same type."""

    def verify(self, op: Operation) -> None:
        types = [v.type for v in (*op.operands, *op.results)]
        if any(t != types[0] for t in types):
            listed = ", ".join(map(str, types))
            raise VerifyError(
                f"requires the same type for all operands and results, got {listed}", op
            )


class SameOperandsType(Trait):
    def verify(self, op: Operation) -> None:
        types = [v.type for v in op.operands]
        if any(t != types[0] for t in types):
            raise VerifyError(
                f"requires all operands to have the same type, got {', '.join(map(str, types))}", op
            )


class Elementwise(Trait):
    """Applies element by element: every tensor operand and result has the same shape, and either
    all of them are tensors or none are (scalars are splatted explicitly with `tile.splat`)."""

    def verify(self, op: Operation) -> None:
        values = [*op.operands, *op.results]
        kinds = {isinstance(v.type, TensorType) for v in values}
        if len(kinds) > 1:
            raise VerifyError(
                "mixes scalars and tensors; splat the scalar to the tensor's shape first", op
            )
        shapes = {shape_of(v.type) for v in values}
        if len(shapes) > 1:
            listed = ", ".join("x".join(map(str, s)) for s in sorted(shapes))
            raise VerifyError(
                f"requires operands and results of equal shape, got shapes {listed}", op
            )
        layouts = {v.type.encoding for v in values if isinstance(v.type, TensorType)}
        if len(layouts) > 1:
            listed = ", ".join(str(v.type) for v in values)
            raise VerifyError(
                f"requires operands and results of one layout, got {listed}; insert a "
                "gpu.convert_layout",
                op,
            )


class SameShapeResultBool(Trait):
    """Comparisons: the result is i1 with the operands' shape."""

    def verify(self, op: Operation) -> None:
        expected = _like(op.operands[0].type, i1)
        if op.result.type != expected:
            raise VerifyError(f"result must be {expected}, got {op.result.type}", op)


def _like(t: Type, element: Type) -> Type:
    return t.with_element_type(element) if isinstance(t, TensorType) else element


def is_pure(op: Operation) -> bool:
    """True if `op` (including everything nested in it) has no side effects.

    Each nested op is looked at once (an explicit worklist over the regions' direct children), so
    the cost is linear in the ops nested in `op`: recursing into `walk()` at every level, as this
    once did, visited an op once per enclosing region and took exponential time in the depth.
    """
    worklist = [op]
    while worklist:
        current = worklist.pop()
        if current.has_trait(Pure):
            continue
        if not current.has_trait(RecursivelyPure):
            return False
        for region in current.regions:
            for block in region.blocks:
                worklist.extend(block.ops)
    return True


def pointer_pointee(t: Type) -> Type:
    assert is_pointer(t)
    return element_type(t).pointee  # type: ignore[attr-defined]
