"""Histogram of integer values with tl.atomic_add, checked against np.bincount."""

import numpy as np

import tilec
import tilec.language as tl


@tilec.jit
def histogram_kernel(x_ptr, hist_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    pid = tl.program_id(0)
    offsets = pid * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    bins = tl.load(x_ptr + offsets, mask=mask, other=0)
    ones = tl.full((BLOCK_SIZE,), 1, dtype=tl.int32)
    tl.atomic_add(hist_ptr + bins, ones, mask=mask)


def histogram(x, num_bins, block=1024):
    hist = np.zeros(num_bins, dtype=np.int32)
    histogram_kernel[(tilec.cdiv(x.size, block),)](x, hist, x.size, BLOCK_SIZE=block)
    return hist


def main():
    rng = np.random.default_rng(0)
    num_bins, size = 64, 100003
    x = rng.integers(0, num_bins, size, dtype=np.int32)
    hist = histogram(x, num_bins)
    expected = np.bincount(x, minlength=num_bins).astype(np.int32)
    np.testing.assert_array_equal(hist, expected)
    print(f"histogram: max abs error {np.max(np.abs(hist - expected))} (OK)")


if __name__ == "__main__":
    main()
