"""tl.map_elementwise and x.item() on every backend (`TILEC_TEST_BACKEND=nvidia` checks each
launch against the interpreter too), against NumPy."""

import numpy as np
import pytest
from lang_helpers import run
from language_elementwise_kernels import item_of_reduction, map_float_kernel, map_int_kernel

M, N = 8, 32


@pytest.mark.parametrize("dtype", ["float16", "float32"])
@pytest.mark.parametrize("op", ["leaky", "swap", "pack4"])
def test_map_elementwise_on_floats(rng, dtype, op):
    x = rng.standard_normal((M, N)).astype(dtype)
    y = rng.standard_normal((M, N)).astype(dtype)
    out, out2 = np.zeros_like(x), np.zeros_like(x)
    run(map_float_kernel, [(f"*{dtype}", x), (f"*{dtype}", y), (f"*{dtype}", out),
                           (f"*{dtype}", out2)], M=M, N=N, OP=op)  # fmt: skip
    if op == "leaky":
        expected = np.where(x >= 0, x, x * np.asarray(0.125, dtype))
        np.testing.assert_array_equal(out, expected)
    elif op == "swap":
        pairs = x.reshape(M, N // 2, 2)
        np.testing.assert_array_equal(out, pairs[..., ::-1].reshape(M, N))
    else:
        np.testing.assert_array_equal(out, x + y)
        np.testing.assert_array_equal(out2, x - y)


@pytest.mark.parametrize("dtype", ["int32", "int64"])
@pytest.mark.parametrize("op", ["sign", "div", "collatz"])
def test_map_elementwise_on_integers(rng, dtype, op):
    x = rng.integers(-50, 50, 256).astype(dtype)
    y = rng.integers(-4, 5, 256).astype(dtype)  # zeros included
    if op == "collatz":
        x, y = np.abs(x) + 1, rng.integers(0, 40, 256).astype(dtype)
    out, out2 = np.zeros_like(x), np.zeros_like(x)
    run(map_int_kernel, [(f"*{dtype}", x), (f"*{dtype}", y), (f"*{dtype}", out),
                         (f"*{dtype}", out2)], N=256, OP=op)  # fmt: skip
    if op == "sign":
        np.testing.assert_array_equal(out, np.sign(x - y))
        return
    if op == "collatz":
        expected = [_steps(int(v), int(n)) for v, n in zip(x, y, strict=True)]
        np.testing.assert_array_equal(out, expected)
        return
    safe = np.where(y == 0, 1, y)
    q = np.where(y == 0, x, np.trunc(x / safe).astype(dtype))
    np.testing.assert_array_equal(out, q)
    np.testing.assert_array_equal(out2, np.where(y == 0, 0, x - q * safe))


def _steps(v: int, limit: int) -> int:
    steps = 0
    while v != 1 and steps < limit:
        v, steps = (v // 2 if v % 2 == 0 else 3 * v + 1), steps + 1
    return steps


def test_item_of_a_reduction(rng):
    x = rng.standard_normal(64).astype(np.float32)
    out = np.zeros(1, np.float32)
    run(item_of_reduction, [("*float32", x), ("*float32", out)], N=64)
    assert out[0] == x.max()
