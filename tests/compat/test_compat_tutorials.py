"""Programs in the shape of Triton's tutorials that the other tests do not cover, written here:
low-memory dropout (tutorial 04: the mask regenerated from a seed, not stored) and extern
functions (tutorial 07: `tl.extra.libdevice` inside a kernel, its `asin` among them). Each checked against NumPy, on
interp in CI and on a GPU backend with `TILEC_TEST_BACKEND=nvidia pytest tests/compat -k
tutorials` (every launch then also compared with the interpreter)."""

from __future__ import annotations

import numpy as np
import pytest
from compat_names_helpers import run
from test_compat_names_random import randint4x_reference, uniform_reference

import tilec
import tilec.language as tl
from tilec.language.extra import libdevice


@tilec.jit
def seeded_dropout(x_ptr, output_ptr, n_elements, p, seed, BLOCK_SIZE: tl.constexpr):
    pid = tl.program_id(axis=0)
    offsets = pid * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    x = tl.load(x_ptr + offsets, mask=mask)
    random = tl.rand(seed, offsets)  # the keep mask is regenerated, never stored
    x_keep = random > p
    output = tl.where(x_keep, x / (1 - p), 0.0)
    tl.store(output_ptr + offsets, output, mask=mask)


DROPOUT = {"x_ptr": "*fp32", "output_ptr": "*fp32", "n_elements": "i32", "p": "fp32",
           "seed": "i32"}  # fmt: skip


def dropout(x: np.ndarray, p: float, seed: int) -> np.ndarray:
    out = np.full_like(x, np.nan)
    grid = (tilec.cdiv(x.size, 256),)
    run(seeded_dropout, DROPOUT, [x, out, x.size, p, seed], grid=grid, BLOCK_SIZE=256)
    return out


def test_seeded_dropout_keeps_what_the_seed_says(rng):
    x = rng.standard_normal(1000).astype(np.float32)
    p, seed = 0.5, 123
    out = dropout(x, p, seed)
    kept = uniform_reference(randint4x_reference(seed, np.arange(x.size))[0]) > p
    expected = np.where(kept, x / np.float32(1 - p), np.float32(0))
    np.testing.assert_allclose(out, expected, rtol=1e-6)
    assert 0.4 < kept.mean() < 0.6
    np.testing.assert_array_equal(dropout(x, p, seed), out)  # the same seed, the same mask
    assert not np.array_equal(dropout(x, p, seed + 1) != 0, out != 0)


@tilec.jit
def extern_kernel(x_ptr, y_ptr, out_ptr, n, FN: tl.constexpr, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    x = tl.load(x_ptr + offsets, mask=mask)
    y = tl.load(y_ptr + offsets, mask=mask)
    if FN == "rint":
        out = libdevice.rint(x)
    elif FN == "trunc":
        out = libdevice.trunc(x)
    elif FN == "copysign":
        out = libdevice.copysign(x, y)
    elif FN == "fma_rn":
        out = libdevice.fma_rn(x, y, x)
    elif FN == "isnan":
        out = tl.where(libdevice.isnan(x), 1.0, 0.0)
    elif FN == "asin":
        out = libdevice.asin(x)
    elif FN == "acos":
        out = libdevice.acos(x)
    else:
        out = libdevice.rsqrt(tl.abs(x) + 1.0)
    tl.store(out_ptr + offsets, out, mask=mask)


@pytest.mark.parametrize(
    ("fn", "reference"),
    [
        ("rint", lambda x, y: np.rint(x)),
        ("trunc", lambda x, y: np.trunc(x)),
        ("copysign", lambda x, y: np.copysign(x, y)),
        ("fma_rn", lambda x, y: x * y + x),
        ("isnan", lambda x, y: np.isnan(x).astype(np.float32)),
        ("rsqrt", lambda x, y: 1 / np.sqrt(np.abs(x) + 1)),
    ],
)
def test_libdevice_functions_in_a_kernel(fn, reference, rng):
    n = 300
    x = (rng.standard_normal(n) * 4).astype(np.float32)
    x[::37] = np.float32(2.5)  # a tie for rint: to even
    x[5] = np.nan
    y = rng.standard_normal(n).astype(np.float32)
    out = np.zeros(n, np.float32)
    signature = {"x_ptr": "*fp32", "y_ptr": "*fp32", "out_ptr": "*fp32", "n": "i32"}
    run(extern_kernel, signature, [x, y, out, n], grid=(tilec.cdiv(n, 128),), FN=fn, BLOCK=128)
    np.testing.assert_allclose(out, reference(x, y).astype(np.float32), rtol=1e-5, equal_nan=True)


ARC_INPUTS = np.concatenate([
    np.linspace(-1, 1, 4001), [-1, 1, 0.5, -0.5, np.nextafter(0.5, 1), np.nextafter(-0.5, -1),
    0.0, -0.0, 1e-30, -1e-30, 1e-8, 0.999999, -0.999999, 1.5, -1.0001, np.nan, np.inf],
])  # fmt: skip


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize(("fn", "reference"), [("asin", np.arcsin), ("acos", np.arccos)])
def test_libdevice_arc_functions_are_accurate(fn, reference, dtype):
    """Within 2 float32 ulps (float32) and 4 float64 ulps (float64) of the correctly rounded
    value on [-1, 1] (the reductions at |x| = 0.5 and the ends included), NaN outside."""
    x = ARC_INPUTS.astype(dtype)
    out = np.zeros_like(x)
    bits = "fp32" if dtype == np.float32 else "fp64"
    signature = {"x_ptr": f"*{bits}", "y_ptr": f"*{bits}", "out_ptr": f"*{bits}", "n": "i32"}
    run(extern_kernel, signature, [x, x, out, x.size], grid=(tilec.cdiv(x.size, 512),), FN=fn,
        BLOCK=512)  # fmt: skip
    with np.errstate(invalid="ignore"):
        expected = reference(x.astype(np.float64))
    ulps = np.abs(out.astype(np.float64) - expected) / np.spacing(np.abs(expected).astype(dtype))
    finite = np.isfinite(expected)
    assert ulps[finite].max() <= (2 if dtype == np.float32 else 4), ulps[finite].max()
    assert np.isnan(out[~finite]).all()
    if fn == "asin":
        assert np.signbit(out[x == 0]).tolist() == np.signbit(x[x == 0]).tolist()  # asin(-0) = -0
