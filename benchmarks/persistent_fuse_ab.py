"""Whether fusing the persistent matmul's tile and K loops pays (issue 23): an interleaved A/B.

    python benchmarks/persistent_fuse_ab.py [--sizes 4096,8192] [--rounds 5]
        [--config 128,256,64,8,3] [--sides tilec,triton]

Needs an NVIDIA GPU, torch and Triton. benchmarks/persistent_vs_triton.py's `persistent`
kernel with `flatten=True` (the tile loop and the K loop fused into one, pipelined across tiles)
and with `flatten=False` (`persistent-nest`: each tile's K loop pipelined alone), on each side,
one config. One `persistent_vs_triton` run times each variant once, and the H200's run-to-run
spread (Triton's fused kernel at 8192^3: 607 then 548 TFLOP/s in two runs of one session) is
larger than the difference asked about; here the four kernels are timed in turn over `--rounds`
rounds, each with `triton.testing.do_bench` (median of its repetitions), and each kernel's
median, min and max over the rounds and the fused/nest ratio of each side are printed.
Every kernel is checked against torch first.
"""

from __future__ import annotations

import argparse
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from persistent_vs_triton import launcher, load

VARIANTS = ("persistent", "persistent-nest")


def measure(sides: dict, size: int, config: tuple, rounds: int, timer, device: str = "cuda",
            num_sms: int = 132) -> dict:  # fmt: skip
    """{(side, variant): [TFLOP/s a round]} for `size`^3 (fp16, B stored N x K)."""
    import torch

    gen = torch.Generator(device=device).manual_seed(size)
    a = torch.randn(size, size, device=device, generator=gen).half()
    b = torch.randn(size, size, device=device, generator=gen).half()
    ref = a.float() @ b.float().T
    runs = {}
    for side, ns in sides.items():
        for variant in VARIANTS:
            c = torch.full((size, size), float("nan"), device=device, dtype=torch.float16)
            run = launcher(ns, variant, a, b, c, config, num_sms)
            run()
            error = float((c.float() - ref).norm() / ref.norm())
            if not error < 1e-2:
                raise AssertionError(f"{side} {variant}: relative error {error:.2e}")
            runs[side, variant] = run
    rates: dict = {key: [] for key in runs}
    for _ in range(rounds):
        for key, run in runs.items():
            rates[key].append(2 * size**3 / timer(run) / 1e9)
    return rates


def report(size: int, rates: dict) -> list[str]:
    lines = []
    for (side, variant), values in rates.items():
        lines.append(f"| {size}^3 | {side} | {variant} | {statistics.median(values):.1f} | "
                     f"{min(values):.1f} | {max(values):.1f} |")  # fmt: skip
    for side in dict.fromkeys(side for side, _ in rates):
        fused = statistics.median(rates[side, "persistent"])
        nest = statistics.median(rates[side, "persistent-nest"])
        lines.append(f"| {size}^3 | {side} | fused / nest | {fused / nest:.3f} | | |")
    return lines


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="4096,8192", help="M = N = K values")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--config", default="128,256,64,8,3", help="BM,BN,BK,warps,stages")
    parser.add_argument("--sides", default="tilec,triton")
    args = parser.parse_args(argv)
    import torch
    import triton.testing

    config = tuple(int(v) for v in args.config.split(","))
    sides = {side: load(side) for side in args.sides.split(",")}
    num_sms = torch.cuda.get_device_properties("cuda").multi_processor_count
    timer = lambda run: triton.testing.do_bench(run, warmup=25, rep=100)  # noqa: E731
    print(f"device: {torch.cuda.get_device_name()}, {num_sms} SMs; config "
          "{}x{}x{} w{} s{}; {} rounds".format(*config, args.rounds))  # fmt: skip
    print("| size | side | variant | median TFLOP/s | min | max |")
    print("|---|---|---|---:|---:|---:|")
    for size in (int(s) for s in args.sizes.split(",")):
        rates = measure(sides, size, config, args.rounds, timer, num_sms=num_sms)
        print("\n".join(report(size, rates)), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
