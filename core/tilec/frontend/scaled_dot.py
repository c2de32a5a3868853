"""`tl.dot_scaled`: Triton 3.6's microscaled dot, computed as Triton computes it where the target
has no scaled MMA (its `DecomposeScaledBlocked` pattern; Hopper, Ampere, CDNA3 and the
interpreter here): each operand is decoded to the compute type (f16 if either format is "fp16",
else bf16), multiplied by its scale in that type, and the two go to a plain `tl.dot` with an f32
accumulator. Only existing ops are emitted, so every backend runs it (tensor cores included).

- "e2m1" (fp4) operands are uint8 bytes of two values each, the first in the low nibble, packed
  along K (`k_pack=True`) or along M (lhs) / N (rhs); "e4m3" and "e5m2" are float8e4nv /
  float8e5 or their uint8 bits; "bf16" and "fp16" are those or their uint16 bits. Decoding is
  exact except bf16 values in an f16 computation (rounded to nearest even, as Triton's
  `fp_to_fp`).
- A scale is e8m0 (uint8: 2**(s - 127), one per 32 elements along K) or float8e4nv (one per 16),
  shaped [M, K // group] for lhs and [N, K // group] for rhs (not transposed). An e8m0 scale
  becomes the compute type as Triton makes it: bf16 bits `s << 7` (so s = 0 gives 0.0), or for
  f16 the f32 bits `s << 23` rounded to f16. Unless `fast_math`, a scale of 0xFF (a NaN float8
  scale) makes its 32 (16) values NaN.
"""

from __future__ import annotations

from typing import Any

from tilec.dialects import arith
from tilec.frontend.compat_builtins import constant_arg, dtype_arg
from tilec.frontend.context import TensorValue
from tilec.frontend.errors import UserError
from tilec.ir.attributes import StringAttr
from tilec.ir.types import (
    bf16,
    f8e4m3fn,
    f8e5m2,
    f16,
    f32,
    i1,
    i8,
    like,
    u8,
    u16,
    u32,
)

FORMATS = {"e4m3": f8e4m3fn, "e5m2": f8e5m2, "bf16": bf16, "fp16": f16, "e2m1": None}
"""The formats Triton 3.6's `dot_scaled` takes, with their element types (e2m1: uint8 pairs)."""
KNOWN_FORMATS = (*FORMATS, "e2m3", "e3m2")
"""Triton's `ScaleDotElemType` names: e2m3 and e3m2 exist but `dot_scaled` refuses them (NYI)."""
BITS = {"e4m3": u8, "e5m2": u8, "bf16": u16, "fp16": u16}


def dot_scaled(builtins: Any, lhs: Any, lhs_scale: Any, lhs_format: Any, rhs: Any,
               rhs_scale: Any, rhs_format: Any, acc: Any, fast_math: Any, lhs_k_pack: Any,
               rhs_k_pack: Any, out_dtype: Any) -> TensorValue:  # fmt: skip
    """`tl.dot_scaled(...)` (Triton's arguments, checked as Triton checks them)."""
    if dtype_arg(out_dtype, "tl.dot_scaled's out_dtype") != f32:
        raise UserError(
            "tl.dot_scaled: only float32 is supported for out_dtype at the moment",
            "leave out_dtype out (tl.float32)",
        )
    a, b = builtins.value(lhs), builtins.value(rhs)
    if not (a.is_tensor and b.is_tensor and len(a.shape) == len(b.shape) in (2, 3)):
        raise UserError(
            f"tl.dot_scaled: both inputs must be either 2D or 3D; (lhs: {list(a.shape)} vs rhs: "
            f"{list(b.shape)})"
        )
    formats = [_format(lhs_format, "lhs_format"), _format(rhs_format, "rhs_format")]
    packs = [_flag(lhs_k_pack, "lhs_k_pack"), _flag(rhs_k_pack, "rhs_k_pack")]
    fast = _flag(fast_math, "fast_math")
    a, b = _typed(builtins, a, formats[0]), _typed(builtins, b, formats[1])
    for fmt, pack in zip(formats, packs, strict=True):
        if not pack and fmt != "e2m1":
            raise UserError(
                "tl.dot_scaled: only mxfp4 inputs can be packed along a dimension different than K",
                "leave lhs_k_pack/rhs_k_pack True for formats other than e2m1",
            )
    (m, k_lhs), (k_rhs, n) = a.shape[-2:], b.shape[-2:]
    k_a = k_lhs * (2 if formats[0] == "e2m1" and packs[0] else 1)
    k_b = k_rhs * (2 if formats[1] == "e2m1" and packs[1] else 1)
    if k_a != k_b:
        raise UserError(
            "tl.dot_scaled: reduction dimension should pack the same number of elements; "
            f"(lhs: {list(a.shape)} vs rhs: {list(b.shape)})"
        )
    m *= 2 if formats[0] == "e2m1" and not packs[0] else 1
    n *= 2 if formats[1] == "e2m1" and not packs[1] else 1
    scales = [_scale(builtins, lhs_scale), _scale(builtins, rhs_scale)]
    for name, scale, rows in (("lhs_scale", scales[0], m), ("rhs_scale", scales[1], n)):
        if scale is not None:
            group = 16 if scale.dtype == f8e4m3fn else 32
            expected = [*a.shape[:-2], rows, k_a // group]
            if list(scale.shape) != expected:
                raise UserError(
                    f"tl.dot_scaled: {name} must be a tensor of shape {expected}. Got "
                    f"{list(scale.shape)}",
                    f"give one scale per {group} elements along K",
                )
    compute = f16 if "fp16" in formats else bf16
    operands = [
        _scaled(builtins, v, scale, fmt, pack, compute, index, fast)
        for index, (v, scale, fmt, pack) in enumerate(
            zip((a, b), scales, formats, packs, strict=True)
        )
    ]
    shape = (*a.shape[:-2], m, n)
    if not isinstance(acc, TensorValue):
        acc = constant_arg(acc, "tl.dot_scaled's acc")
    if acc is not None:
        acc_value = builtins.value(acc)
        if tuple(acc_value.shape) != shape or acc_value.dtype != f32:
            raise UserError(
                f"tl.dot_scaled's accumulator must be float32 of shape {list(shape)}, got "
                f"{acc_value.dtype} of shape {list(acc_value.shape)}"
            )
    return builtins.tl_dot(operands[0], operands[1], acc)


def _format(value: Any, what: str) -> str:
    fmt = constant_arg(value, f"tl.dot_scaled's {what}")
    if not isinstance(fmt, str) or fmt not in KNOWN_FORMATS:
        raise UserError(
            f"tl.dot_scaled: invalid float format: {fmt!r}",
            f"give {what} as one of {', '.join(map(repr, FORMATS))}",
        )
    if fmt not in FORMATS:
        raise UserError(
            f"tl.dot_scaled: NYI: {what} {fmt}", f"use one of {', '.join(map(repr, FORMATS))}"
        )
    return fmt


def _flag(value: Any, what: str) -> bool:
    flag = constant_arg(value, f"tl.dot_scaled's {what}")
    if not isinstance(flag, bool):
        raise UserError(f"tl.dot_scaled's {what} must be True or False, got {flag!r}")
    return flag


def _typed(builtins: Any, x: TensorValue, fmt: str) -> TensorValue:
    """`x` as its format's element type (bitcast from the unsigned bits), e2m1 as uint8."""
    target = FORMATS[fmt]
    if target is None:
        if x.dtype != u8:
            raise UserError(
                f"tl.dot_scaled: e2m1 format must be packed as uint8. Got {x.dtype}",
                "load the packed bytes as tl.uint8",
            )
        return x
    if x.dtype == target:
        return x
    if x.dtype != BITS[fmt]:
        raise UserError(
            f"tl.dot_scaled: unexpected dtype for {fmt}. Got {x.dtype}",
            f"give {target} values or their {BITS[fmt]} bits",
        )
    return builtins.sem.bitcast(x, target)


def _scale(builtins: Any, scale: Any) -> TensorValue | None:
    if not isinstance(scale, TensorValue):
        scale = constant_arg(scale, "tl.dot_scaled's scale")
    if scale is None:
        return None
    value = builtins.value(scale)
    if value.is_tensor and value.dtype == i8:  # e8m0 bits in int8: Triton zero-extends them
        value = builtins.sem.bitcast(value, u8)
    if not value.is_tensor or value.dtype not in (u8, f8e4m3fn):
        raise UserError(
            f"tl.dot_scaled's scales are uint8 (e8m0) or float8e4nv tensors, got {value.type}",
            "load the scales as tl.uint8",
        )
    return value


def _scaled(builtins: Any, v: TensorValue, scale: TensorValue | None, fmt: str, k_pack: bool,
            compute: Any, index: int, fast: bool) -> TensorValue:  # fmt: skip
    """Operand `index` (0: lhs [.., M, K], 1: rhs [.., K, N]) decoded to `compute` and scaled."""
    sem = builtins.sem
    rank = len(v.shape)
    k_axis = rank - 1 if index == 0 else rank - 2
    if fmt == "e2m1":
        other = rank - 2 if index == 0 else rank - 1
        v = _fp4(builtins, v, compute, k_axis if k_pack else other)
    else:
        v = sem.cast(v, compute)
    if scale is None:
        return v
    if index == 1:  # [.., N, K // group] -> [.., K // group, N]
        scale = sem.trans(scale, (*range(rank - 2), rank - 1, rank - 2))
    factor = _spread(sem, _scale_value(sem, scale, compute), k_axis, v.shape)
    result = sem.create(arith.MulFOp, [v, factor], v.type)
    if fast:
        return result
    if scale.dtype == u8:
        nan = _compare_int(sem, "eq", scale, 0xFF)
    else:
        wide = sem.cast(scale, compute)
        nan = sem.create(
            arith.CmpFOp, [wide, wide], like(wide.type, i1), predicate=StringAttr("uno")
        )
    nan = _spread(sem, nan, k_axis, v.shape)
    nans = sem.broadcast_to(sem.constant(float("nan"), compute), v.shape)
    return sem.create(arith.SelectOp, [nan, nans, result], v.type)


def _scale_value(sem: Any, scale: TensorValue, compute: Any) -> TensorValue:
    """The scale in the compute type, as Triton's `scaleTo16` makes it."""
    if scale.dtype != u8:
        return sem.cast(scale, compute)
    if compute == bf16:
        bits = _int_op(sem, arith.ShLIOp, sem.cast(scale, u16), 7)
        return sem.bitcast(bits, bf16)
    bits = _int_op(sem, arith.ShLIOp, sem.cast(scale, u32), 23)
    return sem.cast(sem.bitcast(bits, f32), f16)


def _spread(sem: Any, x: TensorValue, axis: int, shape: tuple[int, ...]) -> TensorValue:
    """Each element of `x` repeated along `axis` to reach `shape` (one per group)."""
    group = shape[axis] // x.shape[axis]
    expanded = sem.expand_dims(x, axis + 1)
    wide = (*x.shape[: axis + 1], group, *x.shape[axis + 1 :])
    return sem.reshape(sem.broadcast_to(expanded, wide), shape)


def _fp4(builtins: Any, x: TensorValue, compute: Any, axis: int) -> TensorValue:
    """uint8 pairs of e2m1 values (the first in the low nibble) along `axis`, decoded exactly to
    `compute` and laid out along `axis` (twice as long)."""
    sem = builtins.sem
    low = _nibble(sem, _int_op(sem, arith.AndIOp, x, 0xF), compute)
    high = _nibble(sem, _int_op(sem, arith.ShRUIOp, x, 4), compute)
    shape = (*x.shape[: axis + 1], 2, *x.shape[axis + 1 :])
    low = sem.broadcast_to(sem.expand_dims(low, axis + 1), shape)
    high = sem.broadcast_to(sem.expand_dims(high, axis + 1), shape)
    first = sem.binary("==", builtins.iota(2, axis + 1, shape), 0)
    pairs = sem.create(arith.SelectOp, [first, low, high], low.type)
    out = list(x.shape)
    out[axis] *= 2
    return sem.reshape(pairs, tuple(out))


def _nibble(sem: Any, n: TensorValue, compute: Any) -> TensorValue:
    """An e2m1 nibble (sign, 2 exponent bits with bias 1, 1 mantissa bit) as `compute` bits: the
    exponent and mantissa shifted into place, rebiased where normal; the subnormal 0.5 written
    out; zero left as it is."""
    mantissa_bits, bias = (7, 127) if compute == bf16 else (10, 15)
    n = sem.cast(n, u16)
    em = _int_op(sem, arith.AndIOp, n, 0x7)
    sign = _int_op(sem, arith.ShLIOp, _int_op(sem, arith.AndIOp, n, 0x8), 12)
    bits = _int_op(sem, arith.ShLIOp, em, mantissa_bits - 1)
    normal = _compare_int(sem, "ne", _int_op(sem, arith.AndIOp, em, 0x6), 0)
    rebiased = _int_op(sem, arith.AddIOp, bits, (bias - 1) << mantissa_bits)
    bits = sem.create(arith.SelectOp, [normal, rebiased, bits], bits.type)
    half = sem.broadcast_to(sem.constant((bias - 1) << mantissa_bits, u16), bits.shape)
    bits = sem.create(arith.SelectOp, [_compare_int(sem, "eq", em, 1), half, bits], bits.type)
    return sem.bitcast(sem.create(arith.OrIOp, [bits, sign], bits.type), compute)


def _int_op(sem: Any, cls: type, x: TensorValue, constant: int) -> TensorValue:
    c = sem.broadcast_to(sem.constant(constant, x.dtype), x.shape)
    return sem.create(cls, [x, c], x.type)


def _compare_int(sem: Any, predicate: str, x: TensorValue, constant: int) -> TensorValue:
    c = sem.broadcast_to(sem.constant(constant, x.dtype), x.shape)
    return sem.create(arith.CmpIOp, [x, c], like(x.type, i1), predicate=StringAttr(predicate))


__all__ = ["FORMATS", "dot_scaled"]
