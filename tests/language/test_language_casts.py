"""`x.to(dtype)` between every pair of dtypes (int1 included), against NumPy, with Triton's rules:
integers sign- or zero-extend by the source's signedness and truncate to the target's width, a
cast to int1 is `x != 0`, float narrowing rounds to nearest even (bf16 too), float to integer
truncates toward zero (values are kept inside the target's range, where LLVM defines it)."""

import numpy as np
import pytest
from lang_helpers import (
    FLOATS,
    INTS,
    UINTS,
    as_float64,
    bf16_bits,
    bf16_values,
    random_values,
    run,
    storage,
)
from language_kernels import cast_kernel

import tilec.language as tl

N = 256
ALL = ["bool", *INTS, *UINTS, *FLOATS]
TL = {"bool": tl.int1, **{name: getattr(tl, name) for name in INTS + UINTS + FLOATS}}


def source_values(rng, src: str, dst: str) -> np.ndarray:
    if src == "bool":
        return rng.integers(0, 2, N).astype(bool)
    if src in FLOATS and dst in INTS + UINTS:  # in range of the target: LLVM leaves the rest poison
        info = np.iinfo(dst)
        high = 0.99 * min(float(info.max), 60000.0 if src == "float16" else 1e6)  # rounded too
        low = 0.0 if info.min == 0 else -high
        values = rng.uniform(max(low, info.min), high, N)
        values[values == 0] = 0.75
        if src == "bfloat16":
            return bf16_bits(values)
        return values.astype(src)
    if src in FLOATS:
        limit = 6e4 if src == "float16" else 1e6
        return random_values(rng, src, low=-limit, high=limit)
    return random_values(rng, src)


def reference(x: np.ndarray, src: str, dst: str) -> np.ndarray:
    if src in FLOATS:
        x = as_float64(x, src)
        if src in ("float16", "bfloat16") and dst in FLOATS:
            x = x.astype(np.float32)  # exact
    if dst == "bool":
        return x != 0
    if dst == "bfloat16":
        return bf16_bits(np.asarray(x, np.float64))
    if src in FLOATS and dst in INTS + UINTS:
        return np.trunc(x).astype(dst)
    if src == "bool":
        return x.astype(np.uint8).astype(dst)
    if src in INTS + UINTS and dst in INTS + UINTS:
        return x.astype(dst)  # NumPy's integer casts extend by the source's sign and wrap
    with np.errstate(over="ignore"):  # beyond f16's range: inf, as the kernel gives
        return x.astype(dst)  # int -> float and float -> float round to nearest even


@pytest.mark.parametrize("dst", ALL)
@pytest.mark.parametrize("src", ALL)
def test_cast(rng, src, dst):
    x = source_values(rng, src, dst)
    out = np.zeros(N, storage(dst))
    run(cast_kernel, [("*" + src, x), ("*" + dst, out)], DTYPE=TL[dst], N=N)
    expected = reference(x, src, dst)
    if dst in FLOATS:
        got = bf16_values(out) if dst == "bfloat16" else out
        want = bf16_values(expected) if dst == "bfloat16" else expected
        np.testing.assert_array_equal(got, want, err_msg=f"{src} -> {dst}")
    else:
        np.testing.assert_array_equal(out, expected, err_msg=f"{src} -> {dst}")


def test_f32_to_f16_ties_round_to_even():
    """1 + 2**-11 is halfway between 1 and the next f16 (1 + 2**-10): even keeps 1; 1 + 3 * 2**-11
    is halfway between 1 + 2**-10 and 1 + 2**-9: even gives 1 + 2**-9."""
    x = np.array([1 + 2.0**-11, 1 + 3 * 2.0**-11] * (N // 2), np.float32)
    out = np.zeros(N, np.float16)
    run(cast_kernel, [("*float32", x), ("*float16", out)], DTYPE=tl.float16, N=N)
    np.testing.assert_array_equal(out[:2], np.array([1.0, 1 + 2.0**-9], np.float16))


def test_f32_to_bf16_ties_round_to_even():
    x = np.array([1 + 2.0**-8, 1 + 3 * 2.0**-8] * (N // 2), np.float32)
    out = np.zeros(N, np.uint16)
    run(cast_kernel, [("*float32", x), ("*bfloat16", out)], DTYPE=tl.bfloat16, N=N)
    np.testing.assert_array_equal(bf16_values(out[:2]), np.array([1.0, 1 + 2.0**-6], np.float32))
