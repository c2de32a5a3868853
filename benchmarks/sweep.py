"""A TritonBench-style sweep: tilec against Triton on the same kernel source, each side's best
config of the same candidates, over the operators of issue 23.

    python benchmarks/sweep.py [--quick] [--only FAMILIES] [--json FILE] [--jobs N]
                               [--time-limit SECONDS] [--seed N] [--timer paired|own|triton]
    python benchmarks/sweep.py --interp-smoke [--only FAMILIES] [--json FILE]

Families: matmul (fp16, bf16, fp8 e4m3/e5m2, tf32; square, ragged, skinny, short and long K,
batched, a bias + ReLU epilogue), attention fwd and bwd (Triton's tutorial 06 algorithm),
layernorm fwd and bwd, softmax, cross entropy, rmsnorm, rotary, swiglu. `--only` takes their
names with `_` for spaces (`attention` and `layernorm` name both directions).

The kernels (sweep_kernels.py, sweep_attention.py) are executed twice, with tilec's and with
Triton's `jit` and `tl`, so both compile one source; the cases are in sweep_cases.py and
sweep_memory_cases.py. For each case and side, every candidate config is launched on fresh random
inputs with poisoned outputs and checked against torch (relative error of the norm); the configs
that pass are timed briefly, both sides' in one loop of the paired timer, and the best of each
side is timed again, longer. Every timed launch of a case, candidate or final, writes one set of
outputs, as the outputs' placement alone moves a memory-bound kernel by up to 5%
(paired_timer.py); until the eleventh session each candidate wrote the outputs of its own check,
and a side could choose, among configs within 1% of each other, one that its final rounds then
timed 1.7% slower (the rotary d128 case, tenth session's tree). The final timing is 4 rounds of
the paired timer (paired_timer.py: the two sides turn about in one loop, one L2 flush and one
timer for both), each side's time the median of its rounds. speed = Triton time / tilec time;
per family the geometric mean and the worst case. A config or case that fails (compile error, wrong result)
is reported with its error's first line; the sweep goes on. Configs are written short: the
BLOCK sizes joined by x, then w<num_warps> s<num_stages> (a matmul's 128x256x64 w8 s3).

Compiling dominates a fresh run, so `--jobs N` worker processes first launch every case's
configs once on both sides (filling both disk caches) before the main process checks and times
(nothing is timed while they run). The header shows both do_bench timers on one torch matmul
and on one memory-bound copy, and the paired timer on that copy against itself (two equal
launches: the ratio a fair timer gives for equal code). `--timer own` times each side with its
own do_bench (tilec.testing's for tilec) and `--timer triton` both with Triton's, side after
side, the order alternating round by round. `--time-limit` lists the cases not begun in time as
skipped, so that a run cut short still prints its tables; `--json` is rewritten after every case.
`--interp-smoke` runs tiny shapes on tilec's interp backend with CPU tensors: correctness only,
no GPU, no Triton (tests/testing/test_sweep_smoke.py runs it).
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
if str(HERE) not in sys.path:
    sys.path.insert(0, str(HERE))

from gpu_vs_triton import bench, rel_error  # noqa: E402
from paired_timer import paired_bench  # noqa: E402

KERNEL_FILES = ("sweep_kernels.py", "sweep_attention.py")
SIDES = ("tilec", "triton")
FAMILIES = (
    "matmul",
    "attention fwd",
    "attention bwd",
    "layernorm fwd",
    "layernorm bwd",
    "softmax",
    "cross entropy",
    "rmsnorm",
    "rotary",
    "swiglu",
)
SELECT = {True: (2, 10), False: (5, 25)}
"""do_bench warm-up and repetition milliseconds for choosing among configs (by --quick)."""
FINAL = {True: (10, 40), False: (20, 40)}
"""... and for timing each side's chosen config, a round."""
ROUNDS = {True: 1, False: 4}
"""Rounds of the final timing (by --quick), the sides' order alternating: a side timed second
after the other read its inputs ran 2-4% faster on the H200 (benchmarks/memory_timer_ab.py);
each side's time is the median of its rounds."""
OWN_TIMER = {"tilec": True, "triton": False}
"""Whether a side is timed with tilec.testing's do_bench (else Triton's): `--timer own`;
`--timer triton` and `paired` time both with Triton's (`paired` only to choose configs)."""
TIMER = {"paired": True}
"""Whether the final rounds time the two sides turn about in one loop (`--timer paired`)."""
WARM_LIMIT_S = 240
"""The longest the workers that compile ahead may take."""


def load_kernels(flavour: str) -> dict:
    """The sweep's kernels executed with tilec's or Triton's `jit` and `tl`."""
    if flavour == "tilec":
        import tilec as front
        import tilec.language as tl
    else:
        import triton as front
        import triton.language as tl
    # a module name: Triton reads __module__ of the @jit functions that a kernel calls
    namespace = {"jit": front.jit, "tl": tl, "__name__": f"sweep_kernels_{flavour}"}
    for name in KERNEL_FILES:
        path = HERE / name  # compiled from the file itself: both JITs read the source back
        exec(compile(path.read_text(), str(path), "exec"), namespace)
    return namespace


class OnBackend:
    """A kernel whose launches name a tilec backend (`backend=`), for the interp smoke run."""

    def __init__(self, kernel, backend: str):
        self.kernel, self.backend = kernel, backend

    def __getitem__(self, grid):
        launch = self.kernel[grid]
        return lambda *args, **meta: launch(*args, backend=self.backend, **meta)


def select_families(only: str | None) -> list[str]:
    if not only:
        return list(FAMILIES)
    chosen = []
    for word in only.split(","):
        word = word.strip().replace("_", " ").replace("-", " ")
        found = [f for f in FAMILIES if word in (f, f.split()[0])]
        if not found:
            names = ", ".join(f.replace(" ", "_") for f in FAMILIES)
            raise SystemExit(f"--only: unknown family {word!r}; the families: {names}")
        chosen += [f for f in found if f not in chosen]
    return chosen


def all_cases(families: list[str], quick: bool, smoke: bool) -> list:
    from sweep_cases import attention_cases, matmul_cases, smoke_cases
    from sweep_memory_cases import memory_cases, memory_smoke_cases

    if smoke:
        cases = smoke_cases() + memory_smoke_cases()
    else:
        cases = matmul_cases(quick) + attention_cases(quick, False) + attention_cases(quick, True)
        cases += memory_cases(quick)
    return [c for c in cases if c.family in families]


def first_line(error: BaseException) -> str:
    """The error's type and first line (the kernels' files named without their folder)."""
    lines = str(error).replace(f"{HERE}{os.sep}", "").strip().splitlines()
    return f"{type(error).__name__}: {lines[0] if lines else ''}"[:240]


class Mismatch(Exception):
    """A config's output differs from the reference by more than the case allows."""


def check(case, kernels, inputs, expected, config, sync) -> tuple[dict, float]:
    """Launch one config on poisoned outputs; its outputs and worst relative error, or Mismatch."""
    outputs = case.outputs(inputs)
    case.launch(kernels, inputs, outputs, config)
    sync()
    errors = {name: rel_error(outputs[name], ref) for name, ref in expected.items()}
    name = max(errors, key=lambda n: errors[n] if errors[n] == errors[n] else float("inf"))
    if not errors[name] <= case.tol:  # NaN too: an unwritten element
        raise Mismatch(f"{name}: relative error {errors[name]:.2e} over {case.tol:.0e}")
    return outputs, errors[name]


def run_case(case, env, kernels: dict, timing: bool, quick: bool) -> dict:
    """Check every config on each side, then (timing) time the candidates, choose each side's
    best and time the two."""
    row = {"family": case.family, "case": case.label, "unit": case.unit, "work": case.work}
    sync = torch_sync(env.device)
    try:
        inputs = case.setup(env)
        expected = case.expected(inputs)
    except Exception as error:
        row["status"] = f"setup failed: {first_line(error)}"
        return row
    passed = {}
    for side, namespace in kernels.items():
        row[side] = {"failures": []}
        passed[side] = checked(case, namespace, inputs, expected, sync, row[side])
    shared = case.outputs(inputs) if timing else None  # every timed launch writes these
    times = time_candidates(case, kernels, inputs, shared, passed, row, quick) if timing else {}
    chosen = {}
    for side, namespace in kernels.items():
        if timing:
            passed[side] = [
                p for p in passed[side] if (side, p[0]) in times or len(passed[side]) == 1
            ]
        if not passed[side]:
            continue
        config, error = min(passed[side], key=lambda p, s=side: times.get((s, p[0]), 0.0))
        row[side].update(config=case.describe(config), error=error)
        row[side]["candidates_us"] = {
            case.describe(c): times[side, c] for c, _ in passed[side] if (side, c) in times
        }
        chosen[side] = launcher(case, namespace, inputs, shared, config)
    if timing:
        time_rounds(case, chosen, row, quick)
    failed = [side for side in kernels if side not in chosen]
    row["status"] = "ok" if not failed else f"{' and '.join(failed)} failed"
    if timing and not failed and len(kernels) == 2:
        row["speed"] = row["triton"]["us"] / row["tilec"]["us"]
    return row


def time_rounds(case, chosen: dict, row: dict, quick: bool) -> None:
    """Each chosen side's time in `row`: the median of ROUNDS medians. With the paired timer
    (TIMER["paired"], two sides) a round times both turn about (benchmarks/paired_timer.py);
    else each side with its do_bench, the sides' order alternating round by round (the first
    side first in even rounds). A side whose timing fails is dropped from `chosen`, its failure
    in its row."""
    warmup, rep = FINAL[quick]
    rounds: dict[str, list[float]] = {side: [] for side in chosen}
    for index in range(ROUNDS[quick]):
        if TIMER["paired"] and len(chosen) == 2:
            try:
                for side, us in paired_bench(chosen, warmup, rep).items():
                    rounds[side].append(us)
                continue
            except Exception:  # each side alone below, to name the one that fails
                pass
        order = list(chosen) if index % 2 == 0 else list(chosen)[::-1]
        for side in order:
            if side not in chosen:
                continue
            try:
                rounds[side].append(bench(chosen[side], quick, OWN_TIMER[side], warmup, rep))
            except Exception as error:
                row[side]["failures"].append(f"timing {row[side]['config']}: {first_line(error)}")
                del chosen[side]
    for side in chosen:
        row[side]["us"] = us = statistics.median(rounds[side])
        row[side]["rounds_us"] = rounds[side]
        row[side]["rate"] = case.work / us / 1e6


def checked(case, namespace, inputs, expected, sync, result) -> list[tuple]:
    """(config, error) of each config that passes its check (its outputs are not kept: every
    timed launch writes the case's one shared set); `result` gets the failures."""
    passed = []
    for config in case.configs:
        try:
            _, error = check(case, namespace, inputs, expected, config, sync)
            passed.append((config, error))
        except Exception as error:
            result["failures"].append(f"{case.describe(config)}: {first_line(error)}")
    return passed


def time_candidates(case, kernels, inputs, shared, passed, row, quick) -> dict:
    """{(side, config): microseconds} of the passed configs of each side with more than one,
    timed briefly, every one writing the `shared` outputs (as the final rounds do): with the
    paired timer all in one loop (paired_timer.py), else each alone with its side's do_bench.
    A config whose timing fails is left out, its failure in its side's row."""
    launches = {
        (side, config): launcher(case, kernels[side], inputs, shared, config)
        for side, configs in passed.items()
        if len(configs) > 1
        for config, _ in configs
    }
    if TIMER["paired"] and len(launches) > 1:
        try:
            return paired_bench(launches, *SELECT[quick])
        except Exception:  # each alone below, to name the one that fails
            pass
    times = {}
    for (side, config), launch in launches.items():
        try:
            times[side, config] = bench(launch, quick, OWN_TIMER[side], *SELECT[quick])
        except Exception as error:
            row[side]["failures"].append(f"timing {case.describe(config)}: {first_line(error)}")
    return times


def launcher(case, namespace, inputs, outputs, config):
    return lambda: case.launch(namespace, inputs, outputs, config)


def torch_sync(device: str):
    import torch

    return torch.cuda.synchronize if device == "cuda" else lambda: None


def need_gpu() -> None:
    import torch

    if not torch.cuda.is_available() or importlib.util.find_spec("triton") is None:
        raise SystemExit("sweep.py needs a CUDA GPU, torch and Triton; without: --interp-smoke")


def make_env(smoke: bool, seed: int):
    import torch
    from sweep_cases import Env

    if smoke:
        return Env("cpu", torch.Generator().manual_seed(seed))
    need_gpu()
    torch.backends.cuda.matmul.allow_tf32 = False  # float32 references in float32
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    return Env("cuda", torch.Generator(device="cuda").manual_seed(seed), sms)


def timer_check(quick: bool, copy: bool = False) -> str:
    """Both do_bench timers on one torch fp16 4096^3 matmul, or (`copy`) on a copy of a bf16
    8192x1024 tensor (a layer norm's 16 MiB in and out, memory-bound and 10-20 us, where the
    timers' L2 flushes differ: a driver memset for tilec.testing, torch's `zero_` for Triton):
    a difference here is the timers'."""
    import torch

    if copy:
        x = torch.randn(8192, 1024, device="cuda", dtype=torch.bfloat16)
        y = torch.empty_like(x)
        run = lambda: y.copy_(x)  # noqa: E731
    else:
        x = torch.randn(4096, 4096, device="cuda", dtype=torch.float16)
        run = lambda: x @ x  # noqa: E731
    times = [bench(run, quick, tilec_side, *FINAL[quick]) for tilec_side in (True, False)]
    text = f"tilec.testing {times[0]:.1f} us, triton.testing {times[1]:.1f} us"
    if copy:  # the same copy as both sides of the paired timer
        pair = paired_bench({"a": run, "b": lambda: y.copy_(x)}, *FINAL[quick])
        text += f"; paired, against itself: {pair['a']:.2f} and {pair['b']:.2f} us"
    return text


def warm_caches(args, jobs: int, limit_s: float = WARM_LIMIT_S) -> float:
    """Seconds spent by `jobs` worker processes launching every case's configs once on both
    sides (compiling into both disk caches); a worker's errors are left to the main run, and a
    worker still busy after `limit_s` is stopped (the main run compiles what it left)."""
    start = time.perf_counter()
    command = [sys.executable, str(Path(__file__).resolve())]
    command += ["--quick"] if args.quick else []
    command += ["--only", args.only] if args.only else []
    workers = [
        subprocess.Popen(
            [*command, "--warm-worker", f"{i}/{jobs}"],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        for i in range(jobs)
    ]
    for worker in workers:
        try:
            worker.wait(timeout=max(1.0, limit_s - (time.perf_counter() - start)))
        except subprocess.TimeoutExpired:
            worker.kill()
            worker.wait()
    return time.perf_counter() - start


def compile_jobs(cases) -> list[tuple]:
    """(case, side, config) for each distinct compile (by `Case.compile_key`), the smallest case
    of those that share it standing for them."""
    jobs: dict[tuple, tuple] = {}
    for case in sorted(cases, key=lambda c: c.work):
        for side in SIDES:
            for config in case.configs:
                key = (case.family, case.compile_key(), side, config)
                jobs.setdefault(key, (case, side, config))
    return list(jobs.values())


def warm_worker(args) -> int:
    """Worker `index` of `count`: launch its share of the compile jobs once."""
    index, count = (int(p) for p in args.warm_worker.split("/"))
    env = make_env(False, int(time.time()) + index)
    kernels = {side: load_kernels(side) for side in SIDES}
    jobs = compile_jobs(all_cases(select_families(args.only), args.quick, False))[index::count]
    launch_jobs(jobs, env, kernels, torch_sync("cuda"))
    return 0


def launch_jobs(jobs, env, kernels: dict, sync) -> int:
    """Launch each (case, side, config) once, on one set of inputs a case; errors ignored (the
    main run reports them). How many launches went through."""
    by_case: dict[int, list] = {}
    for job in jobs:
        by_case.setdefault(id(job[0]), []).append(job)
    done = 0
    for group in by_case.values():
        try:
            inputs = group[0][0].setup(env)
        except Exception:
            continue
        for case, side, config in group:
            try:
                case.launch(kernels[side], inputs, case.outputs(inputs), config)
                sync()
                done += 1
            except Exception:
                pass
        del inputs
    return done


def run_sweep(
    families, quick: bool, smoke: bool, seed: int, progress=None, deadline: float | None = None
) -> list[dict]:
    """Every case of `families` run in turn; `progress` gets a line after each (and the rows
    so far, for a file that outlives an interrupted run). The cases not begun by `deadline`
    (a time.perf_counter() value) are listed as skipped."""
    env = make_env(smoke, seed)
    if smoke:
        kernels = {"tilec": wrap_interp(load_kernels("tilec"))}
    else:
        kernels = {side: load_kernels(side) for side in SIDES}
    rows = []
    for case in all_cases(families, quick, smoke):
        start = time.perf_counter()
        if deadline is not None and start > deadline:
            rows.append({"family": case.family, "case": case.label, "unit": case.unit,
                         "work": case.work, "status": "skipped: --time-limit reached"})  # fmt: skip
            continue
        try:
            rows.append(run_case(case, env, kernels, not smoke, quick))
        except Exception as error:  # the sweep goes on, whatever one case does
            rows.append({"family": case.family, "case": case.label, "unit": case.unit,
                         "work": case.work, "status": f"failed: {first_line(error)}"})  # fmt: skip
        line = f"{case.family} {case.label}: {rows[-1]['status']}"
        if progress is not None:
            progress(f"{line} ({time.perf_counter() - start:.1f} s)", rows)
    return rows


def wrap_interp(namespace: dict) -> dict:
    return {
        k: OnBackend(v, "interp") if k.startswith("sweep_") else v for k, v in namespace.items()
    }


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a few cases a family, short timing")
    parser.add_argument("--only", help="comma-separated families (matmul, attention_fwd, ...)")
    parser.add_argument("--json", help="also write the rows and the summary to this file")
    parser.add_argument(
        "--interp-smoke",
        action="store_true",
        help="tiny shapes on tilec's interp backend, correctness only, no GPU",
    )
    parser.add_argument(
        "--jobs",
        type=int,
        default=min(12, os.cpu_count() or 1),
        help="worker processes compiling ahead (0: none)",
    )
    parser.add_argument(
        "--seed", type=int, default=None, help="random inputs' seed (default: time)"
    )
    parser.add_argument(
        "--time-limit", type=float, help="seconds: the cases not begun by then are skipped"
    )
    parser.add_argument(
        "--timer", choices=("paired", "own", "triton"), default="paired",
        help="paired: both sides turn about in one loop (paired_timer.py); own: each side's "
        "do_bench (tilec.testing's for tilec); triton: Triton's for both",
    )  # fmt: skip
    parser.add_argument("--warm-worker", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    families = select_families(args.only)
    if args.warm_worker:
        return warm_worker(args)
    from sweep_report import header, print_tables, summarize

    seed = args.seed if args.seed is not None else int(time.time())
    start = time.perf_counter()
    warm_s = 0.0
    if not args.interp_smoke:
        need_gpu()
    if not args.interp_smoke and args.jobs > 0:
        limit = WARM_LIMIT_S if args.time_limit is None else min(WARM_LIMIT_S, args.time_limit / 2)
        warm_s = warm_caches(args, args.jobs, limit)
        print(f"compiled ahead in {warm_s:.0f} s ({args.jobs} workers)", flush=True)

    def progress(line: str, rows: list) -> None:
        print(line, flush=True)
        if args.json:  # the rows so far, replaced by the whole report at the end
            Path(args.json).write_text(json.dumps({"seed": seed, "rows": rows}, indent=1))

    OWN_TIMER["tilec"] = args.timer == "own"
    TIMER["paired"] = args.timer == "paired"
    deadline = None if args.time_limit is None else start + args.time_limit
    rows = run_sweep(families, args.quick, args.interp_smoke, seed, progress, deadline)
    info = header(args.interp_smoke, seed, time.perf_counter() - start, warm_s)
    if not args.interp_smoke:
        info["timer"] = args.timer
        info["timers on a torch fp16 4096^3 matmul"] = timer_check(args.quick)
        info["timers on a torch bf16 8192x1024 copy"] = timer_check(args.quick, copy=True)
    summary = summarize(rows)
    print_tables(info, rows, summary, not args.interp_smoke)
    if args.json:
        Path(args.json).write_text(json.dumps({**info, "rows": rows, "summary": summary}, indent=1))
    if args.interp_smoke:
        return 0 if all(r["status"] == "ok" for r in rows) else 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
