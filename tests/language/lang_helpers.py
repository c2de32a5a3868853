"""Shared helpers for tests/language: dtypes, launching through `tilec.compile`, references."""

from __future__ import annotations

import numpy as np

import tilec
from tilec import settings
from tilec.ir.type_names import SIGNATURE_BY_TORCH
from tilec.runtime import check

INTS = ["int8", "int16", "int32", "int64"]
UINTS = ["uint8", "uint16", "uint32", "uint64"]
FLOATS = ["float16", "bfloat16", "float32", "float64"]
SIGNATURE = SIGNATURE_BY_TORCH
"""dtype name (`bool`, `bfloat16`, `float32`) -> signature spelling."""
N = 256


def storage(dtype: str) -> np.dtype:
    """The NumPy dtype of a buffer of `dtype` (bf16: uint16 bit patterns)."""
    return np.dtype(np.uint16 if dtype == "bfloat16" else dtype)


BACKEND = settings.TEST_BACKEND.get() or "interp"
"""The backend these tests run on: interp (CI), or a GPU backend for the conformance run
(`TILEC_TEST_BACKEND=nvidia pytest tests/language`), where every launch is also checked against
the interpreter (`check=True`) before the test's own NumPy checks."""


GPU = BACKEND != "interp"


def run(
    kernel, args: list[tuple[str, object]], grid=(1,), *, exact_order: bool = True, **constexprs
) -> None:
    """Compile `kernel` for `args` ((tl dtype name or '*' + name, value) pairs, in parameter
    order) with `BACKEND` and run it; arrays are written in place. On a GPU backend the results
    are also compared with the interpreter's, unless `exact_order` is False: a kernel whose
    results depend on the order of float accumulation or of atomics (the test then checks them
    against NumPy with its own bounds)."""
    names = [p for p in kernel.arg_names if p not in constexprs]
    signature = {}
    for name, (dtype, _) in zip(names, args, strict=True):
        pointer = dtype.startswith("*")
        signature[name] = ("*" if pointer else "") + SIGNATURE[dtype.lstrip("*")]
    compiled = tilec.compile(kernel, signature=signature, constexprs=constexprs, backend=BACKEND)
    values = [value for _, value in args]
    if BACKEND == "interp" or not exact_order:
        compiled.run(grid, values)
        return
    reference = tilec.compile(kernel, signature=signature, constexprs=constexprs, backend="interp")
    check.run_checked(compiled, grid, values, lambda: reference)


def bf16_bits(x: np.ndarray) -> np.ndarray:
    """float64 values rounded to bf16 (nearest even), as uint16 patterns; written apart from
    the interpreter's rounding: round the float64 bit pattern at bit 45."""
    x = np.asarray(x, np.float64)
    bits = x.view(np.uint64)
    rounded = (bits + np.uint64((1 << 44) - 1) + ((bits >> np.uint64(45)) & np.uint64(1))) & ~(
        np.uint64((1 << 45) - 1)
    )
    values = rounded.view(np.float64).astype(np.float32)  # exact: 8 significant bits
    values = np.where(np.isnan(x), np.float32(np.nan), values)
    return (values.view(np.uint32) >> np.uint32(16)).astype(np.uint16)


def bf16_values(bits: np.ndarray) -> np.ndarray:
    return (np.asarray(bits, np.uint16).astype(np.uint32) << np.uint32(16)).view(np.float32)


def random_values(rng: np.random.Generator, dtype: str, n: int = N, low=None, high=None):
    """Random values of `dtype` (bf16 as bit patterns) with no zeros and a spread of signs."""
    if dtype in INTS + UINTS:
        info = np.iinfo(dtype)
        lo = info.min if low is None else low
        hi = info.max if high is None else high
        values = rng.integers(lo, hi, n, dtype=dtype, endpoint=True)
        values[values == 0] = 1 if hi >= 1 else -1
        return values
    lo, hi = (-8.0 if low is None else low), (8.0 if high is None else high)
    values = rng.uniform(lo, hi, n)
    values[values == 0] = 0.5
    if dtype == "bfloat16":
        return bf16_bits(values)
    return values.astype(dtype)


def as_float64(values: np.ndarray, dtype: str) -> np.ndarray:
    return (bf16_values(values) if dtype == "bfloat16" else values).astype(np.float64)


def rounded(exact: np.ndarray, dtype: str) -> np.ndarray:
    """float64 results rounded once to `dtype` (bf16 as bit patterns)."""
    return bf16_bits(exact) if dtype == "bfloat16" else np.asarray(exact).astype(dtype)
