"""The hot launch path on the interp backend: the cost of a launch like an earlier one.

    .venv/bin/python benchmarks/launch_path.py

Prints the median and minimum (of 25 runs of about 0.2 s each), in microseconds per launch, of:
- `launch`: a whole warm launch of a 16-element vector add on the interpreter;
- `launcher only`: the same launch with the prepared runner replaced by a no-op, so what is left is
  tilec's own work per launch (argument tokens, the key, the backend choice, the lookup).
"""

from __future__ import annotations

import os
import statistics
import tempfile
import timeit

import numpy as np

import tilec
import tilec.language as tl

REPEATS = 25


@tilec.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    total = tl.load(x_ptr + offsets, mask=mask) + tl.load(y_ptr + offsets, mask=mask)
    tl.store(out_ptr + offsets, total, mask=mask)


def per_launch_us(launch) -> str:
    """Median and minimum over REPEATS runs of about 0.2 s (the minimum is the steadier figure
    on a busy machine)."""
    timer = timeit.Timer(launch)
    number, _ = timer.autorange()
    times = [t / number * 1e6 for t in timer.repeat(number=number, repeat=REPEATS)]
    return f"median {statistics.median(times):8.2f} us, min {min(times):8.2f} us"


def main() -> None:
    os.environ.setdefault("TILEC_CACHE_DIR", tempfile.mkdtemp(prefix="tilec-bench-"))
    os.environ["TILEC_BACKEND"] = "interp"  # read on every launch, as without set_backend
    x, y, out = (np.ones(16, np.float32) for _ in range(3))
    launcher = add_kernel[(1,)]

    def launch() -> None:
        launcher(x, y, out, 16, BLOCK=16)

    launch()
    print(f"launch:        {per_launch_us(launch)}")
    launches = add_kernel._launch_info.launches
    for key, (compiled, _runner) in launches.items():
        launches[key] = (compiled, lambda grid, args: None)
    print(f"launcher only: {per_launch_us(launch)}")


if __name__ == "__main__":
    main()
