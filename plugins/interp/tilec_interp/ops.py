"""Element-wise `arith.*` and `math.*` ops on NumPy arrays (any leading program dimension).

Integers wrap at their width; signedness comes from the op (`divsi` views operands as signed,
`divui` as unsigned). Division or remainder by zero gives 0 (poison in LLVM); `divsi` of the
minimum value by -1 wraps. Shifts by the width or more give 0 (`shli`, `shrui`) or the sign fill
(`shrsi`). f16/f32/f64 arithmetic is NumPy's, correctly rounded for + - * / sqrt; bf16 arithmetic
is done in float64 and rounded once to bf16 (nearest even). `fptosi`/`fptoui` saturate to the
target range and send NaN to 0 (as PTX `cvt.rzi.sat` does; LLVM calls it poison).

`HANDLERS` maps each op class to `handler(op, operand values) -> result value`. Handlers read
operand types as `op.operands[0]`, not through the declared accessors (`op.lhs`, `op.source`):
an accessor computes the operand segments on every call (about 2 us, doubling the cost of a
small `cmpi`), and element-wise handlers run once per step of a sequential scan's combiner.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from tilec.dialects import arith, math
from tilec.dialects.float8 import FpToFpOp
from tilec.ir.core import Operation
from tilec.ir.types import Float8Type, FloatType, IntegerType, element_type, f32
from tilec_interp import float8
from tilec_interp.dtypes import (
    bf16_round,
    bf16_to_bits,
    bits_to_bf16,
    is_bf16,
    signed_dtype,
    unsigned_dtype,
    value_dtype,
)
from tilec_interp.special import erf, fma

Handler = Callable[[Operation, list], np.ndarray]
HANDLERS: dict[type[Operation], Handler] = {}


def _float_result(op: Operation, compute: Callable[..., np.ndarray], args: list) -> np.ndarray:
    t = op.results[0].type
    if is_bf16(t):
        return bf16_round(compute(*[np.asarray(a, np.float64) for a in args]))
    return np.asarray(compute(*args)).astype(value_dtype(t), copy=False)


def _float(op_class: type[Operation], fn: Callable[..., np.ndarray]) -> None:
    HANDLERS[op_class] = lambda op, args: _float_result(op, fn, args)


def _max_zero(a, b, maximum: bool):
    r = np.maximum(a, b) if maximum else np.minimum(a, b)
    zeros = (a == 0) & (b == 0)
    if not bool(np.any(zeros)):
        return r
    pick_b = np.signbit(a) if maximum else ~np.signbit(a)
    return np.where(zeros, np.where(pick_b, b, a), r)


def _rsqrt(x):
    return np.float64(1.0) / np.sqrt(np.asarray(x, np.float64))


# erf: computed in float64 by `tilec_interp.special.erf` (within a few float64 ulps, so f32
# results round correctly in practice). Other transcendentals use NumPy's libm, not the device's
# approximations. fma: computed in float64 with an exact product (`tilec_interp.special.fma`);
# f32, f16 and bf16 products are exact in float64 anyway, so only the final rounding to the
# result type can differ from a fused operation (double rounding, rare).
_FLOAT_FUNCTIONS: dict[type[Operation], Callable[..., np.ndarray]] = {
    arith.AddFOp: np.add,
    arith.SubFOp: np.subtract,
    arith.MulFOp: np.multiply,
    arith.DivFOp: np.divide,
    arith.RemFOp: np.fmod,
    arith.MaxNumFOp: np.fmax,
    arith.MinNumFOp: np.fmin,
    arith.MaximumFOp: lambda a, b: _max_zero(a, b, True),
    arith.MinimumFOp: lambda a, b: _max_zero(a, b, False),
    arith.NegFOp: np.negative,
    math.ExpOp: np.exp,
    math.Exp2Op: np.exp2,
    math.LogOp: np.log,
    math.Log2Op: np.log2,
    math.SqrtOp: np.sqrt,
    math.SinOp: np.sin,
    math.CosOp: np.cos,
    math.TanhOp: np.tanh,
    math.FloorOp: np.floor,
    math.CeilOp: np.ceil,
    math.AbsFOp: np.abs,
    math.RsqrtOp: _rsqrt,
    math.ErfOp: lambda x: erf(np.asarray(x, np.float64)),
    math.FmaOp: fma,
}
for _class, _fn in _FLOAT_FUNCTIONS.items():
    _float(_class, _fn)


def float_function(op_class: type[Operation]) -> Callable[..., np.ndarray]:
    """What a float op computes, without the rounding to its result type (f16/bf16 reductions
    accumulate in float32 with it, `tilec_interp.reductions`)."""
    return _FLOAT_FUNCTIONS[op_class]


def _int_binary(op_class: type[Operation], fn: Callable, view: str) -> None:
    def handler(op: Operation, args: list) -> np.ndarray:
        t = op.results[0].type
        dtype = value_dtype(t)
        if dtype == np.bool_:
            a, b = (np.asarray(x, np.uint8) for x in args)
            width_dtype = np.dtype(np.uint8)
            r = fn(a, b, 1, width_dtype)
            return (np.asarray(r) & 1).astype(np.bool_)
        vd = {"s": signed_dtype(t), "u": unsigned_dtype(t)}.get(view, dtype)
        a, b = (np.asarray(x).view(vd) for x in args)
        return np.asarray(fn(a, b, element_type(t).width, vd)).astype(vd, copy=False).view(dtype)

    HANDLERS[op_class] = handler


def _divrem(a, b, want_rem: bool, signed: bool):
    zero = b == 0
    safe = np.where(zero, np.ones_like(b), b)
    if signed:
        q = np.floor_divide(a, safe)
        r = a - q * safe
        q = q + ((r != 0) & ((a < 0) != (safe < 0))).astype(q.dtype)
        r = a - q * safe
    else:
        q, r = np.floor_divide(a, safe), np.remainder(a, safe)
    out = r if want_rem else q
    return np.where(zero, np.zeros_like(out), out)


def _shift(a, b, width, vd, kind: str):
    amount = b.view(np.dtype(f"u{vd.itemsize}"))
    big = amount >= width
    s = np.where(big, 0, amount).astype(vd)
    if kind == "shl":
        return np.where(big, 0, np.left_shift(a, s))
    if kind == "shru":
        return np.where(big, 0, np.right_shift(a, s))
    return np.where(big, np.where(a < 0, -1, 0).astype(vd), np.right_shift(a, s))


for _class, _fn, _view in [
    (arith.AddIOp, lambda a, b, w, d: a + b, ""),
    (arith.SubIOp, lambda a, b, w, d: a - b, ""),
    (arith.MulIOp, lambda a, b, w, d: a * b, ""),
    (arith.DivSIOp, lambda a, b, w, d: _divrem(a, b, False, True), "s"),
    (arith.RemSIOp, lambda a, b, w, d: _divrem(a, b, True, True), "s"),
    (arith.DivUIOp, lambda a, b, w, d: _divrem(a, b, False, False), "u"),
    (arith.RemUIOp, lambda a, b, w, d: _divrem(a, b, True, False), "u"),
    (arith.AndIOp, lambda a, b, w, d: a & b, ""),
    (arith.OrIOp, lambda a, b, w, d: a | b, ""),
    (arith.XOrIOp, lambda a, b, w, d: a ^ b, ""),
    (arith.ShLIOp, lambda a, b, w, d: _shift(a, b, w, d, "shl"), "u"),
    (arith.ShRUIOp, lambda a, b, w, d: _shift(a, b, w, d, "shru"), "u"),
    (arith.ShRSIOp, lambda a, b, w, d: _shift(a, b, w, d, "shrs"), "s"),
    (arith.MaxSIOp, lambda a, b, w, d: np.maximum(a, b), "s"),
    (arith.MinSIOp, lambda a, b, w, d: np.minimum(a, b), "s"),
    (arith.MaxUIOp, lambda a, b, w, d: np.maximum(a, b), "u"),
    (arith.MinUIOp, lambda a, b, w, d: np.minimum(a, b), "u"),
]:
    _int_binary(_class, _fn, _view)


def _absi(op: Operation, args: list) -> np.ndarray:
    t = op.results[0].type
    return np.abs(np.asarray(args[0]).view(signed_dtype(t))).view(value_dtype(t))


HANDLERS[math.AbsIOp] = _absi

_INT_PREDICATES = {
    "eq": ("", np.equal),
    "ne": ("", np.not_equal),
    "slt": ("s", np.less),
    "sle": ("s", np.less_equal),
    "sgt": ("s", np.greater),
    "sge": ("s", np.greater_equal),
    "ult": ("u", np.less),
    "ule": ("u", np.less_equal),
    "ugt": ("u", np.greater),
    "uge": ("u", np.greater_equal),
}


def _cmpi(op: Operation, args: list) -> np.ndarray:
    view, fn = _INT_PREDICATES[op.predicate.value]
    t = op.operands[0].type
    a, b = args
    if value_dtype(t) != np.bool_ and view:
        vd = signed_dtype(t) if view == "s" else unsigned_dtype(t)
        a, b = np.asarray(a).view(vd), np.asarray(b).view(vd)
    elif value_dtype(t) == np.bool_ and view == "s":
        a, b = -np.asarray(a, np.int8), -np.asarray(b, np.int8)  # i1 true is -1 when signed
    return fn(a, b)


def _cmpf(op: Operation, args: list) -> np.ndarray:
    predicate = op.predicate.value
    a, b = args
    if predicate in ("false", "true"):
        return np.full(np.broadcast(a, b).shape, predicate == "true")
    unordered = np.isnan(a) | np.isnan(b)
    if predicate == "ord":
        return ~unordered
    if predicate == "uno":
        return unordered
    base = {"eq": np.equal, "gt": np.greater, "ge": np.greater_equal, "lt": np.less,
            "le": np.less_equal, "ne": np.not_equal}[predicate[1:]]  # fmt: skip
    result = base(a, b)
    if predicate[0] == "o":
        return result & ~unordered
    return result | unordered


def _select(op: Operation, args: list) -> np.ndarray:
    c, a, b = args
    c = np.asarray(c)
    if c.ndim < np.ndim(a):
        c = c.reshape(c.shape + (1,) * (np.ndim(a) - c.ndim))
    return np.where(c, a, b)


HANDLERS[arith.CmpIOp] = _cmpi
HANDLERS[arith.CmpFOp] = _cmpf
HANDLERS[arith.SelectOp] = _select


def _to_float(x: np.ndarray, dst) -> np.ndarray:
    if is_bf16(dst):
        return bf16_round(np.asarray(x, np.float64))
    return np.asarray(x).astype(value_dtype(dst))


def _float_to_int(x: np.ndarray, dst, signed: bool) -> np.ndarray:
    dtype = value_dtype(dst)
    width = element_type(dst).width
    if dtype == np.bool_:
        lo, hi = (-1, 0) if signed else (0, 1)
    elif signed:
        lo, hi = -(1 << (width - 1)), (1 << (width - 1)) - 1
    else:
        lo, hi = 0, (1 << width) - 1
    x = np.trunc(np.asarray(x, np.float64))
    with np.errstate(invalid="ignore"):
        x = np.where(np.isnan(x), 0.0, x)
        big = x >= float(hi)
        small = x <= float(lo)
        mid = np.where(big | small, 0.0, x)
    int_dtype = np.int64 if signed or width < 64 else np.uint64
    out = mid.astype(int_dtype)
    out = np.where(big, np.array(hi).astype(int_dtype), out)
    out = np.where(small, np.array(lo).astype(int_dtype), out)
    if dtype == np.bool_:
        return out != 0
    return out.astype(dtype)


def _int_source(x: np.ndarray, src, signed: bool) -> np.ndarray:
    """An integer cast's operand viewed as signed or unsigned (i1 true is -1 when signed)."""
    if x.dtype != np.bool_:
        return x.view(signed_dtype(src) if signed else unsigned_dtype(src))
    x = x.astype(np.int8)
    return -x if signed else x.view(np.uint8)


def _int_cast(signed: bool, to_float: bool) -> Handler:
    """`extsi`, `extui` (to an integer) and `sitofp`, `uitofp` (to a float)."""

    def handler(op: Operation, args: list) -> np.ndarray:
        x = _int_source(np.asarray(args[0]), op.operands[0].type, signed)
        dst = op.results[0].type
        return _to_float(x, dst) if to_float else x.astype(value_dtype(dst))

    return handler


def _trunci(op: Operation, args: list) -> np.ndarray:
    x = np.asarray(args[0])
    dst_dtype = value_dtype(op.results[0].type)
    if dst_dtype == np.bool_:
        return (x & 1).astype(np.bool_)
    return x.astype(dst_dtype)


def _float_cast(op: Operation, args: list) -> np.ndarray:
    return _to_float(np.asarray(args[0]), op.results[0].type)


def _fp_to_int(signed: bool) -> Handler:
    return lambda op, args: _float_to_int(np.asarray(args[0]), op.results[0].type, signed)


def _fp_to_fp(op: Operation, args: list) -> np.ndarray:
    """`tile.fp_to_fp`: 8-bit floats are uint8 codes; decoding is exact, encoding rounds once."""
    x = np.asarray(args[0])
    src, dst = element_type(op.operands[0].type), element_type(op.results[0].type)
    if isinstance(src, Float8Type):
        x = float8.decode(x, src)
        src = f32
    if isinstance(dst, Float8Type):
        return float8.encode(x, src, dst)
    return _to_float(x, dst)


def _bitcast(op: Operation, args: list) -> np.ndarray:
    x = np.asarray(args[0])
    dst = op.results[0].type
    dst_dtype = value_dtype(dst)
    if is_bf16(op.operands[0].type):
        x = bf16_to_bits(x)
    if is_bf16(dst):
        return bits_to_bf16(x)
    if x.dtype == np.bool_ or dst_dtype == np.bool_:
        return x.astype(dst_dtype)
    return x.view(dst_dtype)


HANDLERS.update(
    {
        arith.ExtSIOp: _int_cast(signed=True, to_float=False),
        arith.ExtUIOp: _int_cast(signed=False, to_float=False),
        arith.SIToFPOp: _int_cast(signed=True, to_float=True),
        arith.UIToFPOp: _int_cast(signed=False, to_float=True),
        arith.TruncIOp: _trunci,
        arith.ExtFOp: _float_cast,
        arith.TruncFOp: _float_cast,
        arith.FPToSIOp: _fp_to_int(signed=True),
        arith.FPToUIOp: _fp_to_int(signed=False),
        arith.BitcastOp: _bitcast,
        FpToFpOp: _fp_to_fp,
    }
)


def is_float_type(t) -> bool:
    return isinstance(element_type(t), FloatType)


def is_int_type(t) -> bool:
    return isinstance(element_type(t), IntegerType)
