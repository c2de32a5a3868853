"""`tile.scan` lowering: cumsum (forward and reverse) over lanes, warps and repetitions, and a
non-commutative combiner (a linear recurrence) along a 2-D axis, exact against the interpreter
(integer arithmetic, so any associative grouping gives the same bits)."""

from __future__ import annotations

import numpy as np
import pytest
from gir_check import KINDS, compare_with_interp, ptx_of, runner

RNG = np.random.default_rng(1)


def test_scans_use_shuffle_up_and_shared_memory():
    ptx = ptx_of("scan-1d.gir")
    assert "shfl.sync.up.b32" in ptx
    assert "shfl.sync.idx.b32" in ptx  # the reverse scan and the warp totals
    assert "bar.sync" in ptx and "st.shared" in ptx


@pytest.mark.parametrize("kind", KINDS)
def test_1d_cumsum_forward_and_reverse(kind: str):
    x = RNG.integers(-1000, 1000, 1024).astype(np.int32)
    fwd, rev = np.zeros(1024, np.int32), np.zeros(1024, np.int32)
    got = compare_with_interp("scan-1d.gir", [x, fwd, rev], run=runner(kind))
    np.testing.assert_array_equal(got[1], np.cumsum(x))
    np.testing.assert_array_equal(got[2], np.cumsum(x[::-1])[::-1])


@pytest.mark.parametrize("kind", KINDS)
def test_2d_linear_recurrence_forward_and_reverse(kind: str):
    a = RNG.integers(-3, 4, 2048).astype(np.int32)
    b = RNG.integers(-1000, 1000, 2048).astype(np.int32)
    fwd, rev = np.zeros(2048, np.int32), np.zeros(2048, np.int32)
    got = compare_with_interp("scan-2d.gir", [a, b, fwd, rev], run=runner(kind))
    a2, b2 = a.reshape(32, 64).astype(np.int64), b.reshape(32, 64).astype(np.int64)
    h = np.zeros(64, np.int64)
    expected = np.zeros((32, 64), np.int64)
    for i in range(32):
        h = h * a2[i] + b2[i] if i else b2[0]
        expected[i] = h
    np.testing.assert_array_equal(got[2].reshape(32, 64), expected.astype(np.int32))


def test_2d_scan_ptx_assembles():
    ptx = ptx_of("scan-2d.gir")
    assert "shfl.sync.up.b32" in ptx and "bar.sync" in ptx


def test_one_warp_scan_needs_no_shared_memory():
    x = RNG.standard_normal(128).astype(np.float32)
    got = compare_with_interp("scan-warp.gir", [x, np.zeros(128, np.float32)], rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(got[1], np.cumsum(x.astype(np.float64)), rtol=1e-5, atol=1e-5)
    ptx = ptx_of("scan-warp.gir")
    assert "bar.sync" not in ptx and "shfl.sync.up.b32" in ptx
