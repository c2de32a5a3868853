"""tilec's interp backend against Triton's interpreter (`TRITON_INTERPRET=1`) on the same kernels.

The four kernels (vector add, fused softmax, layernorm forward, matmul) are one source text,
`KERNELS`, exec'd twice: once with `tl = tilec.language` and `jit = tilec.jit`, once with
`tl = triton.language` and `jit = triton.jit`. Both results are checked against NumPy. Then, each
in a fresh subprocess: the peak RSS of a 2^27-element vector add and of a large matmul under the
interp, and the cold compile time of the vector add (fresh `TILEC_CACHE_DIR`).

    python benchmarks/interp_vs_triton.py [--skip-triton] [--skip-rss] [--matmul-rss-size 4096]

Triton and torch are optional: without them only the tilec half runs (and the script says so).
They must not be installed in tilec's own environment; use a separate one, e.g.
`/tmp/benchvenv` (see benchmarks/RESULTS.md).
"""

from __future__ import annotations

import argparse
import json
import linecache
import os
import shlex
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from types import ModuleType
from typing import Any

import numpy as np

KERNELS = """
@jit
def add_kernel(x_ptr, y_ptr, output_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    pid = tl.program_id(axis=0)
    block_start = pid * BLOCK_SIZE
    offsets = block_start + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    x = tl.load(x_ptr + offsets, mask=mask)
    y = tl.load(y_ptr + offsets, mask=mask)
    output = x + y
    tl.store(output_ptr + offsets, output, mask=mask)


@jit
def softmax_kernel(output_ptr, input_ptr, input_row_stride, output_row_stride, n_cols,
                   BLOCK_SIZE: tl.constexpr):
    row_idx = tl.program_id(0)
    row_start_ptr = input_ptr + row_idx * input_row_stride
    col_offsets = tl.arange(0, BLOCK_SIZE)
    input_ptrs = row_start_ptr + col_offsets
    mask = col_offsets < n_cols
    row = tl.load(input_ptrs, mask=mask, other=-float("inf"))
    row_minus_max = row - tl.max(row, axis=0)
    numerator = tl.exp(row_minus_max)
    denominator = tl.sum(numerator, axis=0)
    softmax_output = numerator / denominator
    output_row_start_ptr = output_ptr + row_idx * output_row_stride
    tl.store(output_row_start_ptr + col_offsets, softmax_output, mask=mask)


@jit
def layer_norm_fwd_kernel(X, Y, W, B, Mean, Rstd, stride, N, eps, BLOCK_SIZE: tl.constexpr):
    row = tl.program_id(0)
    Y += row * stride
    X += row * stride
    _mean = tl.zeros([BLOCK_SIZE], dtype=tl.float32)
    for off in range(0, N, BLOCK_SIZE):
        cols = off + tl.arange(0, BLOCK_SIZE)
        a = tl.load(X + cols, mask=cols < N, other=0.0).to(tl.float32)
        _mean += a
    mean = tl.sum(_mean, axis=0) / N
    _var = tl.zeros([BLOCK_SIZE], dtype=tl.float32)
    for off in range(0, N, BLOCK_SIZE):
        cols = off + tl.arange(0, BLOCK_SIZE)
        x = tl.load(X + cols, mask=cols < N, other=0.0).to(tl.float32)
        x = tl.where(cols < N, x - mean, 0.0)
        _var += x * x
    var = tl.sum(_var, axis=0) / N
    rstd = 1 / tl.sqrt(var + eps)
    tl.store(Mean + row, mean)
    tl.store(Rstd + row, rstd)
    for off in range(0, N, BLOCK_SIZE):
        cols = off + tl.arange(0, BLOCK_SIZE)
        mask = cols < N
        w = tl.load(W + cols, mask=mask)
        b = tl.load(B + cols, mask=mask)
        x = tl.load(X + cols, mask=mask, other=0.0).to(tl.float32)
        x_hat = (x - mean) * rstd
        y = x_hat * w + b
        tl.store(Y + cols, y, mask=mask)


@jit
def matmul_kernel(a_ptr, b_ptr, c_ptr, M, N, K, stride_am, stride_ak, stride_bk, stride_bn,
                  stride_cm, stride_cn, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
                  BLOCK_K: tl.constexpr):
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    offs_k = tl.arange(0, BLOCK_K)
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k in range(0, K, BLOCK_K):
        rk = k + offs_k
        a_mask = (offs_m[:, None] < M) & (rk[None, :] < K)
        b_mask = (rk[:, None] < K) & (offs_n[None, :] < N)
        a = tl.load(a_ptr + offs_m[:, None] * stride_am + rk[None, :] * stride_ak,
                    mask=a_mask, other=0.0)
        b = tl.load(b_ptr + rk[:, None] * stride_bk + offs_n[None, :] * stride_bn,
                    mask=b_mask, other=0.0)
        # f32 products (Triton's interpreter ignores the default "tf32"; tilec's rounds to it)
        acc = tl.dot(a, b, acc, input_precision="ieee")
    c_mask = (offs_m[:, None] < M) & (offs_n[None, :] < N)
    tl.store(c_ptr + offs_m[:, None] * stride_cm + offs_n[None, :] * stride_cn, acc, mask=c_mask)
"""

VECTOR_SIZE = 1 << 20
SOFTMAX_SHAPE = (4096, 1000)
LAYERNORM_SHAPE = (1024, 4096)
LAYERNORM_BLOCK = 1024  # 4 chunks per row, so the loops over the row really loop
MATMUL_SIZE = 512
MATMUL_BLOCKS = {"BLOCK_M": 64, "BLOCK_N": 64, "BLOCK_K": 32}
RSS_ADD_SIZE = 1 << 27
GIB = 1 << 30


def load_kernels(tl: ModuleType, jit: Callable, tag: str) -> dict[str, Any]:
    """Exec `KERNELS` with `tl` and `jit`; the source is registered with linecache so that both
    compilers (which read kernel source through `inspect`) see it."""
    filename = f"<interp_vs_triton kernels: {tag}>"
    linecache.cache[filename] = (len(KERNELS), None, KERNELS.splitlines(True), filename)
    namespace: dict[str, Any] = {"tl": tl, "jit": jit, "__name__": f"kernels_{tag}"}
    exec(compile(KERNELS, filename, "exec"), namespace)
    return namespace


def next_power_of_2(n: int) -> int:
    return 1 << (n - 1).bit_length()


# Problems: inputs (NumPy), a launcher per framework, NumPy reference and tolerance ------------


def make_inputs(name: str, rng: np.random.Generator) -> dict[str, np.ndarray]:
    if name == "vector add":
        return {"x": rng.random(VECTOR_SIZE, np.float32), "y": rng.random(VECTOR_SIZE, np.float32)}
    if name == "softmax":
        return {"x": rng.standard_normal(SOFTMAX_SHAPE, np.float32)}
    if name == "layernorm":
        n = LAYERNORM_SHAPE[1]
        return {
            "x": rng.standard_normal(LAYERNORM_SHAPE, np.float32) * 2 + 0.5,
            "w": rng.random(n, np.float32),
            "b": rng.random(n, np.float32),
        }
    size = (MATMUL_SIZE, MATMUL_SIZE)
    return {"a": rng.standard_normal(size, np.float32), "b": rng.standard_normal(size, np.float32)}


def reference(name: str, inp: dict[str, np.ndarray]) -> tuple[np.ndarray, ...]:
    if name == "vector add":
        return (inp["x"] + inp["y"],)
    if name == "softmax":
        x = inp["x"].astype(np.float64)
        e = np.exp(x - x.max(axis=1, keepdims=True))
        return (e / e.sum(axis=1, keepdims=True),)
    if name == "layernorm":
        x = inp["x"].astype(np.float64)
        mean = x.mean(axis=1)
        rstd = 1 / np.sqrt(x.var(axis=1) + 1e-5)
        y = (x - mean[:, None]) * rstd[:, None] * inp["w"] + inp["b"]
        return (y, mean, rstd)
    return (inp["a"].astype(np.float64) @ inp["b"].astype(np.float64),)


TOLERANCE = {"vector add": 0.0, "softmax": 1e-6, "layernorm": 1e-4, "matmul": 1e-3}


def launch(name: str, ns: dict[str, Any], arrays: dict[str, Any], out: tuple, cdiv) -> None:
    """Launch problem `name` with kernels from namespace `ns` (tilec's or Triton's)."""
    if name == "vector add":
        n = arrays["x"].shape[0]
        grid = (cdiv(n, 1024),)
        ns["add_kernel"][grid](arrays["x"], arrays["y"], out[0], n, BLOCK_SIZE=1024)
    elif name == "softmax":
        rows, cols = arrays["x"].shape
        block = next_power_of_2(cols)
        ns["softmax_kernel"][(rows,)](out[0], arrays["x"], cols, cols, cols, BLOCK_SIZE=block)
    elif name == "layernorm":
        rows, cols = arrays["x"].shape
        ns["layer_norm_fwd_kernel"][(rows,)](
            arrays["x"], out[0], arrays["w"], arrays["b"], out[1], out[2], cols, cols, 1e-5,
            BLOCK_SIZE=LAYERNORM_BLOCK,
        )  # fmt: skip
    else:
        (m, k), n = arrays["a"].shape, arrays["b"].shape[1]
        grid = (cdiv(m, MATMUL_BLOCKS["BLOCK_M"]), cdiv(n, MATMUL_BLOCKS["BLOCK_N"]))
        ns["matmul_kernel"][grid](
            arrays["a"], arrays["b"], out[0], m, n, k, k, 1, n, 1, n, 1, **MATMUL_BLOCKS
        )


def output_shapes(name: str, inp: dict[str, np.ndarray]) -> list[tuple[int, ...]]:
    if name == "vector add":
        return [inp["x"].shape]
    if name == "softmax":
        return [inp["x"].shape]
    if name == "layernorm":
        rows = inp["x"].shape[0]
        return [inp["x"].shape, (rows,), (rows,)]
    return [(inp["a"].shape[0], inp["b"].shape[1])]


def max_error(outs: tuple, refs: tuple) -> float:
    return max(
        float(np.max(np.abs(np.asarray(o, np.float64) - r)))
        for o, r in zip(outs, refs, strict=True)
    )


# tilec -----------------------------------------------------------------------------------------


def time_tilec(name: str, ns: dict, inp: dict, rep_ms: float) -> dict[str, Any]:
    """The first launch (compile included) on the host clock; warm launches with
    `tilec.testing.do_bench` (the interpreter's CPU clock), about `rep_ms` of them."""
    import tilec
    import tilec.testing

    outs = tuple(np.empty(s, np.float32) for s in output_shapes(name, inp))
    start = time.perf_counter()
    launch(name, ns, inp, outs, tilec.cdiv)
    first = time.perf_counter() - start
    error = max_error(outs, reference(name, inp))
    warm_ms = tilec.testing.do_bench(
        lambda: launch(name, ns, inp, outs, tilec.cdiv), warmup=0, rep=rep_ms,
        return_mode="median", backend="interp",
    )  # fmt: skip
    return {"first": first, "warm": warm_ms / 1e3, "error": error}


# Triton ----------------------------------------------------------------------------------------


def import_triton() -> tuple[Any, Any] | str:
    """(triton, torch), or why they cannot be used."""
    os.environ["TRITON_INTERPRET"] = "1"
    try:
        import torch
        import triton
    except ImportError as exc:
        return (
            f"Triton's half skipped: {exc}. Install torch and triton in a separate virtualenv "
            "(not tilec's): python3 -m venv /tmp/benchvenv && /tmp/benchvenv/bin/pip install "
            "torch==2.13.0 triton==3.6.0 numpy==2.3.5 && /tmp/benchvenv/bin/pip install -e . "
            "-e plugins/interp (Triton 3.6's interpreter fails on NumPy 2.4: see "
            "benchmarks/RESULTS.md)"
        )
    return triton, torch


def time_triton(name: str, ns: dict, inp: dict, runs: int, torch, triton) -> dict[str, Any]:
    arrays = {k: torch.from_numpy(v.copy()) for k, v in inp.items()}
    outs = tuple(torch.empty(s, dtype=torch.float32) for s in output_shapes(name, inp))
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        launch(name, ns, arrays, outs, triton.cdiv)
        times.append(time.perf_counter() - start)
    error = max_error(tuple(o.numpy() for o in outs), reference(name, inp))
    return {"median": statistics.median(times), "runs": runs, "error": error}


# Subprocess measurements -----------------------------------------------------------------------


def _vm_kib(field: str) -> int:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    raise RuntimeError(f"no {field} in /proc/self/status")


def child_rss(kind: str, size: int) -> None:
    """Run one large kernel in this (fresh) process and print its memory figures as JSON."""
    import resource

    import tilec
    import tilec.language as tl

    os.environ["TILEC_CACHE_DIR"] = tempfile.mkdtemp(prefix="tilec-bench-")
    ns = load_kernels(tl, tilec.jit, "tilec")
    rng = np.random.default_rng(0)
    before_inputs = _vm_kib("VmRSS")
    if kind == "add":
        x, y, out = (np.empty(size, np.float32) for _ in range(3))
        rng.random(dtype=np.float32, out=x)
        rng.random(dtype=np.float32, out=y)
        out.fill(0)
        arrays, outs = {"x": x, "y": y}, (out,)
    else:
        a, b, c = (np.empty((size, size), np.float32) for _ in range(3))
        rng.random(dtype=np.float32, out=a)
        rng.random(dtype=np.float32, out=b)
        c.fill(0)
        arrays, outs = {"a": a, "b": b}, (c,)
    baseline = _vm_kib("VmRSS")
    start = time.perf_counter()
    launch("vector add" if kind == "add" else "matmul", ns, arrays, outs, tilec.cdiv)
    seconds = time.perf_counter() - start
    peak_hwm = _vm_kib("VmHWM")
    peak_ru = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    if kind == "add":
        ok = bool(np.array_equal(out, x + y))
    else:
        rows = slice(0, 256)  # a slice of rows: checking all of a 4096^3 product doubles the time
        ok = bool(np.allclose(c[rows], a[rows] @ b, rtol=1e-4, atol=1e-3))
    print(json.dumps({
        "kind": kind, "size": size, "seconds": seconds, "ok": ok,
        "rss_before_inputs_kib": before_inputs, "rss_after_inputs_kib": baseline,
        "peak_vmhwm_kib": peak_hwm, "peak_ru_maxrss_kib": peak_ru,
    }))  # fmt: skip


def child_compile() -> None:
    """Time one cold `tilec.compile` of the vector add (fresh process, fresh cache dir)."""
    os.environ["TILEC_CACHE_DIR"] = tempfile.mkdtemp(prefix="tilec-bench-")
    import tilec
    import tilec.language as tl

    ns = load_kernels(tl, tilec.jit, "tilec")
    signature = {"x_ptr": "*fp32", "y_ptr": "*fp32", "output_ptr": "*fp32", "n_elements": "i32"}
    times = []
    for block in (1024, 512):  # the second compile finds tilec's lazy imports done
        start = time.perf_counter()
        tilec.compile(
            ns["add_kernel"],
            signature=signature,
            constexprs={"BLOCK_SIZE": block},
            backend="interp",
        )
        times.append(time.perf_counter() - start)
    print(json.dumps({"seconds": times[0], "warm_imports_seconds": times[1]}))


def run_child(*args: str, timeout: float) -> dict[str, Any] | str:
    cmd = [sys.executable, os.path.abspath(__file__), *args]
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    try:
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=env)
    except subprocess.TimeoutExpired:
        return f"did not finish within {timeout:.0f} s"
    if done.returncode != 0:
        return f"failed (exit {done.returncode}): {done.stderr.strip().splitlines()[-1:]}"
    return json.loads(done.stdout.strip().splitlines()[-1])


# Main ------------------------------------------------------------------------------------------


def fmt_time(seconds: float) -> str:
    return f"{seconds * 1e3:.1f} ms" if seconds < 1 else f"{seconds:.2f} s"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--skip-triton", action="store_true", help="run only the tilec half")
    parser.add_argument("--skip-rss", action="store_true", help="skip the subprocess figures")
    parser.add_argument("--only", help="comma-separated problems (vector add,softmax,...)")
    parser.add_argument("--matmul-rss-size", type=int, default=4096)
    parser.add_argument("--matmul-rss-timeout", type=float, default=300.0)
    parser.add_argument("--child-rss", nargs=2, metavar=("KIND", "SIZE"), help=argparse.SUPPRESS)
    parser.add_argument("--child-compile", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child_rss:
        child_rss(args.child_rss[0], int(args.child_rss[1]))
        return 0
    if args.child_compile:
        child_compile()
        return 0

    os.environ.setdefault("TILEC_CACHE_DIR", tempfile.mkdtemp(prefix="tilec-bench-"))
    triton_modules = "skipped (--skip-triton)" if args.skip_triton else import_triton()
    import tilec
    import tilec.language as tilec_tl

    tilec_ns = load_kernels(tilec_tl, tilec.jit, "tilec")
    triton_ns = None
    if not isinstance(triton_modules, str):
        triton, torch = triton_modules
        triton_ns = load_kernels(triton.language, triton.jit, "triton")
        versions = f"triton {triton.__version__}, torch {torch.__version__}"
    else:
        print(triton_modules)
        versions = "Triton not run"
    problems = ["vector add", "softmax", "layernorm", "matmul"]
    if args.only:
        problems = [p for p in problems if p in args.only.split(",")]
    rows = []
    for name in problems:
        inp = make_inputs(name, np.random.default_rng(0))
        t = time_tilec(name, tilec_ns, inp, rep_ms=1000)
        tol = TOLERANCE[name]
        row = {"name": name, "tilec": t, "tilec_ok": t["error"] <= tol}
        if triton_ns is not None:
            tr = time_triton(name, triton_ns, inp, 3, torch, triton)
            row["triton"] = tr
            row["triton_ok"] = tr["error"] <= tol
        rows.append(row)
        print(f"# {name}: {row}", file=sys.stderr, flush=True)

    print(f"\nnumpy {np.__version__}, {versions}, python {sys.version.split()[0]}\n")
    print(
        "| kernel | tilec warm (do_bench median, ~1 s) | tilec first launch (incl. compile) "
        "| Triton interpreter (median of 3) | Triton / tilec warm | max abs error tilec / Triton "
        "| correct (tilec / Triton) |"
    )
    print("|---|---|---|---|---|---|---|")
    for row in rows:
        t = row["tilec"]
        tr = row.get("triton")
        triton_time = fmt_time(tr["median"]) if tr else "n/a"
        ratio = f"{tr['median'] / t['warm']:.0f}x" if tr else "n/a"
        errors = f"{t['error']:.2g} / " + (f"{tr['error']:.2g}" if tr else "n/a")
        ok = ("yes" if row["tilec_ok"] else "NO") + " / "
        ok += ("yes" if row["triton_ok"] else "NO") if tr else "n/a"
        print(
            f"| {row['name']} | {fmt_time(t['warm'])} | {fmt_time(t['first'])} | {triton_time} "
            f"| {ratio} | {errors} | {ok} |"
        )
    print("\nTolerances (max abs error vs a float64 NumPy reference): " + ", ".join(
        f"{k} {v:g}" for k, v in TOLERANCE.items()))  # fmt: skip

    if not args.skip_rss:
        print(
            "\nPeak memory under the interp, each in a fresh subprocess. Peak RSS is the child's "
            "VmHWM; its ru_maxrss is shown too (Linux keeps the forking parent's high-water mark "
            "in it across exec, so it can exceed VmHWM).\n"
        )
        print("| run | time | RSS after allocating inputs and output | peak RSS | correct |")
        print("|---|---|---|---|---|")
        for kind, size, label in (
            ("add", RSS_ADD_SIZE, "vector add, 2^27 float32"),
            ("matmul", args.matmul_rss_size, f"matmul {args.matmul_rss_size}^3 float32"),
        ):
            timeout = args.matmul_rss_timeout if kind == "matmul" else 600.0
            r = run_child("--child-rss", kind, str(size), timeout=timeout)
            if isinstance(r, str):
                print(f"| {label} | {r} | | | |")
                continue
            print(
                f"| {label} | {fmt_time(r['seconds'])} "
                f"| {r['rss_after_inputs_kib'] / (1 << 20):.2f} GiB "
                f"| {r['peak_vmhwm_kib'] / (1 << 20):.2f} GiB "
                f"(ru_maxrss {r['peak_ru_maxrss_kib'] / (1 << 20):.2f} GiB) "
                f"| {'yes' if r['ok'] else 'NO'} |"
            )
    compile_times, warm_imports = [], []
    for _ in range(5):
        r = run_child("--child-compile", timeout=120)
        if isinstance(r, str):
            print(f"\ncold compile: {r}")
            break
        compile_times.append(r["seconds"])
        warm_imports.append(r["warm_imports_seconds"])
    if compile_times:
        shown = ", ".join(f"{s * 1e3:.0f}" for s in compile_times)
        print(
            f"\nCold compile of the vector add (tilec.compile, backend='interp', fresh process and "
            f"cache dir): median {statistics.median(compile_times) * 1e3:.0f} ms of 5 ({shown} ms); "
            f"a second compile in the same process (BLOCK_SIZE=512, tilec's lazy imports done): "
            f"median {statistics.median(warm_imports) * 1e3:.0f} ms"
        )
    print(f"\ncommand: {shlex.join([os.path.basename(sys.executable), *sys.argv])}")
    bad = [r["name"] for r in rows if not r["tilec_ok"]]
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
