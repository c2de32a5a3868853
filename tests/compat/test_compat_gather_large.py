"""`tl.gather` whose selection is larger than the block limit (Triton's test_gather with a
[128, 64] source and a [256, 64] index: 2M elements through a one-hot selection) takes the
source axis in chunks, each within the per-thread bounds, and gives torch.gather's result."""

import numpy as np
import pytest
from compat_cause_kernels import gather_kernel
from compat_helpers import run_interp

from tilec.frontend import permutations

SIGNATURE = {"src_ptr": "*fp32", "idx_ptr": "*i64", "out_ptr": "*fp32"}


def gather(src_shape, idx_shape, axis, rng, low=0, high=None):
    src = rng.standard_normal(src_shape).astype(np.float32)
    high = src_shape[axis] if high is None else high
    idx = rng.integers(low, high, idx_shape).astype(np.int64)
    out = np.full(idx_shape, np.nan, np.float32)
    run_interp(gather_kernel, SIGNATURE, [src, idx, out], AXIS=axis, S0=src_shape[0],
               S1=src_shape[1], I0=idx_shape[0], I1=idx_shape[1])  # fmt: skip
    return src, idx, out


@pytest.mark.parametrize(
    ("src_shape", "idx_shape", "axis"),
    [((128, 64), (256, 64), 0), ((128, 64), (128, 128), 1), ((4, 4), (8, 4), 0)],
)
def test_large_gathers_as_torch_gather(src_shape, idx_shape, axis, rng):
    src, idx, out = gather(src_shape, idx_shape, axis, rng)
    np.testing.assert_array_equal(out, np.take_along_axis(src, idx, axis))


def test_chunks_of_a_small_gather_and_indices_outside(rng, monkeypatch):
    """With small chunks forced, every chunk's part adds up to the gather; an index outside
    the axis gives 0, as without chunks."""
    monkeypatch.setattr(permutations, "SELECTION_CHUNK", 64)
    src, idx, out = gather((32, 8), (16, 8), 0, rng, low=-4, high=36)
    inside = (idx >= 0) & (idx < 32)
    expected = np.where(inside, np.take_along_axis(src, np.clip(idx, 0, 31), 0), 0)
    np.testing.assert_array_equal(out, expected)
