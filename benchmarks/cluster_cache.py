"""The cold start of a job of N processes (N = 1, 4, 16), each compiling and autotuning the example
kernels (examples/: the vector add, softmax, layer norm, histogram, and the autotuned matmul and
attention, each example's `main`), started at once on empty caches, in three set-ups:

- no cache: each process has a disk cache of its own (N hosts, nothing shared);
- disk cache: the N processes share one disk cache (one host: the most a disk cache shares);
- Redis tier: each process has a disk cache of its own (N hosts) and all share a Redis server
  (`TILEC_REMOTE_CACHE`), which this script starts on a free port in a temporary folder.

It reports the compile work of the whole job (the compiles every process logged, autotuning
workers' included: `TILEC_LOG=info`'s "compiling for" lines), the time from the start of the
processes to the first kernel launch of each (median and slowest) and until the last process is
done.

    python benchmarks/cluster_cache.py [--processes 1 4 16] [--backend interp]

Needs redis-server on PATH and the redis package (`pip install 'tilec[redis]'`).
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
EXAMPLES = (
    "vector_add",
    "softmax",
    "layernorm",
    "histogram",
    "matmul_autotune",
    "attention_autotune",
)
SETUPS = ("no cache", "disk cache", "Redis tier")


def worker(started: float, examples: list[str]) -> None:
    """One process of the job: run each example's `main` (its output kept quiet), then print the
    times (since `started`, the job's start) of its first launch and of its end, as JSON."""
    sys.path.insert(0, str(HERE.parent / "examples"))
    import importlib
    import inspect

    first = None
    for name in examples:
        module = importlib.import_module(name)
        with contextlib.redirect_stdout(io.StringIO()):
            module.main(*([[]] if inspect.signature(module.main).parameters else []))
        first = first if first is not None else time.time() - started
    print(json.dumps({"first": first, "done": time.time() - started}))


def job(count: int, setup: str, folder: Path, env: dict[str, str], examples: list[str]) -> dict:
    """Start `count` processes at once in `setup`; the job's compiles and times."""
    started = time.time()
    procs = []
    for index in range(count):
        cache = folder / ("shared" if setup == "disk cache" else f"host-{index}")
        command = [sys.executable, __file__, "--worker", str(started), *examples]
        env_of = {**env, "TILEC_CACHE_DIR": str(cache)}
        pipes = {"stdout": subprocess.PIPE, "stderr": subprocess.PIPE, "text": True}
        procs.append(subprocess.Popen(command, env=env_of, **pipes))
    results, compiles, warned = [], 0, []
    for proc in procs:
        out, err = proc.communicate()
        if proc.returncode != 0:
            raise SystemExit(f"a process of the job failed:\n{err[-3000:]}")
        results.append(json.loads(out.strip().splitlines()[-1]))
        compiles += err.count("compiling for")
        warned += [line for line in err.splitlines() if "RemoteCacheWarning" in line]
    for line in sorted(set(warned)):
        print(f"  ({warned.count(line)} processes) {line.strip()}", file=sys.stderr)
    firsts = [r["first"] for r in results]
    return {
        "compiles": compiles,
        "first_median": statistics.median(firsts),
        "first_max": max(firsts),
        "done": max(r["done"] for r in results),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--processes", type=int, nargs="+", default=[1, 4, 16])
    parser.add_argument("--backend", default="interp")
    parser.add_argument("--examples", nargs="+", default=list(EXAMPLES))
    parser.add_argument("--setups", nargs="+", default=list(SETUPS), choices=SETUPS)
    parser.add_argument("--worker", type=float, help=argparse.SUPPRESS)
    args, rest = parser.parse_known_args()
    if args.worker is not None:
        return worker(args.worker, rest or args.examples)
    sys.path.insert(0, str(HERE.parent / "tests" / "runtime"))
    from redis_server import RedisServer  # a redis-server in a temporary folder

    with tempfile.TemporaryDirectory(prefix="tilec-cluster-cache-") as tmp:
        root = Path(tmp)
        server = RedisServer(root / "redis")
        reason = server.start()
        if reason is not None:
            raise SystemExit(f"cluster_cache.py needs a redis-server: {reason}")
        try:
            env = {k: v for k, v in os.environ.items() if not k.startswith("TILEC_")}
            env.update(TILEC_BACKEND=args.backend, TILEC_LOG="info",
                       TILEC_CACHE_KEY_FILE=str(root / "state" / "cache-key"))  # fmt: skip
            print(f"examples: {', '.join(args.examples)}; backend {args.backend}; "
                  f"{os.cpu_count()} CPUs\n")  # fmt: skip
            print("| set-up | processes | compiles (job) | per process | first launch, median "
                  "(s) | first launch, slowest (s) | all done (s) |")  # fmt: skip
            print("|---|---:|---:|---:|---:|---:|---:|")
            for count in args.processes:
                for setup in args.setups:
                    folder = root / f"{setup.replace(' ', '-')}-{count}"
                    run_env = dict(env)
                    if setup == "Redis tier":
                        server.client.flushdb()
                        run_env["TILEC_REMOTE_CACHE"] = server.url
                    r = job(count, setup, folder, run_env, args.examples)
                    print(f"| {setup} | {count} | {r['compiles']} | {r['compiles'] / count:.1f} | "
                          f"{r['first_median']:.2f} | {r['first_max']:.2f} | {r['done']:.2f} |",
                          flush=True)  # fmt: skip
        finally:
            server.stop()


if __name__ == "__main__":
    main()
