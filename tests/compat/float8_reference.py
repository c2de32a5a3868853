"""An independent NumPy reference of the five 8-bit float formats, written from their
definitions (not from tilec's bit algorithm): each code's value from its fields, and encoding as
the nearest value of the format found by search, with the tie, saturation and NaN rules that
`tilec.ir.float8` documents (Triton's GPU conversions)."""

from __future__ import annotations

import numpy as np

import tilec.language as tl

# exponent bits, mantissa bits, bias, kind: "fn" (one NaN 0x7F, no inf), "ieee" (inf, NaNs),
# "fnuz" (NaN 0x80 only, no -0), "b15" (no specials)
SPECS = {
    "float8e4nv": (4, 3, 7, "fn"),
    "float8e5": (5, 2, 15, "ieee"),
    "float8e4b8": (4, 3, 8, "fnuz"),
    "float8e5b16": (5, 2, 16, "fnuz"),
    "float8e4b15": (4, 3, 15, "b15"),
}
FORMATS = [getattr(tl, name) for name in SPECS]
LARGEST = {"float8e4nv": 448.0, "float8e5": 57344.0, "float8e4b8": 240.0,
           "float8e5b16": 57344.0, "float8e4b15": 1.875}  # fmt: skip


def values(name: str) -> np.ndarray:
    """The float64 value of each code 0..255 (NaN for NaN codes)."""
    e_bits, m_bits, bias, kind = SPECS[name]
    out = np.empty(256)
    for code in range(256):
        sign = -1.0 if code >> 7 else 1.0
        e, m = (code >> m_bits) & ((1 << e_bits) - 1), code & ((1 << m_bits) - 1)
        if (kind == "fnuz" and code == 0x80) or (kind == "fn" and code & 0x7F == 0x7F):
            out[code] = np.nan
            continue
        if kind == "ieee" and e == (1 << e_bits) - 1:
            out[code] = sign * np.inf if m == 0 else np.nan
            continue
        if e == 0:
            out[code] = sign * m / 2**m_bits * 2.0 ** (1 - bias)
        else:
            out[code] = sign * (1 + m / 2**m_bits) * 2.0 ** (e - bias)
    return out


def saturation_code(name: str) -> int:
    """The largest magnitude code encoding gives: the largest finite (1.75 for e4b15)."""
    table = values(name)[:128]
    finite = np.flatnonzero(np.isfinite(table))
    return 0x7E if name == "float8e4b15" else int(finite.max())


def encode(x: np.ndarray, name: str) -> np.ndarray:
    """Codes of the exact values `x` (float64 or narrower): nearest, ties to the even code
    (e4b15: away from zero), saturating; NaN to the format's NaN (e4b15: +-1.75)."""
    with np.errstate(invalid="ignore"):  # signaling NaNs
        x = np.asarray(x, np.float64).ravel()
    kind = SPECS[name][3]
    sat = saturation_code(name)
    grid = values(name)[: sat + 1]
    a = np.abs(x)
    with np.errstate(invalid="ignore"):
        lo = np.clip(np.searchsorted(grid, a, side="right") - 1, 0, sat)
        hi = np.minimum(lo + 1, sat)
        below, above = a - grid[lo], grid[hi] - a
        tie_up = (hi % 2 == 0) if kind != "b15" else np.ones_like(lo, bool)
        code = np.where((above < below) | ((above == below) & tie_up), hi, lo)
        code = np.where(a >= grid[sat], sat, code)
    negative = np.signbit(x)
    signed = np.where(negative, code | 0x80, code)
    if kind == "fnuz":
        signed = np.where(code == 0, 0, signed)
    nan = {"fn": 0x7F, "ieee": 0x7F, "fnuz": 0x80}.get(kind)
    nan_codes = np.where(negative, 0xFE, 0x7E) if nan is None else nan
    return np.where(np.isnan(x), nan_codes, signed).astype(np.uint8)


def midpoints(name: str) -> np.ndarray:
    """Every midpoint between neighbouring finite values of the format, both signs, with the
    float64 values just below and above each (where rounding turns)."""
    finite = np.unique(np.abs(values(name)[np.isfinite(values(name))]))
    mids = (finite[:-1] + finite[1:]) / 2
    mids = np.concatenate([mids, [finite[-1] * 1.0625, finite[-1] * 2, finite[0]]])
    near = np.concatenate([mids, np.nextafter(mids, 0), np.nextafter(mids, np.inf)])
    return np.concatenate([near, -near])


def special_values() -> np.ndarray:
    return np.array([0.0, -0.0, np.inf, -np.inf, np.nan, -np.nan, 1e-30, -1e-30, 1e30, -1e30])
