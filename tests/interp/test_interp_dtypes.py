"""Integer wrapping, signed division, shifts, f16, bf16 rounding and float compare semantics."""

import numpy as np
import pytest
from tir_helpers import compile_tir

from tilec.dialects.arith_folding import bf16_round
from tilec_interp.interpreter import execute

N = 256


def binary_kernel(op: str, t: str, result_t: str | None = None, attrs: str = "") -> str:
    r = result_t or t
    return f"""\
func.func @k(%a_ptr: !tile.ptr<{t}>, %b_ptr: !tile.ptr<{t}>, %out_ptr: !tile.ptr<{r}>) {{
  %offs = tile.make_range {{start = 0 : i32, end = {N} : i32}} : tensor<{N}xi32>
  %ab = tile.splat %a_ptr : tensor<{N}x!tile.ptr<{t}>>
  %ap = tile.addptr %ab, %offs : tensor<{N}x!tile.ptr<{t}>>
  %a = tile.load %ap : tensor<{N}x{t}>
  %bb = tile.splat %b_ptr : tensor<{N}x!tile.ptr<{t}>>
  %bp = tile.addptr %bb, %offs : tensor<{N}x!tile.ptr<{t}>>
  %b = tile.load %bp : tensor<{N}x{t}>
  %r = {op} %a, %b {attrs}: tensor<{N}x{r}>
  %ob = tile.splat %out_ptr : tensor<{N}x!tile.ptr<{r}>>
  %op = tile.addptr %ob, %offs : tensor<{N}x!tile.ptr<{r}>>
  tile.store %op, %r
  tile.return
}}
"""


def run_binary(op, t, a, b, out_dtype=None, result_t=None, attrs=""):
    module = compile_tir(binary_kernel(op, t, result_t, attrs))
    out = np.zeros(N, out_dtype or a.dtype)
    execute(module, "k", (1,), [a, b, out])
    return out


def test_i8_wraps(rng):
    a = rng.integers(-128, 128, N, dtype=np.int8)
    b = rng.integers(-128, 128, N, dtype=np.int8)
    np.testing.assert_array_equal(run_binary("arith.addi", "i8", a, b), a + b)
    np.testing.assert_array_equal(run_binary("arith.muli", "i8", a, b), a * b)
    np.testing.assert_array_equal(run_binary("arith.subi", "i8", a, b), a - b)


def c_div(a, b):
    q = [
        abs(int(x)) // abs(int(y)) * (1 if (x >= 0) == (y >= 0) else -1)
        for x, y in zip(a, b, strict=True)
    ]
    return np.array(q, np.int64)


def test_divsi_remsi_truncate_toward_zero(rng):
    a = rng.integers(-1000, 1000, N, dtype=np.int32)
    b = rng.integers(1, 50, N, dtype=np.int32) * rng.choice([-1, 1], N).astype(np.int32)
    q = c_div(a, b)
    np.testing.assert_array_equal(run_binary("arith.divsi", "i32", a, b), q)
    remainder = run_binary("arith.remsi", "i32", a, b)
    np.testing.assert_array_equal(remainder, a - b * q)
    nonzero = remainder != 0
    assert (np.sign(remainder[nonzero]) == np.sign(a[nonzero])).all()


def test_divui_views_operands_as_unsigned(rng):
    a = rng.integers(-(2**31), 2**31, N, dtype=np.int64).astype(np.int32)
    b = rng.integers(1, 1000, N, dtype=np.int32)
    out = run_binary("arith.divui", "i32", a, b)
    np.testing.assert_array_equal(out.view(np.uint32), a.view(np.uint32) // b.view(np.uint32))


def test_shifts_by_width_or_more(rng):
    a = rng.integers(-(2**15), 2**15, N, dtype=np.int16)
    b = rng.integers(0, 40, N, dtype=np.int16)
    big = b >= 16
    small = np.where(big, 0, b)
    shl = run_binary("arith.shli", "i16", a, b)
    np.testing.assert_array_equal(shl, np.where(big, 0, a << small))
    shrs = run_binary("arith.shrsi", "i16", a, b)
    np.testing.assert_array_equal(shrs, np.where(big, np.where(a < 0, -1, 0), a >> small))
    shru = run_binary("arith.shrui", "i16", a, b)
    expected = np.where(big, 0, a.view(np.uint16) >> small.astype(np.uint16))
    np.testing.assert_array_equal(shru.view(np.uint16), expected)


def test_f16_arithmetic_rounds_to_f16(rng):
    a = rng.standard_normal(N).astype(np.float16)
    b = rng.standard_normal(N).astype(np.float16) + np.float16(3)
    for op, fn in [("arith.addf", np.add), ("arith.mulf", np.multiply), ("arith.divf", np.divide)]:
        exact = fn(a.astype(np.float64), b.astype(np.float64)).astype(np.float16)
        np.testing.assert_array_equal(run_binary(op, "f16", a, b), exact)


def bf16_bits(values):
    return (
        np.array([bf16_round(float(v)) for v in values], np.float32).view(np.uint32) >> 16
    ).astype(np.uint16)


def bf16_values(bits):
    return (bits.astype(np.uint32) << 16).view(np.float32)


@pytest.mark.parametrize(
    ("op", "fn"),
    [("arith.addf", np.add), ("arith.mulf", np.multiply), ("arith.divf", np.divide)],
)
def test_bf16_rounds_nearest_even(rng, op, fn):
    a = bf16_bits(rng.standard_normal(N) * 100)
    b = bf16_bits(rng.standard_normal(N) + 5)
    out = run_binary(op, "bf16", a, b)
    expected = bf16_bits(fn(bf16_values(a).astype(np.float64), bf16_values(b).astype(np.float64)))
    np.testing.assert_array_equal(out, expected)
    assert out.dtype == np.uint16


def test_bf16_tie_rounds_to_even():
    # 1 + 2**-8 is halfway between two bf16 values: it rounds to 1.0 (even mantissa).
    a = bf16_bits(np.full(N, 1.0))
    b = bf16_bits(np.full(N, 2.0**-8))
    b[1] = bf16_bits([3 * 2.0**-8])[0]  # 1 + 3*2**-8 rounds up to 1 + 2**-6
    out = bf16_values(run_binary("arith.addf", "bf16", a, b))
    assert out[0] == 1.0
    assert out[1] == 1 + 2.0**-6


def test_cmpf_ordered_and_unordered(rng):
    a = rng.standard_normal(N).astype(np.float32)
    b = rng.standard_normal(N).astype(np.float32)
    a[::7] = np.nan
    b[::5] = np.nan
    b[3::11] = a[3::11]
    unordered = np.isnan(a) | np.isnan(b)
    cases = {
        "olt": (a < b) & ~unordered,
        "ult": (a < b) | unordered,
        "oeq": (a == b),
        "une": (a != b),
        "one": (a != b) & ~unordered,
        "ueq": (a == b) | unordered,
        "uno": unordered,
        "ord": ~unordered,
    }
    for predicate, expected in cases.items():
        out = run_binary(
            "arith.cmpf", "f32", a, b, np.bool_, "i1", f'{{predicate = "{predicate}"}} '
        )
        np.testing.assert_array_equal(out, expected, err_msg=predicate)


def test_max_min_nan_semantics(rng):
    a = rng.standard_normal(N).astype(np.float32)
    b = rng.standard_normal(N).astype(np.float32)
    a[::3] = np.nan
    np.testing.assert_array_equal(run_binary("arith.maxnumf", "f32", a, b), np.fmax(a, b))
    np.testing.assert_array_equal(run_binary("arith.minnumf", "f32", a, b), np.fmin(a, b))
    np.testing.assert_array_equal(run_binary("arith.maximumf", "f32", a, b), np.maximum(a, b))
    np.testing.assert_array_equal(run_binary("arith.minimumf", "f32", a, b), np.minimum(a, b))
