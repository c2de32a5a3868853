"""Constant folding and exact algebraic identities for `arith` ops.

Integer results wrap at the type's width; float results are computed in float64 and rounded to the
result type (exact for +, -, *, / since float64 holds more than twice the bits of float32), bf16
through float32 with round-to-nearest-even, as the hardware converts. Folds that would produce
poison in LLVM (division by zero, shifts by the width or more, out-of-range float-to-int) are left
alone.
"""

from __future__ import annotations

import math
import struct

from tilec.ir.attributes import Attribute, DenseAttr, FloatAttr, IntegerAttr
from tilec.ir.core import Operation, Value
from tilec.ir.types import FloatType, IntegerType, TensorType, Type, element_type, i1


def wrap_int(value: int, t: IntegerType) -> int:
    """`value` reduced to `t`'s width: signed range for iN, unsigned for uN, 0/1 for i1."""
    value &= (1 << t.width) - 1
    if t.unsigned or t.width == 1:
        return value
    return value - (1 << t.width) if value >= 1 << (t.width - 1) else value


def as_signed(value: int, width: int) -> int:
    value &= (1 << width) - 1
    return value - (1 << width) if width > 1 and value >= 1 << (width - 1) else value


def as_unsigned(value: int, width: int) -> int:
    return value & ((1 << width) - 1)


def bf16_round(value: float) -> float:
    """Round to bfloat16, nearest even.

    Goes through float32 rounded to odd (truncate, then set the last bit if inexact), which
    keeps the second rounding exact; rounding to float32 to nearest first would round twice
    (1 + 2**-8 + 2**-40 would give 1.0 instead of 1 + 2**-7).
    """
    if math.isnan(value) or math.isinf(value):
        return value
    single = _rounded(value, "<f")
    bits = struct.unpack("<I", struct.pack("<f", single))[0]
    if float(single) != value:
        if abs(float(single)) > abs(value):
            bits -= 1
        bits |= 1
    bits = ((bits + 0x7FFF + ((bits >> 16) & 1)) & 0xFFFF0000) & 0xFFFFFFFF
    return struct.unpack("<f", struct.pack("<I", bits))[0]


def round_float(value: float, t: FloatType) -> float:
    if t.name == "f64":
        return float(value)
    if t.name == "f32":
        return _rounded(value, "<f")
    if t.name == "f16":
        return _rounded(value, "<e")
    return bf16_round(value)


def _rounded(value: float, code: str) -> float:
    """`value` rounded to the IEEE format of `struct` code `code` (`<f`: float32, `<e`: float16),
    nearest even, overflowing to an infinity (as NumPy's `np.float32(value)`; without NumPy, which
    a compile need not load)."""
    try:
        return struct.unpack(code, struct.pack(code, value))[0]
    except OverflowError:  # rounds past the largest finite value
        return math.copysign(math.inf, value)


def scalar_value(attr: Attribute | None) -> int | float | None:
    if isinstance(attr, DenseAttr):
        attr = attr.value
    if isinstance(attr, (IntegerAttr, FloatAttr)):
        return attr.value
    return None


def make_constant(value: int | float, result_type: Type) -> Attribute:
    scalar_type = element_type(result_type)
    if isinstance(scalar_type, IntegerType):
        scalar: IntegerAttr | FloatAttr = IntegerAttr(
            wrap_int(int(value), scalar_type), scalar_type
        )
    else:
        assert isinstance(scalar_type, FloatType)
        scalar = FloatAttr(round_float(float(value), scalar_type), scalar_type)
    if isinstance(result_type, TensorType):
        return DenseAttr(scalar, result_type)
    return scalar


def _div_trunc(a: int, b: int) -> int:
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b >= 0) else -q


def _int_evaluate(name: str, a: int, b: int, width: int) -> int | None:
    sa, sb = as_signed(a, width), as_signed(b, width)
    ua, ub = as_unsigned(a, width), as_unsigned(b, width)
    if name == "addi":
        return a + b
    if name == "subi":
        return a - b
    if name == "muli":
        return a * b
    if name in ("divsi", "remsi"):
        if sb == 0 or (sa == -(1 << (width - 1)) and sb == -1):
            return None
        quotient = _div_trunc(sa, sb)
        return quotient if name == "divsi" else sa - sb * quotient
    if name in ("divui", "remui"):
        if ub == 0:
            return None
        return ua // ub if name == "divui" else ua % ub
    if name == "andi":
        return ua & ub
    if name == "ori":
        return ua | ub
    if name == "xori":
        return ua ^ ub
    if name in ("shli", "shrsi", "shrui"):
        if ub >= width:
            return None
        return {"shli": ua << ub, "shrsi": sa >> ub, "shrui": ua >> ub}[name]
    return {
        "maxsi": max(sa, sb),
        "minsi": min(sa, sb),
        "maxui": max(ua, ub),
        "minui": min(ua, ub),
    }[name]


def _float_evaluate(name: str, a: float, b: float) -> float:
    """IEEE float64 arithmetic, as C computes it (a division by zero is an infinity or NaN, a
    remainder of an infinity or by zero NaN; Python would raise)."""
    x, y = float(a), float(b)
    if name == "addf":
        return x + y
    if name == "subf":
        return x - y
    if name == "mulf":
        return x * y
    if name == "divf":
        if y == 0:
            if x == 0 or math.isnan(x):
                return math.nan
            return math.copysign(math.inf, x) * math.copysign(1.0, y)
        return x / y
    if name == "remf":
        if y == 0 or math.isinf(x) or math.isnan(x) or math.isnan(y):
            return math.nan
        return math.fmod(x, y)
    return _min_max(name, x, y)


def _min_max(name: str, x: float, y: float) -> float:
    """LLVM's minnum/maxnum (a NaN operand is ignored) and minimum/maximum (NaN wins); both
    order -0.0 below +0.0, which NumPy's min/max functions do not."""
    if math.isnan(x) or math.isnan(y):
        if name in ("maximumf", "minimumf"):
            return math.nan
        return y if math.isnan(x) else x
    want_min = name.startswith("min")
    if x == y:
        return x if (math.copysign(1.0, x) < 0) == want_min else y
    return x if (x < y) == want_min else y


def _is_int(attr_value: int | float | None, expected: int, width: int) -> bool:
    return isinstance(attr_value, int) and as_unsigned(attr_value, width) == as_unsigned(
        expected, width
    )


def _is_float(attr_value: int | float | None, expected: float) -> bool:
    return (
        isinstance(attr_value, float)
        and attr_value == expected
        and math.copysign(1.0, attr_value) == math.copysign(1.0, expected)
    )


def fold_binary(op: Operation, constants: list[Attribute | None]) -> list[Attribute | Value] | None:
    name = op.name.split(".")[1]
    lhs, rhs = op.operands
    a, b = (scalar_value(c) for c in constants)
    result_type = op.results[0].type
    scalar_type = element_type(result_type)
    if a is not None and b is not None:
        if isinstance(scalar_type, IntegerType):
            value = _int_evaluate(name, int(a), int(b), scalar_type.width)
            return None if value is None else [make_constant(value, result_type)]
        return [make_constant(_float_evaluate(name, float(a), float(b)), result_type)]
    if isinstance(scalar_type, IntegerType):
        return _int_identity(name, lhs, rhs, a, b, scalar_type.width, result_type)
    return _float_identity(name, lhs, rhs, a, b)


def _int_identity(name, lhs, rhs, a, b, width, result_type):
    zero = make_constant(0, result_type)
    all_ones = make_constant(-1, result_type)
    if lhs is rhs:
        if name in ("subi", "xori"):
            return [zero]
        if name in ("andi", "ori", "maxsi", "minsi", "maxui", "minui"):
            return [lhs]
    if name in ("addi", "ori", "xori") and _is_int(b, 0, width):
        return [lhs]
    if name in ("addi", "ori", "xori") and _is_int(a, 0, width):
        return [rhs]
    if name in ("subi", "shli", "shrsi", "shrui") and _is_int(b, 0, width):
        return [lhs]
    if name == "muli":
        if _is_int(b, 1, width):
            return [lhs]
        if _is_int(a, 1, width):
            return [rhs]
        if _is_int(a, 0, width) or _is_int(b, 0, width):
            return [zero]
    if name in ("divsi", "divui") and _is_int(b, 1, width):
        return [lhs]
    if name in ("remsi", "remui") and _is_int(b, 1, width):
        return [zero]
    if name == "andi":
        if _is_int(a, 0, width) or _is_int(b, 0, width):
            return [zero]
        if _is_int(b, -1, width):
            return [lhs]
        if _is_int(a, -1, width):
            return [rhs]
    if name == "ori" and (_is_int(a, -1, width) or _is_int(b, -1, width)):
        return [all_ones]
    return None


def _float_identity(name, lhs, rhs, a, b):
    if lhs is rhs and name in ("maxnumf", "minnumf", "maximumf", "minimumf"):
        return [lhs]
    if name == "addf":
        if _is_float(b, -0.0):
            return [lhs]
        if _is_float(a, -0.0):
            return [rhs]
    if name == "subf" and _is_float(b, 0.0):
        return [lhs]
    if name == "mulf":
        if _is_float(b, 1.0):
            return [lhs]
        if _is_float(a, 1.0):
            return [rhs]
    if name == "divf" and _is_float(b, 1.0):
        return [lhs]
    return None


def fold_unary(op: Operation, constants, evaluate) -> list[Attribute | Value] | None:
    value = scalar_value(constants[0])
    if value is not None:
        return [make_constant(evaluate(value), op.results[0].type)]
    return None


_INT_COMPARE = {
    "eq": lambda s, t, u, v: s == t,
    "ne": lambda s, t, u, v: s != t,
    "slt": lambda s, t, u, v: s < t,
    "sle": lambda s, t, u, v: s <= t,
    "sgt": lambda s, t, u, v: s > t,
    "sge": lambda s, t, u, v: s >= t,
    "ult": lambda s, t, u, v: u < v,
    "ule": lambda s, t, u, v: u <= v,
    "ugt": lambda s, t, u, v: u > v,
    "uge": lambda s, t, u, v: u >= v,
}


def _float_compare(predicate: str, x: float, y: float) -> bool:
    if predicate in ("false", "true"):
        return predicate == "true"
    unordered = math.isnan(x) or math.isnan(y)
    if predicate == "ord":
        return not unordered
    if predicate == "uno":
        return unordered
    relation = {
        "eq": x == y,
        "gt": x > y,
        "ge": x >= y,
        "lt": x < y,
        "le": x <= y,
        "ne": x != y,
    }[predicate[1:]]
    return (not unordered and relation) if predicate[0] == "o" else (unordered or relation)


def fold_int_compare(op: Operation, predicate: str, constants) -> list[Attribute | Value] | None:
    a, b = (scalar_value(c) for c in constants)
    result_type = op.results[0].type
    width = element_type(op.operands[0].type).width  # type: ignore[attr-defined]
    if a is not None and b is not None:
        s, t = as_signed(int(a), width), as_signed(int(b), width)
        u, v = as_unsigned(int(a), width), as_unsigned(int(b), width)
        return [make_constant(int(_INT_COMPARE[predicate](s, t, u, v)), result_type)]
    if op.operands[0] is op.operands[1]:
        return [make_constant(int(predicate in ("eq", "sle", "sge", "ule", "uge")), result_type)]
    return None


def fold_float_compare(op: Operation, predicate: str, constants) -> list[Attribute | Value] | None:
    a, b = (scalar_value(c) for c in constants)
    result_type = op.results[0].type
    if a is not None and b is not None:
        return [make_constant(int(_float_compare(predicate, float(a), float(b))), result_type)]
    if any(isinstance(v, float) and math.isnan(v) for v in (a, b)):
        # Against NaN every comparison is unordered, whatever the other operand.
        return [make_constant(int(_float_compare(predicate, math.nan, 0.0)), result_type)]
    if predicate in ("true", "false"):
        return [make_constant(int(predicate == "true"), result_type)]
    return None


def fold_select(op: Operation, constants) -> list[Attribute | Value] | None:
    _, true_value, false_value = op.operands
    if true_value is false_value:
        return [true_value]
    cond = scalar_value(constants[0])
    if cond is not None:
        return [true_value if cond else false_value]
    return None


def fold_cast(op: Operation, constants) -> list[Attribute | Value] | None:
    value = scalar_value(constants[0])
    source_type = element_type(op.operands[0].type)
    result_type = op.results[0].type
    target = element_type(result_type)
    if value is None:
        return None
    kind = op.name.split(".")[1]
    if kind in ("extsi", "trunci"):
        return [make_constant(as_signed(int(value), source_type.width), result_type)]  # type: ignore[attr-defined]
    if kind == "extui":
        return [make_constant(as_unsigned(int(value), source_type.width), result_type)]  # type: ignore[attr-defined]
    if kind in ("extf", "truncf"):
        return [make_constant(float(value), result_type)]
    if kind == "sitofp":
        return [make_constant(float(as_signed(int(value), source_type.width)), result_type)]  # type: ignore[attr-defined]
    if kind == "uitofp":
        return [make_constant(float(as_unsigned(int(value), source_type.width)), result_type)]  # type: ignore[attr-defined]
    if kind in ("fptosi", "fptoui"):
        return _fold_float_to_int(kind, float(value), target, result_type)  # type: ignore[arg-type]
    if kind == "bitcast":
        return [make_constant(_bitcast(value, source_type, target), result_type)]
    return None


def _fold_float_to_int(kind: str, value: float, target: IntegerType, result_type: Type):
    if math.isnan(value) or math.isinf(value):
        return None
    truncated = math.trunc(value)
    if kind == "fptosi":
        low, high = -(1 << (target.width - 1)), (1 << (target.width - 1)) - 1
        if target == i1:
            low, high = -1, 0
    else:
        low, high = 0, (1 << target.width) - 1
    if not low <= truncated <= high:
        return None
    return [make_constant(truncated, result_type)]


_FLOAT_FORMATS = {"f16": "<e", "f32": "<f", "f64": "<d"}
_INT_FORMATS = {8: "<B", 16: "<H", 32: "<I", 64: "<Q"}


def _bitcast(value: int | float, source: Type, target: Type) -> int | float:
    if isinstance(source, FloatType):
        if source.name == "bf16":
            bits = struct.unpack("<I", struct.pack("<f", value))[0] >> 16
        else:
            bits = struct.unpack(
                _INT_FORMATS[source.width], struct.pack(_FLOAT_FORMATS[source.name], value)
            )[0]
    else:
        bits = as_unsigned(int(value), source.width)  # type: ignore[attr-defined]
    if isinstance(target, FloatType):
        if target.name == "bf16":
            return struct.unpack("<f", struct.pack("<I", bits << 16))[0]
        return struct.unpack(
            _FLOAT_FORMATS[target.name], struct.pack(_INT_FORMATS[target.width], bits)
        )[0]
    return bits
