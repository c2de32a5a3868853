"""How tile IR types map to NumPy arrays, and bf16 rounding on arrays.

Values: i1 is `bool`, iN/uN the matching NumPy integers, f16/f32/f64 native, bf16 a float32 array
whose elements are always exactly representable in bf16, the 8-bit floats their uint8 codes
(`tilec_interp.float8`), pointers int64 byte addresses.
Memory (`storage_dtype`) differs only for bf16, stored as its uint16 bit pattern.
"""

from __future__ import annotations

import numpy as np

from tilec.ir.float8 import FORMATS
from tilec.ir.type_names import SCALARS
from tilec.ir.types import Float8Type, FloatType, IntegerType, PointerType, Type, element_type

_INTS = {8: np.int8, 16: np.int16, 32: np.int32, 64: np.int64}
_UINTS = {8: np.uint8, 16: np.uint16, 32: np.uint32, 64: np.uint64}
_VALUES = {
    s.ir_type: np.dtype(s.numpy or (s.storage if isinstance(s.ir_type, Float8Type) else np.float32))
    for s in SCALARS
}
"""IR scalar type -> NumPy dtype of its values (bf16, which NumPy lacks, as float32; the 8-bit
floats as their uint8 codes)."""


def value_dtype(t: Type) -> np.dtype:
    """The NumPy dtype that holds values of `t` (or of `t`'s elements)."""
    t = element_type(t)
    if isinstance(t, PointerType):
        return np.dtype(np.int64)
    dtype = _VALUES.get(t)
    if dtype is None:
        raise TypeError(f"the interpreter has no values of type {t}")
    return dtype


def storage_dtype(t: Type) -> np.dtype:
    """The NumPy dtype of `t` in memory (bf16 as uint16 bits)."""
    t = element_type(t)
    if isinstance(t, FloatType) and t.name == "bf16":
        return np.dtype(np.uint16)
    return value_dtype(t)


def signed_dtype(t: Type) -> np.dtype:
    return np.dtype(_INTS[element_type(t).width])  # type: ignore[attr-defined]


def unsigned_dtype(t: Type) -> np.dtype:
    return np.dtype(_UINTS[element_type(t).width])  # type: ignore[attr-defined]


def is_bf16(t: Type) -> bool:
    t = element_type(t)
    return isinstance(t, FloatType) and t.name == "bf16"


def tf32_truncate(x: np.ndarray) -> np.ndarray:
    """float32 values as NVIDIA's tensor cores read them as tf32 (10 mantissa bits): the 13 low
    mantissa bits cleared, i.e. truncated toward zero (what Triton's `tl.dot` in tf32 computes
    with, on `mma.sync` and `wgmma` alike); returns float32. Infinities stay; NaNs stay NaNs."""
    x = np.asarray(x, np.float32)
    truncated = (x.view(np.uint32) & np.uint32(0xFFFFE000)).view(np.float32)
    return np.where(np.isfinite(x), truncated, x)


def bf16_round(x: np.ndarray) -> np.ndarray:
    """Round float32/float64 values to bf16, nearest even; returns float32.

    float64 input goes through float32 rounded to odd first, so there is one rounding only
    (the vectorized form of `tilec.dialects.arith_folding.bf16_round`).
    """
    x = np.asarray(x)
    with np.errstate(all="ignore"):
        if x.dtype == np.float64:
            single = x.astype(np.float32)
            bits = single.view(np.uint32).copy()
            inexact = single.astype(np.float64) != x
            down = inexact & (np.abs(single.astype(np.float64)) > np.abs(x))
            bits = np.where(down, bits - np.uint32(1), bits)
            bits = np.where(inexact, bits | np.uint32(1), bits)
        else:
            bits = x.astype(np.float32).view(np.uint32)
        rounded = (bits + np.uint32(0x7FFF) + ((bits >> np.uint32(16)) & np.uint32(1))) & np.uint32(
            0xFFFF0000
        )
        out = rounded.astype(np.uint32).view(np.float32)
        return np.where(np.isnan(x), np.float32(np.nan), out).astype(np.float32)


def bf16_to_bits(x: np.ndarray) -> np.ndarray:
    """bf16 values (float32 arrays already rounded) to their uint16 patterns."""
    return (np.asarray(x, np.float32).view(np.uint32) >> np.uint32(16)).astype(np.uint16)


def bits_to_bf16(bits: np.ndarray) -> np.ndarray:
    """uint16 (or int16) patterns to float32 values."""
    return (np.asarray(bits).view(np.uint16).astype(np.uint32) << np.uint32(16)).view(np.float32)


def to_storage(x: np.ndarray, t: Type) -> np.ndarray:
    return bf16_to_bits(x) if is_bf16(t) else x


def from_storage(x: np.ndarray, t: Type) -> np.ndarray:
    return bits_to_bf16(x) if is_bf16(t) else x


def constant(value: int | float, t: Type, shape: tuple[int, ...]) -> np.ndarray:
    """An array of `shape` filled with `value` converted to `t` (integers wrap at the width)."""
    dtype = value_dtype(t)
    scalar_t = element_type(t)
    if isinstance(scalar_t, PointerType):
        return np.full(shape, int(value), np.int64)
    if isinstance(scalar_t, IntegerType):
        if scalar_t.width == 1:
            return np.full(shape, bool(int(value) & 1))
        bits = int(value) & ((1 << scalar_t.width) - 1)
        raw = np.array(bits, dtype=_UINTS[scalar_t.width]).view(dtype)
        return np.full(shape, raw, dtype)
    if is_bf16(scalar_t):
        return np.full(shape, bf16_round(np.array(float(value))), np.float32)
    if isinstance(scalar_t, Float8Type):  # a scalar parameter: its code, as GPUs are passed it
        return np.full(shape, FORMATS[scalar_t].encode(float(value)), np.uint8)
    with np.errstate(all="ignore"):
        return np.full(shape, float(value), dtype)
