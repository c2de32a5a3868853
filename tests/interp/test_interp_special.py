"""The interpreter's vectorized erf and fma against math.erf and exact rational arithmetic."""

import math
from fractions import Fraction

import numpy as np

from tilec_interp.special import erf, fma


def ulps(got: np.ndarray, exact: np.ndarray) -> np.ndarray:
    return np.abs(got - exact) / np.spacing(np.abs(exact))


def test_erf_within_a_few_ulps_of_math_erf_everywhere(rng):
    x = np.concatenate([
        rng.uniform(-7, 7, 20000),
        rng.standard_normal(20000),
        10.0 ** rng.uniform(-300, 1, 2000) * rng.choice([-1, 1], 2000),
        np.linspace(-6.5, 6.5, 20001),
        [0.75, 2.0, -2.0, np.nextafter(2.0, 0), 5.9, 6.0, 27.0],
    ])  # fmt: skip
    exact = np.array([math.erf(v) for v in x])
    error = ulps(erf(x), exact)
    assert error.max() <= 16, (x[np.argmax(error)], error.max())
    assert np.median(error) <= 1


def test_erf_rounds_float32_inputs_like_math_erf(rng):
    x = (rng.standard_normal(50000) * 2).astype(np.float32)
    got = erf(x.astype(np.float64)).astype(np.float32)
    exact = np.array([math.erf(float(v)) for v in x]).astype(np.float32)
    assert (np.abs(got - exact) <= np.spacing(np.abs(exact))).all()
    assert (got == exact).mean() > 0.999


def test_erf_special_values():
    got = erf(np.array([np.nan, np.inf, -np.inf, 0.0, -0.0]))
    assert np.isnan(got[0])
    np.testing.assert_array_equal(got[1:], [1.0, -1.0, 0.0, -0.0])
    assert np.signbit(got[4]) and not np.signbit(got[3])


def test_fma_keeps_the_product_exact(rng):
    """x * x + x near x = -1 cancels: a plain multiply-add is off by many ulps there."""
    x = rng.uniform(-1.1, -0.9, 2000)
    a, b, c = x, x, x
    exact = np.array([float(Fraction(p) * Fraction(q) + Fraction(r)) for p, q, r in zip(a, b, c,
                     strict=True)])  # fmt: skip
    assert ulps(fma(a, b, c), exact).max() <= 1
    assert ulps(a * b + c, exact).max() > 1  # the test can tell the difference


def test_fma_of_non_finite_values():
    got = fma(np.array([np.inf, np.nan, 1e300]), np.array([1.0, 1.0, 1e300]), np.array([1.0] * 3))
    assert got[0] == np.inf and np.isnan(got[1]) and got[2] == np.inf
