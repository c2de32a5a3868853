"""Whether the sweep's few-percent gaps on short memory-bound kernels follow the output buffer
rather than the compiler (issue 23): each side's kernel timed writing into each side's outputs.

    python benchmarks/memory_placement_ab.py [--rounds 6]

Needs an NVIDIA GPU, torch and Triton. The cases are the sweep's three lowest (layer norm forward
bf16 8192x1024 w4, rotary bf16 1x16384x8x128 at 8 heads w4, SwiGLU bf16 2048x5504 at 1024 w4),
at the config both sides picked. The sweep checks each side on outputs of its own (allocated
one after the other) and times each side on those. Here each side's kernel is checked on its
outputs, then timed on three output sets: its own, the other side's, and a third allocated
last; each with the side's own do_bench (as the sweep), in `--rounds` rounds, the order reversed
every other round. If tilec's kernel on Triton's outputs runs as fast as Triton's kernel there
(and Triton's on tilec's as slow as tilec's), the sweep's difference is where the outputs lie
in memory, not the code.
"""

from __future__ import annotations

import statistics
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
if str(HERE) not in sys.path:
    sys.path.insert(0, str(HERE))

from memory_source_ab import alternate_rounds, cases, start  # noqa: E402
from sweep import SIDES, check, launcher, load_kernels  # noqa: E402

BUFFERS = ("tilec's", "Triton's", "third")


def main() -> int:
    args, env, kernels, sync, warmup, rep = start(__doc__, 6, load_kernels)
    print("| case | outputs | tilec us | Triton us | Triton / tilec |")
    print("|---|---|---:|---:|---:|")
    for case, config, _ in cases():
        inputs = case.setup(env)
        expected = case.expected(inputs)
        buffers = [check(case, kernels[side], inputs, expected, config, sync)[0] for side in SIDES]
        buffers.append(case.outputs(inputs))
        launches = {
            (side, where): launcher(case, kernels[side], inputs, buffers[where], config)
            for side in SIDES
            for where in range(len(BUFFERS))
        }
        times = alternate_rounds(launches, args.rounds, warmup, rep)
        for where, name in enumerate(BUFFERS):
            ours = statistics.median(times["tilec", where])
            theirs = statistics.median(times["triton", where])
            print(f"| {case.family} {case.label} | {name} | {ours:.2f} | {theirs:.2f} | "
                  f"{theirs / ours:.3f} |")  # fmt: skip
        sys.stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
