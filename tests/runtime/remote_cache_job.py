"""A job of the remote-cache tests (tests/runtime/test_remote_cache.py), one "machine" of a
cluster: `python remote_cache_job.py [BLOCK ...]` launches a vector add for each BLOCK (each a
kernel of its own) and an autotuned scale (two configs) on the interp backend, checks every
result and prints `OK` and the chosen config."""

from __future__ import annotations

import sys

import numpy as np

import tilec
import tilec.language as tl


@tilec.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    x = tl.load(x_ptr + offsets, mask=mask)
    tl.store(out_ptr + offsets, x + tl.load(y_ptr + offsets, mask=mask), mask=mask)


@tilec.autotune(
    configs=[tilec.Config({"BLOCK": 32}), tilec.Config({"BLOCK": 64})], key=["n"], warmup=1, rep=2
)
@tilec.jit
def scale_kernel(x_ptr, out_ptr, n, factor, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    tl.store(out_ptr + offsets, tl.load(x_ptr + offsets, mask=mask) * factor, mask=mask)


def add(block: int, n: int = 300) -> None:
    rng = np.random.default_rng(block)
    x, y = rng.standard_normal(n, dtype=np.float32), rng.standard_normal(n, dtype=np.float32)
    out = np.zeros_like(x)
    add_kernel[(tilec.cdiv(n, block),)](x, y, out, n, BLOCK=block, backend="interp")
    np.testing.assert_array_equal(out, x + y)


def scale(n: int = 200) -> str:
    x = np.arange(n, dtype=np.float32)
    out = np.zeros_like(x)
    grid = lambda meta: (tilec.cdiv(n, meta["BLOCK"]),)  # noqa: E731
    scale_kernel[grid](x, out, n, 3.0, backend="interp")
    np.testing.assert_array_equal(out, x * 3)
    return str(scale_kernel.best_config)


if __name__ == "__main__":
    for block in [int(b) for b in sys.argv[1:]] or [128]:
        add(block)
    print("OK", scale())
