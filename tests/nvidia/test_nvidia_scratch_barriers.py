"""Consecutive reductions across warps on the GPU (`tilec.lowering.scratch`, issue 23): the
kernel's first one has no barrier before its shared-memory stores, and each next one in the same
block goes beside the last one without one, so that a warp still reading one reduction's partials
never finds them overwritten by the next. Thousands of programs of 4 to 16 warps, four reductions
a row in straight-line code and in a loop, against NumPy."""

from __future__ import annotations

import numpy as np
import pytest

import tilec
import tilec.language as tl


@tilec.jit
def _store_statistics(x_ptr, out_ptr, row, N, cols, inside):
    """out[row] = (sum, max, sum of squares around the mean, min) of row `row`: four
    reductions across the warps one after the other."""
    x = tl.load(x_ptr + row * N + cols, mask=inside, other=0.0)
    total = tl.sum(x, axis=0)
    top = tl.max(tl.where(inside, x, -float("inf")), axis=0)
    centred = tl.where(inside, x - total / N, 0.0)
    spread = tl.sum(centred * centred, axis=0)
    bottom = tl.min(tl.where(inside, x, float("inf")), axis=0)
    tl.store(out_ptr + 4 * row, total)
    tl.store(out_ptr + 4 * row + 1, top)
    tl.store(out_ptr + 4 * row + 2, spread)
    tl.store(out_ptr + 4 * row + 3, bottom)


@tilec.jit
def row_statistics(x_ptr, out_ptr, N, BLOCK: tl.constexpr):
    """The statistics of row `program_id`, straight-line."""
    cols = tl.arange(0, BLOCK)
    _store_statistics(x_ptr, out_ptr, tl.program_id(0), N, cols, cols < N)


@tilec.jit
def row_statistics_looped(x_ptr, out_ptr, rows, N, BLOCK: tl.constexpr):
    """The same for rows pid, pid + programs, ... in a loop."""
    cols = tl.arange(0, BLOCK)
    inside = cols < N
    for row in range(tl.program_id(0), rows, tl.num_programs(0)):
        _store_statistics(x_ptr, out_ptr, row, N, cols, inside)


def _expected(x: np.ndarray) -> np.ndarray:
    wide = x.astype(np.float64)
    spread = ((wide - wide.mean(axis=1, keepdims=True)) ** 2).sum(axis=1)
    return np.stack([wide.sum(axis=1), wide.max(axis=1), spread, wide.min(axis=1)], axis=1)


@pytest.mark.gpu
@pytest.mark.parametrize("looped", [False, True])
@pytest.mark.parametrize("n, warps", [(1000, 4), (4096, 8), (8192, 16)])
def test_consecutive_reductions_on_the_gpu(looped: bool, n: int, warps: int):
    rows = 4096
    x = np.random.default_rng(n + warps).standard_normal((rows, n)).astype(np.float32)
    out = np.full((rows, 4), np.nan, np.float32)
    block = 1 << (n - 1).bit_length()
    if looped:
        row_statistics_looped[(rows // 8,)](x, out, rows, n, BLOCK=block, num_warps=warps,
                                            backend="nvidia")  # fmt: skip
    else:
        row_statistics[(rows,)](x, out, n, BLOCK=block, num_warps=warps, backend="nvidia")
    np.testing.assert_allclose(out, _expected(x), rtol=1e-4, atol=1e-3)
