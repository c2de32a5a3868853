"""The autotuned matmul's first call, tilec against Triton on the same source (issue 24).

    python benchmarks/autotune_first_call.py [--size 4096] [--repeat 3] [--triton-python PYTHON]
        [--json FILE]

What a user waits for the first time an `@autotune` kernel runs in a new process with empty
caches: every config compiled, each timed on the GPU, the best one launched. The kernel is
`matmul_vs_triton.py`'s (Triton's tutorial 03 matmul), written once and exec'd under each
compiler (`gpu_vs_triton.load_kernels`), under `autotune(configs, key=["M", "N", "K"])` with
the eight CUDA configs of Triton 3.6's tutorial 03 (fp16, f32 accumulation), on torch fp16
tensors of `--size`^3. Each side's own autotuner decides how to compile (tilec: in worker
processes, in parallel; Triton 3.6: one config after another as it benchmarks them) and times
with its own `do_bench`.

Rows, each side in fresh processes with fresh caches (`compile_time.Runner`: bytecode warm,
best and median of `--repeat`): the first call (wall, from the call to the synchronized end:
compiles, benchmarks, the launch); the second call (the tuned config, from memory); and, in a
new process with the caches the first one left, the first call again (compiled kernels and
tuning results from disk). The config each side chose is printed; the result of each call is
checked against torch.matmul.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from compile_time import PACKAGE, SIDES, Runner  # noqa: E402

CONFIGS = [  # Triton 3.6 tutorial 03's get_cuda_autotune_config(): BLOCK_M, N, K, warps, stages
    (128, 256, 64, 8, 3),
    (64, 256, 32, 4, 4),
    (128, 128, 32, 4, 4),
    (128, 64, 32, 4, 4),
    (64, 128, 32, 4, 4),
    (128, 32, 32, 4, 4),
    (64, 32, 32, 2, 5),
    (32, 64, 32, 2, 5),
]


def first_calls(side: str, size: int) -> dict:
    """In this process: import, then the autotuned matmul's first and second calls."""
    import torch

    if not torch.cuda.is_available():
        return dict(skip="no GPU")
    a = torch.randn((size, size), device="cuda", dtype=torch.float16)
    b = torch.randn((size, size), device="cuda", dtype=torch.float16)
    c = torch.empty((size, size), device="cuda", dtype=torch.float16)
    expected = torch.matmul(a, b)
    torch.cuda.synchronize()
    front = __import__(PACKAGE[side])
    from gpu_vs_triton import load_kernels

    configs = [
        front.Config(
            {"BLOCK_SIZE_M": m, "BLOCK_SIZE_N": n, "BLOCK_SIZE_K": k, "GROUP_SIZE_M": 8},
            num_warps=w,
            num_stages=s,
        )
        for m, n, k, w, s in CONFIGS
    ]
    kernel = front.autotune(configs=configs, key=["M", "N", "K"])(
        load_kernels(side)["matmul_kernel"]
    )

    def grid(meta):
        return (front.cdiv(size, meta["BLOCK_SIZE_M"]) * front.cdiv(size, meta["BLOCK_SIZE_N"]),)

    times = []
    for _ in range(2):
        c.zero_()
        torch.cuda.synchronize()
        start = time.perf_counter()
        kernel[grid](a, b, c, size, size, size, a.stride(0), a.stride(1), b.stride(0),
                     b.stride(1), c.stride(0), c.stride(1))  # fmt: skip
        torch.cuda.synchronize()
        times.append(time.perf_counter() - start)
        torch.testing.assert_close(c, expected, atol=0.125, rtol=0.01)
    chosen = kernel.best_config
    described = (f"{chosen.kwargs['BLOCK_SIZE_M']}x{chosen.kwargs['BLOCK_SIZE_N']}x"
                 f"{chosen.kwargs['BLOCK_SIZE_K']} w{chosen.num_warps} s{chosen.num_stages}")  # fmt: skip
    return dict(first=times[0], second=times[1], chosen=described)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    parser.add_argument("--size", type=int, default=4096)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--triton-python", default=sys.executable)
    parser.add_argument("--json")
    args = parser.parse_args()
    if args.worker:
        spec = json.loads(args.worker)
        print(json.dumps(first_calls(spec["side"], spec["size"])))
        return 0
    pythons = {"tilec": sys.executable, "triton": args.triton_python}
    with tempfile.TemporaryDirectory(prefix="tilec-autotune-first-") as folder:
        runner = Runner(pythons, Path(folder))
        runner.script = Path(__file__).resolve()
        spec = lambda side: dict(side=side, size=args.size)  # noqa: E731
        for side in SIDES:  # fill the bytecode caches: not timed
            runner.run(side, spec(side))
        results: dict[str, dict] = {
            side: {"first": [], "second": [], "again": []} for side in SIDES
        }
        chosen: dict[str, set] = {side: set() for side in SIDES}
        for _ in range(args.repeat):
            for side in SIDES:
                caches = runner.fresh_caches()
                run = runner.run(side, spec(side), caches)
                again = runner.run(side, spec(side), caches)  # the caches the first one left
                for name, got in (("first", run), ("again", again)):
                    got = got or {"error": "no result"}
                    if "error" in got or "skip" in got:
                        print(f"{side}: {got}")
                        continue
                    if name == "first":
                        results[side]["first"].append(1000 * got["first"])
                        results[side]["second"].append(1000 * got["second"])
                        chosen[side].add(got["chosen"])
                    else:
                        results[side]["again"].append(1000 * got["first"])
    print(f"autotuned fp16 matmul {args.size}^3, {len(CONFIGS)} configs (Triton 3.6 tutorial 03's)")
    print("| row | tilec best / median | Triton best / median | tilec/Triton (medians) |")
    print("|---|---:|---:|---:|")
    labels = {
        "first": "first call, new process, empty caches (ms)",
        "second": "second call, same process (ms)",
        "again": "first call, new process, the caches of an earlier one (ms)",
    }
    for row, label in labels.items():
        cells, medians = [], []
        for side in SIDES:
            values = results[side][row]
            if not values:
                cells.append("-")
                medians.append(float("nan"))
                continue
            medians.append(statistics.median(values))
            cells.append(f"{min(values):.0f} / {medians[-1]:.0f}")
        ratio = medians[0] / medians[1] if medians[1] else float("nan")
        print(f"| {label} | {cells[0]} | {cells[1]} | {ratio:.2f} |")
    for side in SIDES:
        print(f"{side} chose: {', '.join(sorted(chosen[side])) or '-'}")
    if args.json:
        Path(args.json).write_text(json.dumps(dict(results=results, chosen={
            s: sorted(v) for s, v in chosen.items()}), indent=1))  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
