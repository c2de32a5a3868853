"""Element-wise `arith.*` and `math.*` ops on NumPy arrays (any leading program dimension).

Integers wrap at their width; signedness comes from the op (`divsi` views operands as signed,
`divui` as unsigned). Division or remainder by zero gives 0 (poison in LLVM); `divsi` of the
minimum value by -1 wraps. Shifts by the width or more give 0 (`shli`, `shrui`) or the sign fill
(`shrsi`). f16/f32/f64 arithmetic is NumPy's, correctly rounded for + - * / sqrt; bf16 arithmetic
is done in float64 and rounded once to bf16 (nearest even). `fptosi`/`fptoui` saturate to the
target range and send NaN to 0 (as PTX `cvt.rzi.sat` does; LLVM calls it poison).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from tilec.ir.core import Operation
from tilec.ir.types import FloatType, IntegerType, element_type
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
HANDLERS: dict[str, Handler] = {}


def _float_result(op: Operation, compute: Callable[..., np.ndarray], args: list) -> np.ndarray:
    t = op.results[0].type
    if is_bf16(t):
        return bf16_round(compute(*[np.asarray(a, np.float64) for a in args]))
    return np.asarray(compute(*args)).astype(value_dtype(t), copy=False)


def _float(name: str, fn: Callable[..., np.ndarray]) -> None:
    HANDLERS[name] = lambda op, args: _float_result(op, fn, args)


def _max_zero(a, b, maximum: bool):
    r = np.maximum(a, b) if maximum else np.minimum(a, b)
    zeros = (a == 0) & (b == 0)
    if not bool(np.any(zeros)):
        return r
    pick_b = np.signbit(a) if maximum else ~np.signbit(a)
    return np.where(zeros, np.where(pick_b, b, a), r)


for _name, _fn in {
    "addf": np.add,
    "subf": np.subtract,
    "mulf": np.multiply,
    "divf": np.divide,
    "remf": np.fmod,
    "maxnumf": np.fmax,
    "minnumf": np.fmin,
    "maximumf": lambda a, b: _max_zero(a, b, True),
    "minimumf": lambda a, b: _max_zero(a, b, False),
}.items():
    _float("arith." + _name, _fn)
_float("arith.negf", np.negative)

for _name, _fn in {
    "exp": np.exp,
    "exp2": np.exp2,
    "log": np.log,
    "log2": np.log2,
    "sqrt": np.sqrt,
    "sin": np.sin,
    "cos": np.cos,
    "tanh": np.tanh,
    "floor": np.floor,
    "ceil": np.ceil,
    "absf": np.abs,
}.items():
    _float("math." + _name, _fn)

# erf: computed in float64 by `tilec_interp.special.erf` (within a few float64 ulps, so f32
# results round correctly in practice). Other transcendentals use NumPy's libm, not the device's
# approximations.


def _rsqrt(x):
    return np.float64(1.0) / np.sqrt(np.asarray(x, np.float64))


_float("math.rsqrt", _rsqrt)
_float("math.erf", lambda x: erf(np.asarray(x, np.float64)))
# fma: computed in float64 with an exact product (`tilec_interp.special.fma`); f32, f16 and bf16
# products are exact in float64 anyway, so only the final rounding to the result type can differ
# from a fused operation (double rounding, rare).
_float("math.fma", fma)


def _int_binary(name: str, fn: Callable, view: str) -> None:
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

    HANDLERS["arith." + name] = handler


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


for _name, _fn, _view in [
    ("addi", lambda a, b, w, d: a + b, ""),
    ("subi", lambda a, b, w, d: a - b, ""),
    ("muli", lambda a, b, w, d: a * b, ""),
    ("divsi", lambda a, b, w, d: _divrem(a, b, False, True), "s"),
    ("remsi", lambda a, b, w, d: _divrem(a, b, True, True), "s"),
    ("divui", lambda a, b, w, d: _divrem(a, b, False, False), "u"),
    ("remui", lambda a, b, w, d: _divrem(a, b, True, False), "u"),
    ("andi", lambda a, b, w, d: a & b, ""),
    ("ori", lambda a, b, w, d: a | b, ""),
    ("xori", lambda a, b, w, d: a ^ b, ""),
    ("shli", lambda a, b, w, d: _shift(a, b, w, d, "shl"), "u"),
    ("shrui", lambda a, b, w, d: _shift(a, b, w, d, "shru"), "u"),
    ("shrsi", lambda a, b, w, d: _shift(a, b, w, d, "shrs"), "s"),
    ("maxsi", lambda a, b, w, d: np.maximum(a, b), "s"),
    ("minsi", lambda a, b, w, d: np.minimum(a, b), "s"),
    ("maxui", lambda a, b, w, d: np.maximum(a, b), "u"),
    ("minui", lambda a, b, w, d: np.minimum(a, b), "u"),
]:
    _int_binary(_name, _fn, _view)


def _absi(op: Operation, args: list) -> np.ndarray:
    t = op.results[0].type
    return np.abs(np.asarray(args[0]).view(signed_dtype(t))).view(value_dtype(t))


HANDLERS["math.absi"] = _absi

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
    view, fn = _INT_PREDICATES[op.attributes["predicate"].value]  # type: ignore[attr-defined]
    t = op.operands[0].type
    a, b = args
    if value_dtype(t) != np.bool_ and view:
        vd = signed_dtype(t) if view == "s" else unsigned_dtype(t)
        a, b = np.asarray(a).view(vd), np.asarray(b).view(vd)
    elif value_dtype(t) == np.bool_ and view == "s":
        a, b = -np.asarray(a, np.int8), -np.asarray(b, np.int8)  # i1 true is -1 when signed
    return fn(a, b)


def _cmpf(op: Operation, args: list) -> np.ndarray:
    predicate = op.attributes["predicate"].value  # type: ignore[attr-defined]
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


HANDLERS["arith.cmpi"] = _cmpi
HANDLERS["arith.cmpf"] = _cmpf
HANDLERS["arith.select"] = _select


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


def _cast(op: Operation, args: list) -> np.ndarray:
    x = np.asarray(args[0])
    src, dst = op.operands[0].type, op.results[0].type
    kind = op.name.split(".")[1]
    dst_dtype = value_dtype(dst)
    if kind in ("extsi", "sitofp", "extui", "uitofp"):
        if x.dtype == np.bool_:
            x = x.astype(np.int8)
            if kind in ("extsi", "sitofp"):
                x = -x
            else:
                x = x.view(np.uint8)
        else:
            x = x.view(signed_dtype(src) if kind in ("extsi", "sitofp") else unsigned_dtype(src))
        if kind.endswith("fp"):
            return _to_float(x, dst)
        return x.astype(dst_dtype)
    if kind == "trunci":
        if dst_dtype == np.bool_:
            return (x & 1).astype(np.bool_)
        return x.astype(dst_dtype)
    if kind in ("extf", "truncf"):
        return _to_float(x, dst)
    if kind in ("fptosi", "fptoui"):
        return _float_to_int(x, dst, kind == "fptosi")
    if kind == "bitcast":
        if is_bf16(src):
            x = bf16_to_bits(x)
        if is_bf16(dst):
            return bits_to_bf16(x)
        if x.dtype == np.bool_ or dst_dtype == np.bool_:
            return x.astype(dst_dtype)
        return x.view(dst_dtype)
    raise NotImplementedError(op.name)


for _name in ("extsi", "extui", "trunci", "extf", "truncf", "sitofp", "uitofp", "fptosi",
              "fptoui", "bitcast"):  # fmt: skip
    HANDLERS["arith." + _name] = _cast


def is_float_type(t) -> bool:
    return isinstance(element_type(t), FloatType)


def is_int_type(t) -> bool:
    return isinstance(element_type(t), IntegerType)
