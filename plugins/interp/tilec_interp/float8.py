"""8-bit floats on NumPy arrays: values are their uint8 codes (in memory as well).

`decode` looks the codes up in a table of the exact float32 values (`tilec.ir.float8` builds it);
`encode` applies `tilec.ir.float8.encode_bits` to whole arrays with integer operations, from the
source's own bits, so an f64 is rounded once, as an f32 or f16 is.
"""

from __future__ import annotations

import numpy as np

from tilec.ir.float8 import FORMATS, SOURCES, Float8Format
from tilec.ir.types import Float8Type, FloatType
from tilec_interp.dtypes import bf16_to_bits, is_bf16

NAN_BITS = np.uint32(0x7FC00000)
"""The float32 a NaN code decodes to (one quiet NaN for every format)."""

_TABLES: dict[Float8Type, np.ndarray] = {}
_BITS = {16: np.uint16, 32: np.uint32, 64: np.uint64}


def decode_table(t: Float8Type) -> np.ndarray:
    """The float32 value of each of the 256 codes of `t` (NaN codes as `NAN_BITS`)."""
    table = _TABLES.get(t)
    if table is None:
        fmt = FORMATS[t]
        values = np.array([fmt.decode(code) for code in range(256)], np.float32)
        bits = values.view(np.uint32)
        bits[np.isnan(values)] = NAN_BITS
        table = _TABLES[t] = bits.view(np.float32)
    return table


def decode(codes: np.ndarray, t: Float8Type) -> np.ndarray:
    """uint8 codes of `t` -> float32 values (exact)."""
    return decode_table(t)[np.asarray(codes).astype(np.uint8)]


def _source_bits(x: np.ndarray, t: FloatType) -> tuple[np.ndarray, str]:
    """The bits of float values `x` of type `t` (bf16 values are float32 arrays) and the name
    of their format."""
    if is_bf16(t):
        return bf16_to_bits(x).astype(np.uint64), "bf16"
    dtype = {"f16": np.float16, "f32": np.float32, "f64": np.float64}[t.name]
    x = np.asarray(x).astype(dtype)
    return x.view(_BITS[x.itemsize * 8]).astype(np.uint64), t.name


def _round_shift(significand, shift, ties_away: bool) -> np.ndarray:
    """`significand >> shift` rounded to nearest (ties to even, or away); `shift` >= 1."""
    one = np.uint64(1)
    quotient = significand >> shift
    remainder = significand & ((one << shift) - one)
    half = one << (shift - one)
    if ties_away:
        up = remainder >= half
    else:
        up = (remainder > half) | ((remainder == half) & ((quotient & one) == one))
    return quotient + up.astype(np.uint64)


def encode_array(bits: np.ndarray, source_name: str, fmt: Float8Format) -> np.ndarray:
    """`encode_bits` of `fmt` on an array of `source_name` float bits (as uint64)."""
    source = SOURCES[source_name]
    u = np.uint64
    sign = (bits >> u(source.width - 1)) & u(1)
    magnitude = bits & u((1 << (source.width - 1)) - 1)
    exponent = (magnitude >> u(source.mantissa_bits)).astype(np.int64)
    mantissa = magnitude & u((1 << source.mantissa_bits) - 1)
    significand = mantissa | (exponent > 0).astype(np.uint64) << u(source.mantissa_bits)
    # as `tilec.ir.float8.encode_bits`: binades above the smallest normal one, then the step
    unbiased = np.maximum(exponent, 1) - source.bias
    normal = exponent > 0
    below = np.where(
        normal, np.maximum(fmt.min_exponent - unbiased, 0), fmt.min_exponent - unbiased
    )
    shift = np.minimum(
        source.mantissa_bits - fmt.mantissa_bits + below, source.mantissa_bits + 2
    ).astype(np.uint64)
    rounded = _round_shift(significand, shift, fmt.ties_away).astype(np.int64)
    above = np.where(normal, np.maximum(unbiased - fmt.min_exponent, 0), 0)
    code = np.minimum((above << fmt.mantissa_bits) + rounded, fmt.saturation_code)
    code = np.where(magnitude == u(source.inf_bits), fmt.saturation_code, code).astype(np.uint8)
    signed = (sign.astype(np.uint8) << np.uint8(7)) | code
    if fmt.fnuz:
        signed = np.where(code == 0, np.uint8(0), signed)
    nan = magnitude > u(source.inf_bits)
    if fmt.nan_code is None:
        nan_codes = (sign.astype(np.uint8) << np.uint8(7)) | np.uint8(fmt.saturation_code)
    else:
        nan_codes = np.uint8(fmt.nan_code)
    return np.where(nan, nan_codes, signed).astype(np.uint8)


def encode(x: np.ndarray, source: FloatType, t: Float8Type) -> np.ndarray:
    """Float values `x` of type `source` -> uint8 codes of `t`."""
    bits, name = _source_bits(x, source)
    return encode_array(bits, name, FORMATS[t]).reshape(np.shape(x))
