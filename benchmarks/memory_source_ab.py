"""Whether a source change to the sweep's short memory-bound kernels pays, on each side (issue 23):
loads moved earlier, or given eviction and cache hints. An interleaved A/B.

    python benchmarks/memory_source_ab.py [--rounds 5]

Needs an NVIDIA GPU, torch and Triton. The cases are the three the sweep had lowest (layer norm
forward bf16 8192x1024 w4, rotary bf16 1x16384x8x128 at 8 heads w4, SwiGLU bf16 2048x5504 at 1024
w4), each at the config both sides picked. Per case, the sweep's kernel (`base`) and the variants of
benchmarks/memory_variants.py, on tilec and on Triton: each checked against torch first (the
sweep's check), then timed in `--rounds` rounds with each side's own do_bench (as the sweep), the
order of the kernels reversed every other round. The table gives each kernel's median time and its
speed against Triton's `base` (the sweep's ratio, for tilec's `base`): a variant that speeds up
tilec's side shows what a compiler change issuing the same code would gain.
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
from sweep import (  # noqa: E402
    FINAL,
    OWN_TIMER,
    SIDES,
    check,
    launcher,
    load_kernels,
    make_env,
    torch_sync,
)
from sweep_memory_cases import rotary, row_case, swiglu  # noqa: E402

VARIANTS = {
    "sweep_layer_norm_fwd": ("layer_norm_fwd_wb_first", "layer_norm_fwd_x_evict_first"),
    "sweep_rotary": ("rotary_trig_first", "rotary_evict_first"),
    "sweep_swiglu": ("swiglu_evict_first", "swiglu_store_cs"),
}
"""The sweep kernel -> the variants that replace it."""


def cases() -> list[tuple]:
    """(case, config, sweep kernel name)."""
    return [
        (row_case("layer_norm_fwd", 8192, 1024), (4,), "sweep_layer_norm_fwd"),
        (rotary(1, 16384, 8, 128), (8, 4), "sweep_rotary"),
        (swiglu(2048, 5504), (1024, 4), "sweep_swiglu"),
    ]


def load(side: str) -> dict:
    namespace = load_kernels(side)
    path = HERE / "memory_variants.py"
    exec(compile(path.read_text(), str(path), "exec"), namespace)
    return namespace


def start(doc: str, rounds: int, loader=None) -> tuple:
    """(args, env, kernels by side, sync, warm-up ms, repetition ms) of an A/B script: its
    `--rounds`, the sweep's environment and final timing, the kernels `loader` gives a side
    (default: the sweep's and memory_variants.py's)."""
    parser = argparse.ArgumentParser(description=doc.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=rounds)
    args = parser.parse_args()
    env = make_env(False, 23)
    kernels = {side: (loader or load)(side) for side in SIDES}
    return (args, env, kernels, torch_sync(env.device), *FINAL[False])


def alternate_rounds(launches: dict, rounds: int, warmup: float, rep: float) -> dict:
    """{key: microseconds of each round} of `launches` (keyed by (side, ...)): each timed alone
    with its side's do_bench, in `rounds` rounds, the order reversed every other round."""
    times = {key: [] for key in launches}
    for round_ in range(rounds):
        for key in launches if round_ % 2 == 0 else list(launches)[::-1]:
            times[key].append(bench(launches[key], False, OWN_TIMER[key[0]], warmup, rep))
    return times


def main() -> int:
    args, env, kernels, sync, warmup, rep = start(__doc__, 5)
    print("| case | kernel | tilec us | Triton us | tilec / Triton base | Triton / Triton base |")
    print("|---|---|---:|---:|---:|---:|")
    for case, config, name in cases():
        inputs = case.setup(env)
        expected = case.expected(inputs)
        launches = {}
        for variant in ("base", *VARIANTS[name]):
            for side in SIDES:
                namespace = dict(kernels[side])
                if variant != "base":
                    namespace[name] = namespace[variant]
                outputs, _ = check(case, namespace, inputs, expected, config, sync)
                launches[side, variant] = launcher(case, namespace, inputs, outputs, config)
        times = alternate_rounds(launches, args.rounds, warmup, rep)
        median = {key: statistics.median(value) for key, value in times.items()}
        base = median["triton", "base"]
        for variant in ("base", *VARIANTS[name]):
            ours, theirs = median["tilec", variant], median["triton", variant]
            print(f"| {case.family} {case.label} | {variant} | {ours:.2f} | {theirs:.2f} | "
                  f"{base / ours:.3f} | {base / theirs:.3f} |")  # fmt: skip
        sys.stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
