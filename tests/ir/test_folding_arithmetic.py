"""The constant folds' float arithmetic is IEEE's without NumPy (issue 24: a compile for a GPU
loads no NumPy): rounding to f32, f16 and bf16 and the float64 operations give what NumPy's
scalars give, infinities, NaNs, signed zeros and overflow included."""

from __future__ import annotations

import math
import random
import struct

import numpy as np
import pytest

from tilec.dialects import arith_folding
from tilec.ir.types import FloatType

SPECIAL = [0.0, -0.0, 1.0, -1.0, 0.5, 1e-45, 1e-40, 6e-8, 3e-5, 65504.0, 65520.0, 65519.99,
           3.4028234663852886e38, 3.4028235677973366e38, 3.5e38, -3.5e38, 1e308, 1.7976931348623157e308,
           2.0**-149, 2.0**-150, 2.0**-24, 2.0**-25, 1 + 2.0**-24, 1 + 3 * 2.0**-24, math.pi,
           math.inf, -math.inf, math.nan, 1 + 2.0**-8 + 2.0**-40]  # fmt: skip


def values(count: int = 400) -> list[float]:
    rng = random.Random(24)
    drawn = [struct.unpack("<d", struct.pack("<Q", rng.getrandbits(64)))[0] for _ in range(count)]
    drawn += [rng.uniform(-1e5, 1e5) for _ in range(count)]
    drawn += [math.ldexp(rng.random(), rng.randint(-160, 140)) for _ in range(count)]
    return SPECIAL + drawn


def same(a: float, b: float) -> bool:
    return (math.isnan(a) and math.isnan(b)) or (
        a == b and math.copysign(1, a) == math.copysign(1, b)
    )


@pytest.mark.parametrize(("name", "scalar"), [("f32", np.float32), ("f16", np.float16)])
def test_rounding_is_numpys(name, scalar):
    with np.errstate(all="ignore"):
        for value in values():
            expected = float(scalar(value))
            assert same(arith_folding.round_float(value, FloatType(name)), expected), value


def nearest_bf16(value: float) -> float:
    """The bfloat16 nearest to `value` (ties to an even significand; past the largest finite
    value, an infinity), computed from the format's spacing: 8 significant bits, exponents of
    float32."""
    if math.isnan(value) or math.isinf(value) or value == 0:
        return value
    _, exponent = math.frexp(abs(value))
    quantum = math.ldexp(1.0, max(exponent - 8, -133))
    low = math.floor(abs(value) / quantum)
    rest = abs(value) / quantum - low
    steps = low + 1 if rest > 0.5 or (rest == 0.5 and low % 2) else low
    result = steps * quantum
    return math.copysign(math.inf if result >= 2.0**128 else result, value)


def test_bf16_rounding_is_the_nearest_bf16():
    for value in values():
        assert same(arith_folding.bf16_round(value), nearest_bf16(value)), value


@pytest.mark.parametrize("name", ["addf", "subf", "mulf", "divf", "remf"])
def test_float64_operations_are_numpys(name):
    numpy_op = {"addf": np.add, "subf": np.subtract, "mulf": np.multiply, "divf": np.divide,
                "remf": np.fmod}[name]  # fmt: skip
    pool = values(60)
    rng = random.Random(name)
    pairs = [(a, b) for a in SPECIAL for b in SPECIAL]
    pairs += [(rng.choice(pool), rng.choice(pool)) for _ in range(3000)]
    with np.errstate(all="ignore"):
        for a, b in pairs:
            expected = float(numpy_op(np.float64(a), np.float64(b)))
            assert same(arith_folding._float_evaluate(name, a, b), expected), (a, b)
