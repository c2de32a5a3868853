"""The sweep's memory-bound kernels under other register budgets (issue 23): each plan row's case
and config launched as the sweep launches it, by tilec at its default budget and at each `.maxnreg`
listed (the launch option `maxnreg`, Triton's), beside Triton's default launch, all timed turn
about by benchmarks/paired_timer.py.

    python benchmarks/register_budget_ab.py [--only WORDS] [--rounds 4]

Needs an NVIDIA GPU, torch and Triton. Without `.maxnreg` ptxas keeps a kernel's registers
under a budget of its own (56 for the layer norm backward's 128-thread column sum, 64 for the
layer norm forward at 256 threads), and under it issues fewer of a loop's loads before their
first use: at `.maxnreg 255` the column sum's loop issues its 8 loads back to back (93 registers)
where it issued 1 (sm_90a SASS). A row names a sweep case and config (benchmarks/sweep_profile's
`find_case` / `find_config`) and the budgets to try, each for every kernel of the case or for one
(`(255, "sweep_column_sum")`); `--only` keeps the rows whose case contains WORDS. Every launch is
checked against the case's reference first (`sweep.check`).
"""

from __future__ import annotations

import argparse
import statistics
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from paired_timer import paired_bench  # noqa: E402
from sweep import check, load_kernels, make_env  # noqa: E402
from sweep_profile import find_case, find_config  # noqa: E402

PLAN = (
    # case, config, tilec's budgets, Triton's budgets: (maxnreg, kernel or None for all)
    ("layernorm bwd float32 4096x4096", "w16",
     [(255, "sweep_column_sum"), (255, "sweep_layer_norm_bwd")], [(255, "sweep_column_sum")]),
    ("layernorm bwd bfloat16 8192x1024", "w8",
     [(255, "sweep_column_sum"), (255, "sweep_layer_norm_bwd")], []),
    ("layernorm bwd bfloat16 8192x4096", "w8",
     [(255, "sweep_column_sum"), (255, "sweep_layer_norm_bwd")], []),
    ("layernorm bwd bfloat16 8192x8192", "w16", [(255, "sweep_column_sum")], []),
    ("layernorm fwd bfloat16 8192x5120", "w8", [(80, None), (48, None), (40, None)],
     [(80, None), (48, None)]),
    ("layernorm fwd bfloat16 8192x8192", "w8", [(80, None), (48, None), (40, None)], [(48, None)]),
    ("layernorm fwd bfloat16 8192x8192", "w4", [(96, None), (80, None)], [(96, None)]),
    ("layernorm fwd bfloat16 8192x4096", "w4", [(48, None)], [(48, None)]),
    ("cross entropy bfloat16 4096x50257", "4096 w8", [(255, None)], []),
    ("cross entropy bfloat16 1024x256000", "4096 w8", [(255, None)], []),
    ("softmax float32 4096x32768", "w16", [(255, None)], []),
)  # fmt: skip


class Budgeted:
    """A side's kernels, the launches of `only` (every kernel where None) given `maxnreg`."""

    def __init__(self, kernels: dict, maxnreg: int, only: str | None):
        self.kernels, self.maxnreg, self.only = kernels, maxnreg, only

    def __getitem__(self, name: str):
        kernel = self.kernels[name]
        if self.only not in (None, name):
            return kernel
        maxnreg = self.maxnreg

        class Grid:
            def __getitem__(self, grid):
                return lambda *args, **meta: kernel[grid](*args, **meta, maxnreg=maxnreg)

        return Grid()


def label(side: str, budget: tuple | None) -> str:
    if budget is None:
        return f"{side} default"
    maxnreg, only = budget
    return f"{side} maxnreg {maxnreg}" + (f" ({only})" if only else "")


def row_launches(words: str, config_name: str, budgets: dict, kernels: dict) -> dict:
    """{label: a function that launches} for one plan row, each checked once."""
    import torch

    case = find_case(words)
    config = find_config(case, config_name)
    inputs = case.setup(make_env(False, 0))
    expected = case.expected(inputs)
    outputs = case.outputs(inputs)
    launches = {}
    for side, tried in budgets.items():
        for budget in [None, *tried]:
            chosen = kernels[side] if budget is None else Budgeted(kernels[side], *budget)
            check(case, chosen, inputs, expected, config, torch.cuda.synchronize)
            launches[label(side, budget)] = lambda chosen=chosen: case.launch(
                chosen, inputs, outputs, config
            )
    return launches


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--only", help="the rows whose case contains these words")
    parser.add_argument("--rounds", type=int, default=4)
    args = parser.parse_args(argv)
    rows = [row for row in PLAN if args.only is None or args.only in row[0]]
    if not rows:
        parser.error(f"--only {args.only!r} names no row; the rows: {[r[0] for r in PLAN]}")
    if args.rounds < 1:
        parser.error(f"--rounds must be 1 or more, got {args.rounds}")
    import torch

    kernels = {side: load_kernels(side) for side in ("tilec", "triton")}
    print(torch.cuda.get_device_name())
    for words, config, tilec_budgets, triton_budgets in rows:
        budgets = {"tilec": tilec_budgets, "triton": triton_budgets}
        launches = row_launches(words, config, budgets, kernels)
        times = {name: [] for name in launches}
        for _ in range(args.rounds):
            for name, us in paired_bench(launches, 25, 100).items():
                times[name].append(us)
        median = {name: statistics.median(t) for name, t in times.items()}
        print(f"\n{words} {config}\n\n| launch | us | Triton default / this | rounds (us) |")
        print("|---|---:|---:|---|")
        for name, us in median.items():
            rounds = " ".join(f"{t:.2f}" for t in times[name])
            print(f"| {name} | {us:.2f} | {median['triton default'] / us:.3f} | {rounds} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
