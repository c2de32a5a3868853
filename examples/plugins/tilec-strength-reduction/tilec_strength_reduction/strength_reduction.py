"""`strength-reduction`: unsigned integer multiply, divide and remainder by a power of two become
shifts and masks, which are cheaper on every GPU::

    %c8 = arith.constant {value = 8 : i32} : i32
    %y = arith.muli %x, %c8 : i32      ->  %c3 = arith.constant {value = 3 : i32} : i32
                                           %y = arith.shli %x, %c3 : i32

- `arith.muli %x, 2**k` (either operand) -> `arith.shli %x, k`: exact in two's complement;
- `arith.divui %x, 2**k` -> `arith.shrui %x, k`;
- `arith.remui %x, 2**k` -> `arith.andi %x, 2**k - 1`.

The constant is a scalar `IntegerAttr` or a splat `DenseAttr` (for tensors); the new constant has
the same type. The old constant is left for `dce` (it may have other users), and the new ones for
`cse` to merge, which is why this pass runs before `cse`.
"""

from __future__ import annotations

from tilec.dialects.arith import AndIOp, ConstantOp, ShLIOp, ShRUIOp, constant_attr
from tilec.ir import Builder, DenseAttr, IntegerAttr, IntegerType, Operation, OpResult, Value
from tilec.passes.base import ModulePass, PassContext

REPLACEMENTS: dict[str, type[Operation]] = {
    "arith.muli": ShLIOp,
    "arith.divui": ShRUIOp,
    "arith.remui": AndIOp,
}


class StrengthReduction(ModulePass):
    name = "strength-reduction"
    stage = "tir"
    description = (
        "rewrite integer multiply, divide and remainder by powers of two as shifts and masks"
    )
    after = ("canonicalize",)  # canonicalize folds constants, so more operands are powers of two
    before = ("cse",)  # cse merges the shift-amount constants this pass creates

    def run(self, module: Operation, context: PassContext) -> bool:
        changed = False
        for op in list(module.walk()):
            if op.name in REPLACEMENTS:
                changed |= reduce_op(op)
        return changed


def reduce_op(op: Operation) -> bool:
    """Rewrite `op` if one of its operands is a power-of-two constant; return whether it did."""
    lhs, rhs = op.operands
    candidates = [(lhs, rhs)]
    if op.name == "arith.muli":  # commutative: the constant may come first
        candidates.append((rhs, lhs))
    for value, divisor in candidates:
        exponent = power_of_two_exponent(divisor)
        if exponent is not None:
            replace(op, value, exponent)
            return True
    return False


def power_of_two_exponent(value: Value) -> int | None:
    """k if `value` is an `arith.constant` equal to 2**k (as an unsigned integer), else None."""
    if not isinstance(value, OpResult) or not isinstance(value.op, ConstantOp):
        return None
    attr = value.op.attributes["value"]
    if isinstance(attr, DenseAttr):
        attr = attr.value
    if not isinstance(attr, IntegerAttr) or not isinstance(attr.type, IntegerType):
        return None
    unsigned = attr.value & ((1 << attr.type.width) - 1)
    if unsigned == 0 or unsigned & (unsigned - 1):
        return None
    return unsigned.bit_length() - 1


def replace(op: Operation, value: Value, exponent: int) -> None:
    """Replace `op` by its cheaper form on `value`, with a new constant placed just before it."""
    result = op.results[0]
    amount = (1 << exponent) - 1 if op.name == "arith.remui" else exponent
    builder = Builder.before_op(op)
    attributes = {"value": constant_attr(amount, result.type)}
    constant = builder.insert(
        ConstantOp.create([], [result.type], attributes, location=op.location)
    )
    new_op = REPLACEMENTS[op.name].create(
        [value, constant.results[0]], [result.type], location=op.location
    )
    builder.insert(new_op)
    new_op.results[0].name_hint = result.name_hint
    result.replace_all_uses_with(new_op.results[0])
    op.erase()
