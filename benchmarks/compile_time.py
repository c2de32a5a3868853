"""Compile and start-up time, tilec against Triton on the same kernel source (issue 24).

    python benchmarks/compile_time.py [--repeat 5] [--all] [--triton-python PYTHON]
        [--only import,add,matmul,attention,launch] [--json FILE] [--median] [--warm-tools]
        [--profile-launch N] [--no-bytecode]

Rows, each side measured in fresh processes (one a measurement, best of `--repeat`, or with
`--median` their median; the compile rows run the sides in turn, so that both see the same load):
- `import`: `import tilec` / `import triton`: the package's cumulative time of
  `python -X importtime` (wall) and the process's CPU time for the import, the disk's bytecode
  cache warm (see below).
- compile-only to cubin, no GPU needed, fresh caches each: the vector add (BLOCK_SIZE 1024) and
  the matmul of `matmul_vs_triton.py` (its first configuration, 128x256x64, 8 warps, 3 stages:
  wgmma on sm_90a); with `--all`, every matmul configuration there and the flash-attention
  forward of `examples/attention.py` at `attention_static.py`'s configurations. tilec:
  `tilec.compile(..., backend="nvidia", target="sm_90a")`; Triton:
  `triton.compile(ASTSource(fn, signature, constexprs, attrs), target=GPUTarget("cuda", 90, 32))`,
  both specialized as a launch on contiguous 4096-sized tensors specializes them (16-divisible
  integers and 16-byte aligned pointers; unit strides equal to 1). The time is the first
  compile of the process, after the import (whatever the compiler loads lazily is in it): wall
  time, and CPU time of the process and its children (ptxas), which the load of a shared
  machine stretches less. `--warm-tools`: tilec's fresh cache folders start with the ptxas an
  earlier (untimed) process found (`tilec_nvidia.ptxas_memo`): a user's first compile of a
  kernel in a new process, not the first compile ever on the machine.
  tilec's rows add its stages (`tilec.pipeline` logs each stage's time); `front` is the rest:
  the compiler's modules loading, the frontend, the cache key.
- `launch` (GPU machine only; skipped with a note elsewhere): the vector add's first launch in
  a new process whose disk cache holds the kernel (written by an earlier process), then its
  second and third launches, on torch tensors, each followed by `torch.cuda.synchronize()`,
  and which of cuda-python's modules the first launch imported (tilec's should import none);
  `--profile-launch N` adds a cProfile of tilec's first launch (its N costliest functions).
  tilec's second launch starts the native fast launch's build on a thread and launches through
  the Python fast path (`tilec.runtime.hot_path.native_in_background`); the third may too.
  Also, tilec only, the same on the interp backend (NumPy arrays, 4096 elements), and on the
  nvidia backend over a fake libcuda.so.1 and a fake torch (`launch_fake`, the real torch
  imported before where installed): what a launch from the cache loads and builds, measured on
  any machine.

The kernels are `gpu_vs_triton.py`'s (`load_kernels`: one source exec'd under each compiler).
Triton's side runs where `--triton-python` (default: this interpreter) imports triton; without
it the table has tilec's rows only. Every child runs with the bytecode cache on, in a
folder of its own (`PYTHONPYCACHEPREFIX`; an untimed first run fills it), as an installed
package has its `.pyc` files; `PYTHONDONTWRITEBYTECODE` is dropped for them. So the rows are
those of a tree with bytecode, whatever the host's own setting (a line above the table says
so). `--no-bytecode` measures tilec's packages without it, as an editable install under
`PYTHONDONTWRITEBYTECODE=1` has them (every module a launch imports is compiled from source in
each process): after the untimed first run, the `.pyc` files of tilec and of its plugins'
top-level packages (its entry points') are removed from that folder and an empty file takes
each package's place there, so that no child writes them again (Python skips a `.pyc` it cannot
write); the standard library's and other packages' (Triton's too) stay.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
SIDES = ("tilec", "triton")
PACKAGE = {"tilec": "tilec", "triton": "triton"}
MATMUL_INTS = ("M", "N", "K", "stride_am", "stride_bk", "stride_cm")
MATMUL_UNIT = ("stride_ak", "stride_bn", "stride_cn")
CUDA_PYTHON = ("cuda.bindings", "cuda.pathfinder")
"""cuda-python's modules, which tilec's first launch from the disk cache does without
(`tilec_nvidia.libcuda`): the launch rows say which of them a first launch imported."""
VECTOR_ADD = {"x_ptr": "*fp32", "y_ptr": "*fp32", "output_ptr": "*fp32", "n_elements": "i32"}


# The kernels and their specializations -------------------------------------------------------


def jobs(everything: bool) -> list[dict]:
    """The compile-only rows: kernel, label and the configuration a worker compiles."""
    sys.path.insert(0, str(HERE))
    from attention_static import CONFIGS as ATTENTION
    from matmul_vs_triton import CONFIGS as MATMUL

    rows = [dict(kernel="add", label="vector add (BLOCK 1024, 4 warps)", warps=4, stages=3)]
    for bm, bn, bk, warps, stages in MATMUL if everything else MATMUL[:1]:
        label = f"matmul {bm}x{bn}x{bk}, {warps} warps, {stages} stages"
        rows.append(dict(kernel="matmul", label=label, block=(bm, bn, bk), warps=warps,
                         stages=stages))  # fmt: skip
    for text in ATTENTION if everything else ():
        head, blocks, warps, stages = text.split(":")
        bm, bn = (int(b) for b in blocks.split("x"))
        label = f"attention d{head} {bm}x{bn}, {warps} warps, {stages} stages"
        rows.append(dict(kernel="attention", label=label, head=int(head), block=(bm, bn),
                         warps=int(warps), stages=int(stages)))  # fmt: skip
    return rows


def specialization(job: dict) -> tuple[dict, dict, list, list]:
    """(signature of the runtime arguments, constexprs, divisible, equal to 1) of `job`."""
    if job["kernel"] == "add":
        return dict(VECTOR_ADD), {"BLOCK_SIZE": 1024}, list(VECTOR_ADD), []
    if job["kernel"] == "matmul":
        bm, bn, bk = job["block"]
        signature = {**dict.fromkeys(("a_ptr", "b_ptr", "c_ptr"), "*fp16"),
                     **dict.fromkeys((*MATMUL_INTS, *MATMUL_UNIT), "i32")}  # fmt: skip
        constexprs = dict(BLOCK_SIZE_M=bm, BLOCK_SIZE_N=bn, BLOCK_SIZE_K=bk, GROUP_SIZE_M=8)
        return signature, constexprs, ["a_ptr", "b_ptr", "c_ptr", *MATMUL_INTS], list(MATMUL_UNIT)
    from attention_static import INTEGERS, POINTERS, UNIT_STRIDES

    signature = {**dict.fromkeys(POINTERS, "*fp16"), "sm_scale": "fp32",
                 **dict.fromkeys(INTEGERS, "i32")}  # fmt: skip
    bm, bn = job["block"]
    constexprs = dict(HEAD_DIM=job["head"], BLOCK_M=bm, BLOCK_N=bn, CAUSAL=False)
    divisible = [*POINTERS, *(i for i in INTEGERS if i not in UNIT_STRIDES)]
    return signature, constexprs, divisible, list(UNIT_STRIDES)


def kernel_of(side: str, job: dict):
    from gpu_vs_triton import load_kernels

    name = {"add": "add_kernel", "matmul": "matmul_kernel", "attention": "attn_fwd"}
    return load_kernels(side)[name[job["kernel"]]]


# Workers (one measurement each, in a fresh process) --------------------------------------------


def cpu_seconds() -> float:
    """CPU time of this process and of its waited-for children (ptxas): what a compile costs
    on a machine whose other load stretches the wall-clock time."""
    children = os.times()
    return time.process_time() + children.children_user + children.children_system


def import_cpu(side: str) -> dict:
    start = cpu_seconds()
    __import__(PACKAGE[side])
    return dict(cpu=cpu_seconds() - start)


def compile_tilec(job: dict) -> dict:
    import logging

    import tilec

    kernel = kernel_of("tilec", job)
    signature, constexprs, divisible, unit = specialization(job)
    stages: dict[str, float] = {}

    class Stages(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            if "stage %s took" in str(record.msg):
                stages[record.args[1]] = stages.get(record.args[1], 0.0) + record.args[2]

    logger = logging.getLogger("tilec.pipeline.stages")
    logger.addHandler(Stages())
    logger.setLevel(logging.INFO)
    start, cpu = time.perf_counter(), cpu_seconds()
    compiled = tilec.compile(
        kernel, signature, constexprs, backend="nvidia", target="sm_90a",
        num_warps=job["warps"], num_stages=job["stages"], divisibility=divisible,
        equal_to_1=unit,
    )  # fmt: skip
    seconds, cpu = time.perf_counter() - start, cpu_seconds() - cpu
    assert compiled.asm.get("cubin"), "no cubin: is ptxas installed?"
    return dict(seconds=seconds, cpu=cpu, stages=stages)


def compile_triton(job: dict) -> dict:
    import triton
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource

    kernel = kernel_of("triton", job)
    signature, constexprs, divisible, unit = specialization(job)
    values = {**constexprs, **dict.fromkeys(unit, 1)}  # Triton compiles ints equal to 1 in
    names = list(kernel.arg_names)
    full = {n: "constexpr" if n in values else signature[n] for n in names}
    attrs = {(names.index(n),): [["tt.divisibility", 16]] for n in divisible}
    source = ASTSource(fn=kernel, signature=full, constexprs=values, attrs=attrs)
    options = {"num_warps": job["warps"], "num_stages": job["stages"]}
    start, cpu = time.perf_counter(), cpu_seconds()
    compiled = triton.compile(source, target=GPUTarget("cuda", 90, 32), options=options)
    seconds, cpu = time.perf_counter() - start, cpu_seconds() - cpu
    assert compiled.asm.get("cubin")
    return dict(seconds=seconds, cpu=cpu, stages={})


def launch(side: str, profile: int = 0) -> dict:
    """The vector add's first three launches in this process (cache written by an earlier
    one), each waited for; `skip` where there is no GPU. With `profile`, the first launch's
    cProfile (wall clock): its `profile` costliest functions by cumulative time, as text."""
    try:
        import torch
    except ImportError:
        return dict(skip="no torch")
    if not torch.cuda.is_available():
        return dict(skip="no GPU")
    start = time.perf_counter()
    front = __import__(PACKAGE[side])
    imported = time.perf_counter() - start
    kernel = kernel_of(side, dict(kernel="add"))
    n = 98432
    x, y = torch.rand(n, device="cuda"), torch.rand(n, device="cuda")
    out = torch.empty_like(x)
    torch.cuda.synchronize()
    times, vendor, profiler = [], None, None
    loaded = set(sys.modules)  # what torch and the import loaded are not the launch's
    for _ in range(3):
        if profile and vendor is None:
            import cProfile

            profiler = cProfile.Profile()
            profiler.enable()
        begin = time.perf_counter()
        kernel[(front.cdiv(n, 1024),)](x, y, out, n, BLOCK_SIZE=1024)
        torch.cuda.synchronize()
        times.append(time.perf_counter() - begin)
        if vendor is None:  # what the first launch imported of cuda-python
            vendor = sorted(m for m in set(sys.modules) - loaded if m.startswith(CUDA_PYTHON))
            if profiler is not None:
                profiler.disable()
    assert torch.equal(out, x + y)
    found = dict(imported=imported, launches=times, cuda_python=vendor)
    if profiler is not None:
        import io
        import pstats

        text = io.StringIO()
        pstats.Stats(profiler, stream=text).sort_stats("cumulative").print_stats(profile)
        found["profile"] = text.getvalue()
    return found


def launch_interp() -> dict:
    """tilec's vector add on the interp backend (4096 elements): the first three launches in
    this process, the disk cache written by an earlier one. A CPU machine's measure of what a
    launch from the cache loads and builds; the interpreter's run is in it."""
    import numpy as np

    start, cpu = time.perf_counter(), time.process_time()
    import tilec  # noqa: F401  (timed: the import itself)

    imported, imported_cpu = time.perf_counter() - start, time.process_time() - cpu
    kernel = kernel_of("tilec", dict(kernel="add"))
    x = np.arange(4096, dtype=np.float32)
    out = np.empty_like(x)
    times, cpus = [], []
    for _ in range(3):
        begin, cpu = time.perf_counter(), time.process_time()
        kernel[(4,)](x, x, out, 4096, BLOCK_SIZE=1024, backend="interp")
        times.append(time.perf_counter() - begin)
        cpus.append(time.process_time() - cpu)
    assert (out == x + x).all()
    return dict(imported=imported, launches=times, imported_cpu=imported_cpu, cpus=cpus)


def launch_fake() -> dict:
    """tilec's vector add on the nvidia backend over a fake libcuda.so.1 (ctypes callbacks with
    cuda.h's prototypes, `tests/nvidia/fake_libcuda.py`) and a fake torch (tensors that are an
    address): the first three launches in this process, the disk cache written by an earlier
    one. The host's part of a first launch from the cache (the driver calls cost the fake's
    callbacks, not a GPU's), measured on any machine with cuda-bindings installed. Where torch
    is installed it is imported first, as the GPU rows' program has (NumPy, ctypes and the
    standard library's modules it loads are not the first launch's), then hidden by the fake."""
    sys.path.insert(0, str(HERE.parent / "tests" / "nvidia"))
    from fake_libcuda import FakeLibCuda
    from launch_path import install_fake_torch

    with contextlib.suppress(ImportError):
        import torch  # noqa: F401  (what a program has loaded before its first launch)
    Tensor = install_fake_torch()
    os.environ["TILEC_BACKEND"] = "nvidia"
    start, cpu = time.perf_counter(), time.process_time()
    import tilec  # noqa: F401  (timed: the import itself)

    imported, imported_cpu = time.perf_counter() - start, time.process_time() - cpu
    from tilec_nvidia import libcuda

    fake = FakeLibCuda(current=0x1234)  # torch's context, current
    libcuda.reset(libcuda.LibCuda(fake.lookup))
    kernel = kernel_of("tilec", dict(kernel="add"))
    x, y, out = Tensor(0x10000), Tensor(0x20000), Tensor(0x30000)
    times, cpus, vendor = [], [], None
    loaded = set(sys.modules)  # torch's own imports are not the launch's
    for _ in range(3):
        begin, cpu = time.perf_counter(), time.process_time()
        kernel[(4,)](x, y, out, 4096, BLOCK_SIZE=1024)
        times.append(time.perf_counter() - begin)
        cpus.append(time.process_time() - cpu)
        if vendor is None:
            vendor = sorted(m for m in set(sys.modules) - loaded if m.startswith(CUDA_PYTHON))
    assert len(fake.launches) == 3, fake.launches
    return dict(imported=imported, launches=times, imported_cpu=imported_cpu, cpus=cpus,
                cuda_python=vendor)  # fmt: skip


def tilec_packages() -> dict:
    """The folders of tilec's package and of its plugins' top-level packages (those of the
    `tilec` entry points), for `--no-bytecode`."""
    import importlib.util

    from tilec.plugin import entry_point_index

    found = entry_point_index.entry_points("tilec")
    names = {"tilec"} | {e.value.partition(":")[0].split(".")[0].strip() for e in found}
    folders = []
    for name in sorted(names):
        spec = importlib.util.find_spec(name)
        if spec is not None and spec.origin is not None:
            folders.append(os.path.dirname(spec.origin))
    return dict(folders=folders)


def worker(spec: dict) -> dict:
    if spec["what"] == "tilec_packages":
        return tilec_packages()
    if spec["what"] == "launch":
        return launch(spec["side"], spec.get("profile", 0))
    if spec["what"] == "launch_fake":
        return launch_fake()
    if spec["what"] == "launch_interp":
        return launch_interp()
    if spec["what"] == "import":
        return import_cpu(spec["side"])
    run = compile_tilec if spec["side"] == "tilec" else compile_triton
    return run(spec["job"])


# The parent: fresh processes, best of N ------------------------------------------------------


class Runner:
    def __init__(self, pythons: dict[str, str], root: Path):
        self.pythons = pythons
        self.root = root
        self.env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
        self.env["PYTHONPYCACHEPREFIX"] = str(root / "pycache")
        self.env["TILEC_CACHE_KEY_FILE"] = str(root / "cache-key")
        self.count = 0
        self.script = Path(__file__).resolve()
        """The script whose `--worker SPEC` each measurement runs (another benchmark's own)."""

    tools: Path | None = None
    """With `--warm-tools`: the tools an earlier process found (tilec's `tools/`, the ptxas
    lookup), copied into each fresh cache folder."""

    def remember_tools(self) -> None:
        """One untimed lookup of ptxas, whose remembered answer every fresh folder starts with:
        a user's first compile of a kernel, not the first compile ever on the machine."""
        seed = self.root / "seed"
        code = "from tilec_nvidia.codegen import find_ptxas; find_ptxas()"
        env = {**self.env, "TILEC_CACHE_DIR": str(seed)}
        subprocess.run([self.pythons["tilec"], "-c", code], env=env, check=True)
        self.tools = seed / "tools"

    def fresh_caches(self) -> dict[str, str]:
        self.count += 1
        folder = self.root / f"cache{self.count}"
        if self.tools is not None and self.tools.is_dir():
            shutil.copytree(self.tools, folder / "tilec" / "tools")
        return {
            "TILEC_CACHE_DIR": str(folder / "tilec"),
            "TRITON_CACHE_DIR": str(folder / "triton"),
        }

    def run(self, side: str, spec: dict, caches: dict[str, str] | None = None) -> dict:
        env = {**self.env, **(caches or self.fresh_caches())}
        command = [self.pythons[side], str(self.script), "--worker", json.dumps(spec)]
        result = subprocess.run(command, env=env, capture_output=True, text=True, check=False)
        if result.returncode != 0:
            return dict(error=(result.stderr.strip().splitlines() or ["failed"])[-1][:300])
        return json.loads(result.stdout.strip().splitlines()[-1])

    def drop_tilec_bytecode(self) -> list[str]:
        """`--no-bytecode`: remove the `.pyc` files of tilec's and its plugins' packages from
        the children's bytecode folder, an empty file in each one's place so that no child
        writes them again; the packages' folders."""
        folders = self.run("tilec", dict(what="tilec_packages"))["folders"]
        prefix = Path(self.env["PYTHONPYCACHEPREFIX"])
        for folder in folders:
            kept = prefix / Path(folder).relative_to(Path(folder).anchor)
            shutil.rmtree(kept, ignore_errors=True)
            kept.parent.mkdir(parents=True, exist_ok=True)
            kept.write_bytes(b"")  # not a folder: no .pyc is read or written below it
        return folders

    def import_ms(self, side: str) -> float:
        package = PACKAGE[side]
        command = [self.pythons[side], "-X", "importtime", "-c", f"import {package}"]
        result = subprocess.run(command, env=self.env, capture_output=True, text=True, check=True)
        for line in result.stderr.splitlines():
            parts = [p.strip() for p in line.split("|")]
            if len(parts) == 3 and parts[2] == package:
                return int(parts[1]) / 1000
        raise RuntimeError(f"no import time of {package} in: {result.stderr[-300:]}")


STATISTIC = {"best": min, "median": statistics.median}
statistic = min
"""How a row's measurements become its number: the best (default) or, with `--median`, the
median (a shared machine's load makes the best of a few runs a matter of luck)."""


def best(values: list[float]) -> float:
    return statistic(values) if values else float("nan")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    parser.add_argument("--repeat", type=int, default=5, help="measurements a row (best kept)")
    parser.add_argument("--all", action="store_true", help="every matmul and attention config")
    parser.add_argument("--triton-python", default=sys.executable,
                        help="an interpreter that imports triton (default: this one)")  # fmt: skip
    parser.add_argument("--only", default="import,add,matmul,attention,launch")
    parser.add_argument("--json", help="write the measurements here too")
    parser.add_argument("--warm-tools", action="store_true",
                        help="tilec's fresh caches hold the ptxas an earlier process found")  # fmt: skip
    parser.add_argument("--median", action="store_true",
                        help="the median of the repeats, not the best")  # fmt: skip
    parser.add_argument("--no-bytecode", action="store_true",
                        help="tilec's packages without .pyc files (an editable install under "
                        "PYTHONDONTWRITEBYTECODE=1); default: every package's bytecode")  # fmt: skip
    parser.add_argument("--profile-launch", type=int, default=0, metavar="N",
                        help="after the launch rows, a cProfile of tilec's first launch from the "
                        "disk cache (one more process): its N costliest functions")  # fmt: skip
    args = parser.parse_args()
    global statistic
    statistic = STATISTIC["median" if args.median else "best"]
    if args.worker:
        print(json.dumps(worker(json.loads(args.worker))))
        return 0
    only = set(args.only.split(","))
    pythons = {"tilec": sys.executable}
    try:
        check = subprocess.run([args.triton_python, "-c", "import triton"], capture_output=True)
    except OSError:  # no such interpreter
        check = None
    if check is not None and check.returncode == 0:
        pythons["triton"] = args.triton_python
    else:
        print(f"Triton: not importable by {args.triton_python}; tilec's rows only")
    sides = [s for s in SIDES if s in pythons]
    results: dict = {"rows": []}
    with tempfile.TemporaryDirectory(prefix="compile_time_") as folder:
        runner = Runner(pythons, Path(folder))
        if args.warm_tools:
            runner.remember_tools()
        for side in sides:  # fill the bytecode caches: not timed
            runner.import_ms(side)
        if args.no_bytecode:
            folders = runner.drop_tilec_bytecode()
            results["bytecode"] = f"none for tilec's packages ({', '.join(folders)})"
        else:
            results["bytecode"] = "every package's .pyc files (an untimed run wrote them)"
        print(f"bytecode: {results['bytecode']}")
        print("| row | " + " | ".join(sides) + (" | tilec/Triton |" if len(sides) == 2 else " |"))
        print("|---" * (len(sides) + 1 + (len(sides) == 2)) + "|")
        if "import" in only:
            times = {s: best([runner.import_ms(s) for _ in range(args.repeat)]) for s in sides}
            emit(results, "import (ms, wall: -X importtime)", times, sides)
            cpu = {s: [runner.run(s, dict(what="import", side=s)) for _ in range(args.repeat)]
                   for s in sides}  # fmt: skip
            times = {s: best([1000 * r["cpu"] for r in cpu[s] if "cpu" in r]) for s in sides}
            emit(results, "import (ms, CPU)", times, sides)
        for job in jobs(args.all):
            if job["kernel"] not in only:
                continue
            measured: dict[str, list[dict]] = {s: [] for s in sides}
            for _ in range(args.repeat):  # the sides in turn: both see the same load
                for side in sides:
                    spec = dict(what="compile", side=side, job=job)
                    measured[side].append(runner.run(side, spec))
            times, notes = {}, {}
            for side, runs in measured.items():
                good = [r for r in runs if "seconds" in r]
                times[side] = best([1000 * r["seconds"] for r in good])
                if not good:
                    notes[side] = runs[0].get("error", "failed")
                    continue
                fastest = sorted(good, key=lambda r: r["seconds"])[
                    (len(good) - 1) // 2 if args.median else 0
                ]  # the run whose stages are shown: the best, or the median one
                if fastest["stages"]:
                    front = fastest["seconds"] - sum(fastest["stages"].values())
                    parts = {"front": front, **fastest["stages"]}
                    notes[side] = ", ".join(f"{k} {1000 * v:.0f}" for k, v in parts.items())
            emit(results, f"{job['label']}, to cubin (ms, wall)", times, sides, notes)
            times = {s: best([1000 * r["cpu"] for r in runs if "cpu" in r])
                     for s, runs in measured.items()}  # fmt: skip
            emit(results, f"{job['label']}, to cubin (ms, CPU with ptxas)", times, sides)
        if "launch" in only:
            launch_rows(runner, sides, args.repeat, results, args.profile_launch)
            interp_rows(runner, args.repeat, results)
            fake_gpu_rows(runner, args.repeat, results)
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=1))
    return 0


def launch_rows(
    runner: Runner, sides: list[str], repeat: int, results: dict, profile: int = 0
) -> None:
    firsts: dict[str, list] = {s: [] for s in sides}
    folders: dict[str, dict] = {}
    for side in sides:
        caches = folders[side] = runner.fresh_caches()
        warm = runner.run(side, dict(what="launch", side=side), caches)  # writes the cache
        if "skip" in warm or "error" in warm:
            reason = warm.get("skip") or warm.get("error")
            print(f"| first launch from a warm disk cache, new process | {side}: skipped "
                  f"({reason}: GPU machine only) |")  # fmt: skip
            continue
        firsts[side] = [runner.run(side, dict(what="launch", side=side), caches)
                        for _ in range(repeat)]  # fmt: skip
    measured = [s for s in sides if firsts[s] and all("launches" in r for r in firsts[s])]
    if not measured:
        return
    for index, what in enumerate(("first", "second", "third")):
        times = {s: best([1000 * r["launches"][index] for r in firsts[s]]) for s in measured}
        emit(results, f"vector add, {what} launch, new process, warm disk cache (ms)", times,
             measured)  # fmt: skip
    times = {s: best([1000 * r["imported"] for r in firsts[s]]) for s in measured}
    emit(results, "import in that process (ms, wall)", times, measured)
    for side in measured:
        print_cuda_python(f"{side}'s", firsts[side])
    if profile and "tilec" in measured:
        spec = dict(what="launch", side="tilec", profile=profile)
        print(runner.run("tilec", spec, folders["tilec"]).get("profile", "no profile"))


def print_cuda_python(whose: str, runs: list[dict]) -> None:
    """What of cuda-python the first launches of `runs` imported (their `cuda_python`)."""
    loaded = sorted({m.split(".")[1] for r in runs for m in r.get("cuda_python") or ()})
    print(f"{whose} first launch imported of cuda-python: "
          f"{', '.join(f'cuda.{m}' for m in loaded) or 'nothing'}")  # fmt: skip


def tilec_launch_runs(runner: Runner, what: str, repeat: int, label: str) -> list[dict]:
    """`repeat` runs of worker `what` in new processes whose disk cache an earlier one wrote;
    none (said in a row named `label`) where they failed."""
    caches = runner.fresh_caches()
    spec = dict(what=what, side="tilec")
    warm = runner.run("tilec", spec, caches)  # compiles and writes the cache
    runs = [runner.run("tilec", spec, caches) for _ in range(repeat)]
    runs = [r for r in runs if "launches" in r]
    if not runs:
        print(f"| {label} | failed: {warm.get('error', '?')} |")
    return runs


def fake_gpu_rows(runner: Runner, repeat: int, results: dict) -> None:
    runs = tilec_launch_runs(runner, "launch_fake", repeat, "nvidia over a fake libcuda")
    if not runs:
        return
    for index, what in enumerate(("first", "second")):
        times = {"tilec": best([1000 * r["launches"][index] for r in runs])}
        emit(results, f"vector add on nvidia over a fake libcuda (CPU machine's measure), {what} "
             "launch, new process, warm disk cache (ms; tilec only)", times, ["tilec"])  # fmt: skip
        times = {"tilec": best([1000 * r["cpus"][index] for r in runs])}
        emit(results, f"the same, {what} launch (ms, CPU)", times, ["tilec"])
    print_cuda_python("its", runs)


def interp_rows(runner: Runner, repeat: int, results: dict) -> None:
    runs = tilec_launch_runs(runner, "launch_interp", repeat, "interp launch rows")
    if not runs:
        return
    for index, what in enumerate(("first", "second")):
        times = {"tilec": best([1000 * r["launches"][index] for r in runs])}
        emit(results, f"vector add on interp (4096), {what} launch, new process, warm disk "
             "cache (ms; tilec only)", times, ["tilec"])  # fmt: skip
    times = {"tilec": best([1000 * (r["imported"] + r["launches"][0]) for r in runs])}
    emit(results, "the same, import tilec + first launch (ms; what moved out of the import "
         "is in the launch)", times, ["tilec"])  # fmt: skip
    times = {"tilec": best([1000 * r["cpus"][0] for r in runs])}
    emit(results, "the same, first launch (ms, CPU)", times, ["tilec"])
    times = {"tilec": best([1000 * (r["imported_cpu"] + r["cpus"][0]) for r in runs])}
    emit(results, "the same, import tilec + first launch (ms, CPU)", times, ["tilec"])


def emit(results: dict, label: str, times: dict, sides: list[str], notes=None) -> None:
    notes = notes or {}
    cells = []
    for side in sides:
        value = times.get(side, float("nan"))
        cell = f"{value:.0f}" if value == value else "-"
        if side in notes:
            cell += f" ({notes[side]})"
        cells.append(cell)
    ratio = ""
    if len(sides) == 2:
        tilec, triton = times.get("tilec", float("nan")), times.get("triton", float("nan"))
        ratio = f" {tilec / triton:.2f} |" if tilec == tilec and triton == triton else " - |"
    print(f"| {label} | " + " | ".join(cells) + " |" + ratio, flush=True)
    results["rows"].append(dict(label=label, times=times, notes=notes))


if __name__ == "__main__":
    sys.exit(main())
