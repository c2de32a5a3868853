"""The five 8-bit float formats of Triton's `tl`, and the one definition of their conversions.

| `tl` dtype    | IR type      | exp, mantissa, bias | specials                       | largest finite |
|---------------|--------------|---------------------|--------------------------------|----------------|
| `float8e4nv`  | `f8E4M3FN`   | 4, 3, 7             | NaN 0x7F/0xFF, no inf          | 448 (0x7E)     |
| `float8e5`    | `f8E5M2`     | 5, 2, 15            | inf 0x7C/0xFC, NaN 0x7D..0x7F  | 57344 (0x7B)   |
| `float8e4b8`  | `f8E4M3FNUZ` | 4, 3, 8             | NaN 0x80 only, no -0, no inf   | 240 (0x7F)     |
| `float8e5b16` | `f8E5M2FNUZ` | 5, 2, 16            | NaN 0x80 only, no -0, no inf   | 57344 (0x7F)   |
| `float8e4b15` | `f8E4M3B15`  | 4, 3, 15            | none: every code is a number   | 1.875 (0x7F)   |

Decoding is exact (every code is a float16, bfloat16 and float32 value). Encoding follows what
Triton's GPU conversions compute, from the exact value of the source (f16, bf16, f32, f64):

- `float8e4nv`, `float8e5` and the fnuz formats: round to nearest even, saturating (`satfinite`, as
  Hopper's `cvt.rn.satfinite.{e4m3,e5m2}x2.f32` that Triton emits): a finite value beyond the
  largest finite and +-inf give the largest finite of that sign; NaN gives the format's NaN (0x7F
  for e4m3/e5m2, 0x80 for fnuz). fnuz has no negative zero: what rounds to zero is 0x00.
- `float8e4b15` (Triton's `convert_float16_to_fp8e4b15`: f32 is truncated to f16, clamped to 1.75
  and rounded half up): round half away from zero, saturating at +-1.75 (0x7E; 0x7F = 1.875 is
  only ever decoded); NaN and +-inf give +-1.75.

`encode_bits` is the integer algorithm that the interpreter (NumPy) and the LLVM lowering
(`tilec.lowering.float8`) apply too, so the three agree bit for bit; this module is pure Python
(constant folding, scalar parameters and the reference of the tests).
"""

from __future__ import annotations

import math
import struct

import attrs

from tilec.ir.types import (
    Float8Type,
    FloatType,
    f8e4m3b15,
    f8e4m3fn,
    f8e4m3fnuz,
    f8e5m2,
    f8e5m2fnuz,
)


@attrs.frozen
class SourceFormat:
    """A wide float format by its bit fields: f16, bf16, f32, f64."""

    width: int
    mantissa_bits: int
    bias: int

    @property
    def exponent_bits(self) -> int:
        return self.width - 1 - self.mantissa_bits

    @property
    def inf_bits(self) -> int:
        """The bits of +inf: every exponent bit set."""
        return ((1 << self.exponent_bits) - 1) << self.mantissa_bits


SOURCES: dict[str, SourceFormat] = {
    "f16": SourceFormat(16, 10, 15),
    "bf16": SourceFormat(16, 7, 127),
    "f32": SourceFormat(32, 23, 127),
    "f64": SourceFormat(64, 52, 1023),
}


@attrs.frozen
class Float8Format:
    """One 8-bit float format (see the module doc for the table)."""

    ir_type: Float8Type
    exponent_bits: int
    mantissa_bits: int
    bias: int
    saturation_code: int
    """The magnitude code that an overflow (and +-inf) encodes to."""
    nan_code: int | None
    """The code that encoding a NaN gives (None: `float8e4b15` encodes NaN as +-1.75)."""
    inf_code: int | None = None
    """The magnitude code of +inf (e5m2 only)."""
    fnuz: bool = False
    """0x80 is the only NaN and there is no negative zero."""
    ties_away: bool = False
    """Round half away from zero (e4b15) instead of to nearest even."""

    @property
    def min_exponent(self) -> int:
        """The exponent of the smallest normal number."""
        return 1 - self.bias

    def is_nan(self, code: int) -> bool:
        code &= 0xFF
        if self.fnuz:
            return code == 0x80
        if self.nan_code is None:
            return False
        magnitude = code & 0x7F
        if self.inf_code is not None:
            return magnitude > self.inf_code
        return magnitude == 0x7F

    def decode(self, code: int) -> float:
        """The exact value of `code` (NaN for a NaN code)."""
        code &= 0xFF
        if self.is_nan(code):
            return math.nan
        sign = -1.0 if code & 0x80 else 1.0
        magnitude = code & 0x7F
        if self.inf_code is not None and magnitude == self.inf_code:
            return sign * math.inf
        exponent = magnitude >> self.mantissa_bits
        mantissa = magnitude & ((1 << self.mantissa_bits) - 1)
        significand = mantissa | ((exponent > 0) << self.mantissa_bits)
        return sign * math.ldexp(significand, max(exponent, 1) - self.bias - self.mantissa_bits)

    def encode(self, value: float) -> int:
        """The code of Python float `value` (a double), rounded as the module doc says."""
        (bits,) = struct.unpack("<Q", struct.pack("<d", value))
        return encode_bits(self, bits, SOURCES["f64"])


def round_shift(significand: int, shift: int, odd: bool, ties_away: bool) -> int:
    """`significand >> shift` rounded to nearest, ties to even (`odd`: the quotient's low bit) or
    away from zero; `shift` >= 1."""
    remainder = significand & ((1 << shift) - 1)
    half = 1 << (shift - 1)
    up = remainder >= half if ties_away else remainder > half or (remainder == half and odd)
    return (significand >> shift) + int(up)


def encode_bits(fmt: Float8Format, bits: int, source: SourceFormat) -> int:
    """The 8-bit code of the float whose bits are `bits` in `source`'s format."""
    sign = (bits >> (source.width - 1)) & 1
    magnitude_bits = bits & ((1 << (source.width - 1)) - 1)
    if magnitude_bits > source.inf_bits:
        if fmt.nan_code is None:
            return (sign << 7) | fmt.saturation_code
        return fmt.nan_code
    if magnitude_bits == source.inf_bits:
        code = fmt.saturation_code
    else:
        exponent = magnitude_bits >> source.mantissa_bits
        mantissa = magnitude_bits & ((1 << source.mantissa_bits) - 1)
        significand = mantissa | ((exponent > 0) << source.mantissa_bits)
        unbiased = max(exponent, 1) - source.bias
        # the code is `above` binades over the smallest normal one plus the significand rounded
        # to the format's step there; a subnormal source (an f16 one: the others are far below
        # every 8-bit format) counts in steps of the smallest binade, which can be a normal one
        below = fmt.min_exponent - unbiased
        below = max(below, 0) if exponent else below
        above = max(unbiased - fmt.min_exponent, 0) if exponent else 0
        shift = min(source.mantissa_bits - fmt.mantissa_bits + below, source.mantissa_bits + 2)
        odd = bool((significand >> shift) & 1)
        rounded = round_shift(significand, shift, odd, fmt.ties_away)
        code = min((above << fmt.mantissa_bits) + rounded, fmt.saturation_code)
    if code == 0 and fmt.fnuz:
        return 0
    return (sign << 7) | code


FORMATS: dict[Float8Type, Float8Format] = {
    f8e4m3fn: Float8Format(f8e4m3fn, 4, 3, 7, saturation_code=0x7E, nan_code=0x7F),
    f8e5m2: Float8Format(f8e5m2, 5, 2, 15, saturation_code=0x7B, nan_code=0x7F, inf_code=0x7C),
    f8e4m3fnuz: Float8Format(f8e4m3fnuz, 4, 3, 8, saturation_code=0x7F, nan_code=0x80, fnuz=True),
    f8e5m2fnuz: Float8Format(f8e5m2fnuz, 5, 2, 16, saturation_code=0x7F, nan_code=0x80, fnuz=True),
    f8e4m3b15: Float8Format(
        f8e4m3b15, 4, 3, 15, saturation_code=0x7E, nan_code=None, ties_away=True
    ),
}


def source_format(t: FloatType) -> SourceFormat:
    return SOURCES[t.name]
