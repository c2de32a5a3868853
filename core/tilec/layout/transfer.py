"""How each op transforms axis info (`tilec.layout.axis_info`), after Triton's AxisInfo.cpp.

`transfer(op, operand_infos)` returns one `AxisInfo` per result. Ops without a rule give the
pessimistic answer (all ones), which is always correct.
"""

from __future__ import annotations

from collections.abc import Callable
from math import gcd
from typing import Any

from tilec.dialects import arith, gpu, tile
from tilec.ir.attributes import DenseAttr, IntegerAttr
from tilec.ir.core import Operation
from tilec.ir.types import IntegerType, element_type, shape_of
from tilec.layout.axis_lattice import (
    MAX_DIVISIBILITY,
    AxisInfo,
    element_bytes,
    highest_pow2_divisor,
)
from tilec.layout.axis_lattice import rank_of as _rank

Rule = Callable[[Any, list[AxisInfo]], AxisInfo]
"""A transfer function; its op parameter may be annotated with the op class it is for."""
RULES: dict[type[Operation], Rule] = {}


def transfer(op: Operation, operands: list[AxisInfo]) -> list[AxisInfo]:
    rule = RULES.get(type(op))
    if rule is None or len(op.results) != 1:
        return [AxisInfo.unknown(_rank(r)) for r in op.results]
    return [rule(op, operands)]


def rule(*op_classes: type[Operation]) -> Callable[[Rule], Rule]:
    """Register the decorated function as the transfer rule of ops of exactly these classes."""

    def register(fn: Rule) -> Rule:
        for op_class in op_classes:
            RULES[op_class] = fn
        return fn

    return register


def _shape(op: Operation) -> tuple[int, ...]:
    return shape_of(op.results[0].type) or (1,)


def _mul_div(a: int, b: int) -> int:
    return min(a * b, MAX_DIVISIBILITY)


def _is(info: AxisInfo, value: int) -> bool:
    return info.constant is not None and info.constant == value


def _wrap(op: Operation, value: int | None) -> int | None:
    """A constant folded in the result's integer type (None if it does not fit the rules)."""
    t = element_type(op.results[0].type)
    if value is None or not isinstance(t, IntegerType):
        return None
    mask = (1 << t.width) - 1
    value &= mask
    if not t.unsigned and t.width > 1 and value >> (t.width - 1):
        value -= 1 << t.width
    return value


def _fold(op: Operation, lhs: AxisInfo, rhs: AxisInfo, fn) -> int | None:
    if lhs.constant is None or rhs.constant is None:
        return None
    try:
        return _wrap(op, fn(lhs.constant, rhs.constant))
    except (ZeroDivisionError, ValueError):
        return None


# Sources ---------------------------------------------------------------------------------------


@rule(arith.ConstantOp)
def _constant(op: arith.ConstantOp, operands: list[AxisInfo]) -> AxisInfo:
    value = op.value
    scalar = value.value if isinstance(value, DenseAttr) else value
    if not isinstance(scalar, IntegerAttr):
        return AxisInfo.unknown(_rank(op.results[0]))
    return AxisInfo.splat_constant(scalar.value, shape_of(op.results[0].type))


@rule(tile.MakeRangeOp)
def _make_range(op: tile.MakeRangeOp, operands: list[AxisInfo]) -> AxisInfo:
    start, end = op.start.value, op.end.value
    return AxisInfo((end - start,), (highest_pow2_divisor(start),), (1,))


@rule(tile.SplatOp)
def _splat(op: tile.SplatOp, operands: list[AxisInfo]) -> AxisInfo:
    src, shape = operands[0], _shape(op)
    rank = len(shape)
    return AxisInfo((1,) * rank, (src.divisibility[0],) * rank, shape, src.constant)


# Shapes ----------------------------------------------------------------------------------------


@rule(tile.BroadcastOp)
def _broadcast(op: tile.BroadcastOp, operands: list[AxisInfo]) -> AxisInfo:
    src, shape = operands[0], _shape(op)
    src_shape = shape_of(op.source.type)
    grown = [a == 1 and b != 1 for a, b in zip(src_shape, shape, strict=True)]
    return AxisInfo(
        tuple(1 if g else c for g, c in zip(grown, src.contiguity, strict=True)),
        src.divisibility,
        tuple(b if g else k for g, b, k in zip(grown, shape, src.constancy, strict=True)),
        src.constant,
    )


@rule(tile.ExpandDimsOp)
def _expand_dims(op: tile.ExpandDimsOp, operands: list[AxisInfo]) -> AxisInfo:
    src = operands[0]
    axis = op.axis.value
    if src.constant is not None:
        divisibility = highest_pow2_divisor(src.constant)
    else:
        divisibility = 0
        for c, d in zip(src.contiguity, src.divisibility, strict=True):
            divisibility = gcd(divisibility, 1 if c > 1 else d)
    return AxisInfo(
        (*src.contiguity[:axis], 1, *src.contiguity[axis:]),
        (*src.divisibility[:axis], divisibility, *src.divisibility[axis:]),
        (*src.constancy[:axis], 1, *src.constancy[axis:]),
        src.constant,
    )


@rule(tile.TransOp)
def _trans(op: tile.TransOp, operands: list[AxisInfo]) -> AxisInfo:
    src = operands[0]
    order = op.order.ints()
    return AxisInfo(
        tuple(src.contiguity[i] for i in order),
        tuple(src.divisibility[i] for i in order),
        tuple(src.constancy[i] for i in order),
        src.constant,
    )


@rule(
    arith.ExtSIOp, arith.ExtUIOp, arith.TruncIOp, tile.IntToPtrOp, tile.PtrToIntOp,
    gpu.ConvertLayoutOp,
)  # fmt: skip
def _same(op: Operation, operands: list[AxisInfo]) -> AxisInfo:
    return operands[0]


# Arithmetic ------------------------------------------------------------------------------------


@rule(arith.AddIOp, arith.SubIOp, tile.AddPtrOp)
def _add_sub(op: Operation, operands: list[AxisInfo]) -> AxisInfo:
    lhs, rhs = operands
    subtract = isinstance(op, arith.SubIOp)
    pointer = isinstance(op, tile.AddPtrOp)
    scale = element_bytes(op.ptr) if isinstance(op, tile.AddPtrOp) else 1
    contiguity, divisibility, constancy = [], [], []
    for d in range(lhs.rank):
        contig = gcd(lhs.contiguity[d], rhs.constancy[d])
        if not subtract:
            contig = max(contig, gcd(lhs.constancy[d], rhs.contiguity[d]))
        contiguity.append(contig)
        divisibility.append(gcd(lhs.divisibility[d], _mul_div(rhs.divisibility[d], scale)))
        constancy.append(gcd(lhs.constancy[d], rhs.constancy[d]))
    constant = None
    if not pointer:
        constant = _fold(op, lhs, rhs, (lambda a, b: a - b) if subtract else (lambda a, b: a + b))
    return AxisInfo(tuple(contiguity), tuple(divisibility), tuple(constancy), constant)


@rule(arith.MulIOp)
def _mul(op: Operation, operands: list[AxisInfo]) -> AxisInfo:
    lhs, rhs = operands
    contiguity, divisibility, constancy = [], [], []
    for d in range(lhs.rank):
        contiguity.append(
            max(
                lhs.contiguity[d] if _is(rhs, 1) else 1,
                rhs.contiguity[d] if _is(lhs, 1) else 1,
            )
        )
        # A run [2^n, 2^n + 1, ...] only has its first element divisible by 2^n.
        lhs_div = 1 if lhs.contiguity[d] > 1 and not _is(rhs, 1) else lhs.divisibility[d]
        rhs_div = 1 if rhs.contiguity[d] > 1 and not _is(lhs, 1) else rhs.divisibility[d]
        divisibility.append(_mul_div(lhs_div, rhs_div))
        constancy.append(gcd(lhs.constancy[d], rhs.constancy[d]))
    constant = _fold(op, lhs, rhs, lambda a, b: a * b)
    return AxisInfo(tuple(contiguity), tuple(divisibility), tuple(constancy), constant)


def _c_div(a: int, b: int) -> int:
    quotient = abs(a) // abs(b)
    return quotient if (a < 0) == (b < 0) else -quotient


@rule(arith.DivSIOp, arith.DivUIOp)
def _div(op: Operation, operands: list[AxisInfo]) -> AxisInfo:
    lhs, rhs = operands
    contiguity, divisibility, constancy = [], [], []
    for d in range(lhs.rank):
        contiguity.append(lhs.contiguity[d] if _is(rhs, 1) else 1)
        const = gcd(lhs.constancy[d], rhs.constancy[d])
        if lhs.contiguity[d] > 1 and rhs.constancy[d] > 1:
            # [d*k, d*k + 1, ...] / c is constant over gcd(d, c)-long runs.
            group = gcd(lhs.divisibility[d], rhs.divisibility[d])
            const = max(const, gcd(lhs.contiguity[d], group, rhs.constancy[d]))
        constancy.append(const)
        divisibility.append(lhs.divisibility[d] if _is(lhs, 0) or _is(rhs, 1) else 1)
    constant = _fold(op, lhs, rhs, _c_div)
    return AxisInfo(tuple(contiguity), tuple(divisibility), tuple(constancy), constant)


@rule(arith.RemSIOp, arith.RemUIOp)
def _rem(op: Operation, operands: list[AxisInfo]) -> AxisInfo:
    lhs, rhs = operands
    shape = _shape(op)
    contiguity, divisibility, constancy = [], [], []
    for d in range(lhs.rank):
        group = gcd(lhs.divisibility[d], rhs.divisibility[d])
        contiguity.append(gcd(lhs.contiguity[d], group, rhs.constancy[d]))
        divisibility.append(group)
        constancy.append(shape[d] if _is(rhs, 1) else gcd(lhs.constancy[d], rhs.constancy[d]))
    constant = _fold(op, lhs, rhs, lambda a, b: a - _c_div(a, b) * b)
    return AxisInfo(tuple(contiguity), tuple(divisibility), tuple(constancy), constant)


@rule(arith.ShLIOp)
def _shl(op: Operation, operands: list[AxisInfo]) -> AxisInfo:
    lhs, rhs = operands
    shift = rhs.constant
    contiguity, divisibility, constancy = [], [], []
    for d in range(lhs.rank):
        contiguity.append(lhs.contiguity[d] if shift == 0 else 1)
        lhs_div = 1 if lhs.contiguity[d] > 1 and shift != 0 else lhs.divisibility[d]
        factor = 1 << shift if shift is not None and 0 <= shift < 62 else 1
        divisibility.append(_mul_div(lhs_div, factor))
        constancy.append(gcd(lhs.constancy[d], rhs.constancy[d]))
    constant = _fold(op, lhs, rhs, lambda a, b: a << b if 0 <= b < 64 else None)
    return AxisInfo(tuple(contiguity), tuple(divisibility), tuple(constancy), constant)


@rule(arith.ShRSIOp, arith.ShRUIOp)
def _shr(op: Operation, operands: list[AxisInfo]) -> AxisInfo:
    lhs, rhs = operands
    shift = rhs.constant
    contiguity, divisibility, constancy = [], [], []
    for d in range(lhs.rank):
        contiguity.append(lhs.contiguity[d] if shift == 0 else 1)
        const = gcd(lhs.constancy[d], rhs.constancy[d])
        if shift is not None and 0 < shift < 62 and lhs.contiguity[d] > 1:
            const = max(const, gcd(lhs.contiguity[d], lhs.divisibility[d], 1 << shift))
        constancy.append(const)
        lhs_div = 1 if lhs.contiguity[d] > 1 and shift != 0 else lhs.divisibility[d]
        if shift is None or not 0 <= shift < 62:
            divisibility.append(1)
        else:
            divisibility.append(max(1, lhs_div >> shift))
    constant = None
    if isinstance(op, arith.ShRSIOp):
        constant = _fold(op, lhs, rhs, lambda a, b: a >> b if 0 <= b < 64 else None)
    return AxisInfo(tuple(contiguity), tuple(divisibility), tuple(constancy), constant)


@rule(arith.AndIOp, arith.OrIOp, arith.XOrIOp)
def _logical(op: Operation, operands: list[AxisInfo]) -> AxisInfo:
    lhs, rhs = operands
    rank = lhs.rank
    constancy = tuple(gcd(a, b) for a, b in zip(lhs.constancy, rhs.constancy, strict=True))
    if isinstance(op, arith.AndIOp):
        # x & y keeps the trailing zero bits of either operand.
        divisibility = tuple(map(max, lhs.divisibility, rhs.divisibility))
        fn = lambda a, b: a & b  # noqa: E731
    else:
        divisibility = (1,) * rank
        fn = (lambda a, b: a | b) if isinstance(op, arith.OrIOp) else (lambda a, b: a ^ b)
    return AxisInfo((1,) * rank, divisibility, constancy, _fold(op, lhs, rhs, fn))


@rule(arith.MaxSIOp, arith.MinSIOp, arith.MaxUIOp, arith.MinUIOp)
def _max_min(op: Operation, operands: list[AxisInfo]) -> AxisInfo:
    lhs, rhs = operands
    fn = max if isinstance(op, (arith.MaxSIOp, arith.MaxUIOp)) else min
    return AxisInfo(
        (1,) * lhs.rank,
        tuple(map(gcd, lhs.divisibility, rhs.divisibility)),
        tuple(map(gcd, lhs.constancy, rhs.constancy)),
        _fold(op, lhs, rhs, fn),
    )


# Comparisons and select ------------------------------------------------------------------------

_COMPARE = {
    "eq": lambda a, b: a == b, "ne": lambda a, b: a != b,
    "slt": lambda a, b: a < b, "sle": lambda a, b: a <= b,
    "sgt": lambda a, b: a > b, "sge": lambda a, b: a >= b,
    "ult": lambda a, b: a < b, "ule": lambda a, b: a <= b,
    "ugt": lambda a, b: a > b, "uge": lambda a, b: a >= b,
}  # fmt: skip


@rule(arith.CmpIOp)
def _cmpi(op: arith.CmpIOp, operands: list[AxisInfo]) -> AxisInfo:
    lhs, rhs = operands
    predicate = op.predicate.value
    shape = _shape(op)
    constancy = []
    for d in range(lhs.rank):
        if lhs.constant is not None and rhs.constant is not None:
            constancy.append(shape[d])
            continue
        const = gcd(lhs.constancy[d], rhs.constancy[d])
        group = gcd(lhs.divisibility[d], rhs.divisibility[d])
        # A run [d*k, d*k + 1, ...] compares the same way against a multiple of gcd(d, c) over
        # the whole run for `<` and `>=` (lhs is the run) or `>` and `<=` (rhs is the run).
        if predicate in ("slt", "ult", "sge", "uge") and lhs.contiguity[d] > 1:
            const = max(const, gcd(lhs.contiguity[d], group, rhs.constancy[d]))
        elif predicate in ("sgt", "ugt", "sle", "ule") and rhs.contiguity[d] > 1:
            const = max(const, gcd(rhs.contiguity[d], group, lhs.constancy[d]))
        constancy.append(const)
    constant = None
    if lhs.constant is not None and rhs.constant is not None:
        constant = int(_COMPARE[predicate](lhs.constant, rhs.constant))
    return AxisInfo((1,) * lhs.rank, (1,) * lhs.rank, tuple(constancy), constant)


@rule(arith.SelectOp)
def _select(op: arith.SelectOp, operands: list[AxisInfo]) -> AxisInfo:
    condition, lhs, rhs = operands
    if condition.constant is not None:
        return lhs if condition.constant else rhs
    cond_const = condition.constancy if shape_of(op.condition.type) else _shape(op)
    contiguity = tuple(
        gcd(min(a, c), min(b, c))
        for a, b, c in zip(lhs.contiguity, rhs.contiguity, cond_const, strict=True)
    )
    return AxisInfo(
        contiguity,
        tuple(map(gcd, lhs.divisibility, rhs.divisibility)),
        tuple(
            gcd(a, b, c) for a, b, c in zip(lhs.constancy, rhs.constancy, cond_const, strict=True)
        ),
        lhs.constant if lhs.constant is not None and lhs.constant == rhs.constant else None,
    )
