"""Peak memory of the interp backend on a cross-entropy-style kernel against its arguments' size.

An 8192 x 32000 float32 row-wise reduction, one program per row with BLOCK 32768 as the
cross-entropy kernels have it (issue 22: such a kernel grew past 20 GB on the interp while its
arrays were about 2 GB). Two kernels: the forward (a row's max, exp-sum and the target's logit
in one block) and a Liger-style forward and backward (online softmax in a loop over the row,
then the gradient written over the logits in place). Each runs in a fresh child process, which
reports its peak RSS (`resource.getrusage(RUSAGE_SELF).ru_maxrss`: Python, NumPy, tilec and the
arguments included) and its RSS just before the launch; the goal is a peak under 3x the
arguments' size. A sample of rows is checked against NumPy.

    python benchmarks/interp_memory.py [--rows 8192] [--cols 32000] [--kernel forward|backward]

`--budget-mb N` sets the interpreter's chunk budget (`tilec_interp.chunking.MEMORY_BUDGET`).
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import time

import numpy as np

import tilec
import tilec.language as tl
import tilec_interp.chunking

ROW_BLOCK = 32768
SAMPLE = 64


@tilec.jit
def cross_entropy_forward(logits, targets, losses, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    x = tl.load(logits + row * n_cols + cols, mask=mask, other=-float("inf"))
    m = tl.max(x, axis=0)
    s = tl.sum(tl.exp(x - m), axis=0)
    picked = tl.load(logits + row * n_cols + tl.load(targets + row))
    tl.store(losses + row, tl.log(s) + m - picked)


@tilec.jit
def cross_entropy_backward(logits, targets, losses, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    logits += row * n_cols
    target = tl.load(targets + row)
    picked = tl.load(logits + target)
    m = float("-inf")
    d = 0.0
    for start in range(0, n_cols, BLOCK):
        cols = start + tl.arange(0, BLOCK)
        x = tl.load(logits + cols, mask=cols < n_cols, other=float("-inf"))
        m_new = tl.maximum(m, tl.max(x, axis=0))
        d = d * tl.exp(m - m_new) + tl.sum(tl.exp(x - m_new), axis=0)
        m = m_new
    for start in range(0, n_cols, BLOCK):
        cols = start + tl.arange(0, BLOCK)
        x = tl.load(logits + cols, mask=cols < n_cols, other=float("-inf"))
        grad = tl.exp(x - m) / d
        grad = tl.where(cols == target, grad - 1.0, grad)
        tl.store(logits + cols, grad, mask=cols < n_cols)
    tl.store(losses + row, m + tl.log(d) - picked)


KERNELS = {"forward": cross_entropy_forward, "backward": cross_entropy_backward}


def rss_now() -> int:
    with open("/proc/self/statm", encoding="ascii") as statm:
        return int(statm.read().split()[1]) * resource.getpagesize()


def child(rows: int, cols: int, kernel_name: str, budget_mb: int | None) -> dict:
    if budget_mb is not None:
        tilec_interp.chunking.MEMORY_BUDGET = budget_mb << 20
    kernel = KERNELS[kernel_name]
    rng = np.random.default_rng(0)
    logits = np.empty((rows, cols), np.float32)
    for start in range(0, rows, 256):  # filled in slices: no float64 temporary of the whole
        logits[start : start + 256] = rng.standard_normal((min(256, rows - start), cols))
    targets = rng.integers(0, cols, rows).astype(np.int32)
    losses = np.zeros(rows, np.float32)
    sample = rng.choice(rows, min(SAMPLE, rows), replace=False)
    expected_rows = logits[sample].astype(np.float64)
    kernel[(1,)](
        logits[:1].copy(), targets[:1], losses[:1].copy(), cols, BLOCK=ROW_BLOCK, backend="interp"
    )
    args_bytes = logits.nbytes + targets.nbytes + losses.nbytes
    before = rss_now()
    start = time.perf_counter()
    kernel[(rows,)](logits, targets, losses, cols, BLOCK=ROW_BLOCK, backend="interp")
    seconds = time.perf_counter() - start
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    m = expected_rows.max(axis=1, keepdims=True)
    lse = m[:, 0] + np.log(np.exp(expected_rows - m).sum(axis=1))
    loss = lse - expected_rows[np.arange(len(sample)), targets[sample]]
    error = float(np.abs(losses[sample] - loss).max())
    if kernel_name == "backward":
        grad = np.exp(expected_rows - lse[:, None])
        grad[np.arange(len(sample)), targets[sample]] -= 1.0
        error = max(error, float(np.abs(logits[sample] - grad).max()))
    return {
        "kernel": kernel_name,
        "rows": rows,
        "cols": cols,
        "args_mib": args_bytes / 2**20,
        "rss_before_launch_mib": before / 2**20,
        "peak_rss_mib": peak / 2**20,
        "peak_over_args": peak / args_bytes,
        "seconds": seconds,
        "max_abs_error": error,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=8192)
    parser.add_argument("--cols", type=int, default=32000)
    parser.add_argument("--kernel", choices=["forward", "backward", "both"], default="both")
    parser.add_argument("--budget-mb", type=int, default=None)
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    options = parser.parse_args()
    if options.child:
        print(json.dumps(child(options.rows, options.cols, options.kernel, options.budget_mb)))
        return 0
    names = ["forward", "backward"] if options.kernel == "both" else [options.kernel]
    print("| kernel | rows x cols | arguments | RSS before launch | peak RSS | peak / arguments "
          "| time | max abs error |")  # fmt: skip
    print("|---|---|---|---|---|---|---|---|")
    worst = 0.0
    for name in names:
        command = [sys.executable, __file__, "--child", "--kernel", name]
        command += ["--rows", str(options.rows), "--cols", str(options.cols)]
        if options.budget_mb is not None:
            command += ["--budget-mb", str(options.budget_mb)]
        done = subprocess.run(command, capture_output=True, text=True)
        if done.returncode != 0:
            print(f"| {name} | failed (exit {done.returncode}): {done.stderr.strip()[-300:]} |")
            return 1
        r = json.loads(done.stdout.strip().splitlines()[-1])
        worst = max(worst, r["peak_over_args"])
        print(
            f"| {name} | {r['rows']} x {r['cols']} | {r['args_mib']:.0f} MiB "
            f"| {r['rss_before_launch_mib']:.0f} MiB | {r['peak_rss_mib']:.0f} MiB "
            f"| {r['peak_over_args']:.2f}x | {r['seconds']:.1f} s | {r['max_abs_error']:.1e} |"
        )
    print(f"\nworst peak / arguments: {worst:.2f}x (goal: under 3x)")
    return 0 if worst < 3 else 1


if __name__ == "__main__":
    sys.exit(main())
