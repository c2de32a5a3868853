"""Whether a few-percent gap of the sweep's short memory-bound cases is the kernels' or the timing's
(issue 23): each side's kernel timed with both do_bench timers, in both orders, several rounds.

    python benchmarks/memory_timer_ab.py [--rounds 3]

The cases are benchmarks/sweep.py's, at the config both sides picked on the H200: layer norm
forward bf16 8192x1024 w4, rotary bf16 1x16384x8x128 (8 heads w4), SwiGLU bf16 2048x5504 (1024
w4). Each kernel is checked against torch first (the sweep's check), then every round times
tilec's and Triton's launch with tilec.testing's do_bench (its L2 flush a driver memset) and
Triton's (torch's `zero_`), tilec first in even rounds and Triton first in odd ones. The table
gives each median over the rounds and tilec/Triton speed under each timer: a ratio that moves
with the timer, or with the order, is the measurement's; one that holds under both is the
kernels'.
"""

from __future__ import annotations

import argparse
import statistics
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
if str(HERE) not in sys.path:
    sys.path.insert(0, str(HERE))

from gpu_vs_triton import bench  # noqa: E402
from sweep import FINAL, SIDES, check, launcher, load_kernels, make_env, torch_sync  # noqa: E402
from sweep_memory_cases import rotary, row_case, swiglu  # noqa: E402

TIMERS = {"tilec.testing": True, "triton.testing": False}
"""Timer name -> `bench`'s tilec_side flag."""


def cases() -> list[tuple]:
    """(case, config) pairs: the sweep's, at the config both sides picked."""
    return [
        (row_case("layer_norm_fwd", 8192, 1024), (4,)),
        (rotary(1, 16384, 8, 128), (8, 4)),
        (swiglu(2048, 5504), (1024, 4)),
    ]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    env = make_env(False, 23)
    kernels = {side: load_kernels(side) for side in SIDES}
    sync = torch_sync(env.device)
    warmup, rep = FINAL[False]
    print(
        "| case | timer | tilec us | Triton us | tilec/Triton speed | tilec first / Triton first |"
    )
    print("|---|---|---:|---:|---:|---|")
    for case, config in cases():
        inputs = case.setup(env)
        expected = case.expected(inputs)
        launches = {}
        for side in SIDES:
            outputs, _ = check(case, kernels[side], inputs, expected, config, sync)
            launches[side] = launcher(case, kernels[side], inputs, outputs, config)
        times = {(side, timer): [] for side in SIDES for timer in TIMERS}
        ratios: dict[tuple[str, int], list[float]] = {}
        """(timer, 0: tilec timed first, 1: Triton first) -> the rounds' speeds"""
        for round_ in range(args.rounds):
            order = SIDES if round_ % 2 == 0 else SIDES[::-1]
            for timer, own in TIMERS.items():
                for side in order:
                    us = bench(launches[side], False, own, warmup, rep)
                    times[side, timer].append(us)
                ratio = times["triton", timer][-1] / times["tilec", timer][-1]
                ratios.setdefault((timer, round_ % 2), []).append(ratio)
        for timer in TIMERS:
            ours = statistics.median(times["tilec", timer])
            theirs = statistics.median(times["triton", timer])
            orders = " / ".join(
                f"{statistics.median(ratios.get((timer, k), [float('nan')])):.3f}" for k in (0, 1)
            )
            print(f"| {case.family} {case.label} | {timer} | {ours:.1f} | {theirs:.1f} | "
                  f"{theirs / ours:.3f} | {orders} |")  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
