"""f16 and bf16 sums and scans on the interpreter accumulate in float32 and round each result once
(`tilec_interp.reductions`), so the reference of `check=True` is the near-exact sum rather than a
sequential f16 one (tests/fuzz/RESULTS.md, finding 5). Products and other combiners still round
every step in the element type."""

from __future__ import annotations

import numpy as np
import pytest

import tilec
import tilec.language as tl
from tilec_interp.dtypes import bf16_round, bf16_to_bits, bits_to_bf16


def run(kernel, signature: dict, constexprs: dict, args: list) -> None:
    compiled = tilec.compile(kernel, signature, constexprs, backend="interp")
    compiled.run((1,), args)


@tilec.jit
def sin_cumsum_kernel(out_ptr, BLOCK: tl.constexpr):
    x = tl.cumsum(tl.sin(tl.full([BLOCK], -1.0, tl.float16)), axis=0)
    tl.store(out_ptr + tl.arange(0, BLOCK), x)


def test_float16_cumsum_of_the_fuzzer_finding_is_the_rounded_exact_sum():
    """Device seed 104521, shrunk: element 554 was -446.5 on the interpreter (sequential float16
    sums), -467.0 on the H100; the exact sum is -466.93."""
    out = np.zeros(1024, np.float16)
    run(sin_cumsum_kernel, {"out_ptr": "*fp16"}, {"BLOCK": 1024}, [out])
    term = np.float64(np.sin(np.float16(-1.0)))  # the float16 sine, as the kernel computes it
    exact = np.arange(1, 1025) * term
    np.testing.assert_array_equal(out, exact.astype(np.float16))
    assert out[554] == np.float16(-467.0)


@tilec.jit
def row_sum_kernel(x_ptr, out_ptr, BLOCK: tl.constexpr):
    x = tl.load(x_ptr + tl.arange(0, BLOCK))
    tl.store(out_ptr, tl.sum(x, axis=0))


def test_float16_sum_rounds_once():
    """2048 then 1023 ones: every float16 partial sum above 2048 loses an added 1 (ulp 2, ties to
    even), so a sum that rounds each step, in any order, ends far from 3071."""
    x = np.ones(1024, np.float16)
    x[0] = 2048.0
    out = np.zeros(1, np.float16)
    run(row_sum_kernel, {"x_ptr": "*fp16", "out_ptr": "*fp16"}, {"BLOCK": 1024}, [x, out])
    assert out[0] == np.float16(3071.0)


def test_float16_sum_of_random_values_is_within_half_an_ulp():
    x = np.random.default_rng(14).standard_normal(4096).astype(np.float16)
    out = np.zeros(1, np.float16)
    run(row_sum_kernel, {"x_ptr": "*fp16", "out_ptr": "*fp16"}, {"BLOCK": 4096}, [x, out])
    exact = np.sum(x, dtype=np.float64)
    half_ulp = float(np.spacing(np.float16(abs(exact)))) / 2
    assert abs(float(out[0]) - exact) <= half_ulp + 1e-4  # float32's own error is far below


@tilec.jit
def generic_kernel(x_ptr, y_ptr, sum_ptr, max_ptr, scan_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs)
    y = tl.load(y_ptr + offs)
    total, largest = tl.reduce((x, y), 0, add_and_max)
    tl.store(sum_ptr, total)
    tl.store(max_ptr, largest)
    tl.store(scan_ptr + offs, tl.associative_scan(x, 0, add))


@tilec.jit
def add(a, b):
    return a + b


@tilec.jit
def add_and_max(a0, a1, b0, b1):
    return a0 + b0, tl.maximum(a1, b1)


@pytest.mark.parametrize("dtype", ["fp16", "bf16"])
def test_user_combiners_of_adds_and_maxima_accumulate_in_float32(rng, dtype):
    n = 1024
    values = np.ones(n, np.float32)
    values[0] = 2048.0  # float16 and bfloat16 partial sums lose every added 1 from here
    y = rng.standard_normal(n).astype(np.float32)
    if dtype == "fp16":
        x, yy = values.astype(np.float16), y.astype(np.float16)
        outs = [np.zeros(1, np.float16), np.zeros(1, np.float16), np.zeros(n, np.float16)]
        narrow = lambda v: np.asarray(v).astype(np.float16)  # noqa: E731
        values_of = lambda v: v.astype(np.float64)  # noqa: E731
    else:
        x, yy = bf16_to_bits(values), bf16_to_bits(bf16_round(y))
        outs = [np.zeros(1, np.uint16), np.zeros(1, np.uint16), np.zeros(n, np.uint16)]
        narrow = lambda v: bf16_to_bits(bf16_round(np.asarray(v, np.float64)))  # noqa: E731
        values_of = lambda v: bits_to_bf16(v).astype(np.float64)  # noqa: E731
    signature = {name: f"*{dtype}" for name in ("x_ptr", "y_ptr", "sum_ptr", "max_ptr", "scan_ptr")}
    run(generic_kernel, signature, {"BLOCK": n}, [x, yy, *outs])
    total, largest, scan = outs
    np.testing.assert_array_equal(total, narrow([np.sum(values_of(x))]))
    np.testing.assert_array_equal(largest, narrow([values_of(yy).max()]))
    np.testing.assert_array_equal(scan, narrow(np.cumsum(values_of(x))))


@tilec.jit
def cumprod_kernel(x_ptr, out_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, tl.cumprod(tl.load(x_ptr + offs), axis=0))


def test_float16_products_still_round_every_step(rng):
    x = (1.0 + rng.uniform(-0.01, 0.01, 64)).astype(np.float16)
    out = np.zeros(64, np.float16)
    run(cumprod_kernel, {"x_ptr": "*fp16", "out_ptr": "*fp16"}, {"BLOCK": 64}, [x, out])
    np.testing.assert_array_equal(out, np.multiply.accumulate(x, dtype=np.float16))
