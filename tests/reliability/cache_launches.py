"""The launch the cache tests compile and check: `add_kernel` on the interpreter, and the same
with the memory cache emptied, so that the disk cache is read."""

from __future__ import annotations

import numpy as np
from frontend_kernels import add_kernel

import tilec
from tilec.runtime import cache


def launch(n: int = 1000) -> None:
    rng = np.random.default_rng(0)
    x, y = rng.standard_normal(n, dtype=np.float32), rng.standard_normal(n, dtype=np.float32)
    out = np.empty_like(x)
    add_kernel[(tilec.cdiv(n, 256),)](x, y, out, n, BLOCK_SIZE=256, backend="interp")
    np.testing.assert_array_equal(out, x + y)


def relaunch() -> None:
    cache.clear_memory()
    launch()
