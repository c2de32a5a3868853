"""One sweep case, one side, one config, launched a few times: the program a profiler watches
(issue 23).

    python benchmarks/sweep_profile.py SIDE CASE CONFIG [--launches N] [--seed S]
    ncu --clock-control none -k regex:sweep_ --launch-skip 2 --launch-count 1 \\
        python benchmarks/sweep_profile.py tilec "float16 3072x3072x3072" "128x128x64 w8 s3"

Needs an NVIDIA GPU, torch and (for SIDE triton) Triton. SIDE is `tilec` or `triton`; CASE is a
part of one sweep case's "family label" (`benchmarks/sweep.py`'s rows, e.g. "attention fwd fp16
2x16x8192x128 non-causal"), and it must name exactly one; CONFIG is the config as the sweep
prints it (`128x64 w8 s3`). The config is launched and checked against torch once (the launch
that compiles), then launched `--launches` times more (default 3), each followed by a synchronize,
so that a profiler's `--launch-skip 2 --launch-count 1` sees a warm launch of the binary that the
sweep times.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from sweep import FAMILIES, all_cases, check, load_kernels, make_env  # noqa: E402


def find_case(words: str):
    """The one sweep case whose "family label" contains `words`, or a usage error naming the
    candidates."""
    cases = all_cases(list(FAMILIES), quick=False, smoke=False)
    found = [c for c in cases if words in f"{c.family} {c.label}"]
    if len(found) != 1:
        names = "\n  ".join(f"{c.family} {c.label}" for c in (found or cases))
        what = "no case" if not found else f"{len(found)} cases"
        raise SystemExit(
            f"{what} named by {words!r}; {'these' if found else 'the cases'}:\n  {names}"
        )
    return found[0]


def find_config(case, name: str) -> tuple:
    by_name = {case.describe(c): c for c in case.configs}
    if name not in by_name:
        raise SystemExit(f"{case.label}: no config {name!r}; its configs: {', '.join(by_name)}")
    return by_name[name]


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("side", choices=("tilec", "triton"))
    parser.add_argument("case")
    parser.add_argument("config")
    parser.add_argument("--launches", type=int, default=3)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    if args.launches < 0:
        parser.error(f"--launches must be 0 or more, got {args.launches}")
    case = find_case(args.case)
    config = find_config(case, args.config)
    env = make_env(False, args.seed)
    import torch

    kernels = load_kernels(args.side)
    inputs = case.setup(env)
    outputs, error = check(case, kernels, inputs, case.expected(inputs), config,
                           torch.cuda.synchronize)  # fmt: skip
    for _ in range(args.launches):
        case.launch(kernels, inputs, outputs, config)
        torch.cuda.synchronize()
    print(f"{args.side} {case.family} {case.label} {args.config}: relative error {error:.2e}, "
          f"{args.launches} launches")  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
