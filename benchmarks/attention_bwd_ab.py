"""A/B timing of compiler variants on the attention backward's losing sweep cases (issue 23).

    python benchmarks/attention_bwd_ab.py [--variants base,rings,...] [--cases ...] [--json FILE]
                                          [--jobs N] [--dry-run] [--list]

The kernels, inputs, checks and timer are benchmarks/sweep.py's (`attention bwd`, Triton 3.6
tutorial 06's backward, config 64x64x64x64 SLICE=2 w4 s3, the one both sides chose on the H200).
Each variant runs in its own process with a fresh TILEC_CACHE_DIR: it applies its switch (a
patch of tilec's passes or of the PTX, or a rewritten kernel source for tilec's side only), then
for every case checks tilec's and Triton's outputs against torch (sweep.check, poisoned outputs)
and times both in the same process in ROUNDS alternating rounds (sweep.time_rounds, each side's
own do_bench). Triton always compiles the sweep's source as is, so each row is the variant's
tilec against the same Triton. Before timing, `--jobs` worker processes launch every variant's
kernels once (compiling into the variants' caches, in parallel); `base` is timed first and last
(`base-again`), which shows the run's noise.

Variants (`--list`):
  base        tilec as it is.
  main-only   tilec as it is, both sides timed without the Delta kernel (sweep_attn_bwd alone):
              how much of a case's gap is the main kernel's.
  rings       the dK/dV loop's m and Delta loads ringed (LDGSTS into shared memory) whatever the
              residency (05bfca6 rings them only at one block an SM: d128).
  no-rings    m and Delta plain loads in every loop (the fifth session's no-ring A/B).
  no-defer    loop-invariant dot operands stored where they stand (before 4ec2c7d).
  hoist-a     wgmma's A registers packed before wgmma.fence (attention_static.hoist_a_packing,
              a PTX patch: no C7519 warpgroup.arrive injected by ptxas).
  hoist-lowering  the same in the lowering (wgmma_lowering.HOIST_A_MIN_N = 0: A packed and
              threaded through the fence at every N, not from N = 128 on; d128 unchanged).
  ahead       source variant (tilec side only): the dK/dV loops load m and Delta of the next
              iteration at the end of the current one (masked past the loop's last row), a
              register prefetch one iteration ahead.
  s2, s4      the config with 2 or 4 stages on tilec's side (Triton keeps s3).
  ptxas-triton  tilec's PTX assembled by Triton's own ptxas (12.8 in Triton 3.6's wheel), not
              the one tilec finds (the CPU machine's is 13.0): the same assembler both sides.

`a+b` combines variants (`hoist-lowering+rings`: both switches).

`--dry-run` needs no GPU: each variant compiles the cases' kernels for sm_90a (tilec.compile)
and prints ptxas's registers, spills and shared memory (a check that every variant builds).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
if str(HERE) not in sys.path:
    sys.path.insert(0, str(HERE))

CASES = {
    "512x64n": (512, 64, False),
    "1024x64n": (1024, 64, False),
    "1024x128c": (1024, 128, True),
    "4096x128c": (4096, 128, True),
    "512x64c": (512, 64, True),
}
"""Short name: (N, head dim, causal); batch 16384 / N, 16 heads as in the sweep. 512x64c is the
control (at Triton's speed in the sweep)."""
CONFIG = (64, 64, 64, 64, 2, 4, 3)
"""BLOCK_M1, BLOCK_N1, BLOCK_M2, BLOCK_N2, SLICE, num_warps, num_stages."""
STAGES = {"s2": 2, "s4": 4}
SAME_AS_BASE = ("base-again", "main-only")
"""Variants that compile as `base` (its cache)."""
DEFAULT_VARIANTS = "base,main-only,rings,no-defer,hoist-lowering,ahead,s2,ptxas-triton,base-again"


# The variants' switches (applied in the variant's process, before anything compiles) ---------


def _rings() -> None:
    import tilec.layout.pipeline_loops as loops

    loops._vector_rings = lambda sizes, target: True


def _no_rings() -> None:
    import tilec.layout.pipeline_loops as loops

    loops._register_load = lambda op, block: False


def _no_defer() -> None:
    """The loop-invariant operands' stores emitted where the dot's operand conversion stands:
    whatever `lower_to_shared` put off (`LoweringContext.defer`) is emitted at once."""
    import tilec_nvidia.wgmma_lowering as wgmma
    from tilec.lowering.matrix_units import CONVERSIONS
    from tilec_nvidia.tensor_core_layouts import NvmmaSharedEncodingAttr

    class Blocking:  # an op that every deferred publication waits behind
        regions = (None,)
        operands = ()

        def has_trait(self, trait):
            return False

    def stored_now(ctx, op, lower=wgmma.lower_to_shared):
        pending = len(ctx.deferred)
        done = lower(ctx, op)
        if len(ctx.deferred) > pending:
            ctx.deferred.pop()(Blocking())
        return done

    CONVERSIONS[NvmmaSharedEncodingAttr] = stored_now


def _hoist_a() -> None:
    from attention_static import hoist_a_packing

    import tilec_nvidia.codegen as codegen

    fix = codegen.avoid_ptxas_negation_bugs
    codegen.avoid_ptxas_negation_bugs = lambda ptx: hoist_a_packing(fix(ptx))


def _hoist_lowering() -> None:
    """The lowering's own hoisting (wgmma_lowering.HOIST_A_MIN_N, 128: the backward's RS dots at
    d64 have N = 64) at every N."""
    import tilec_nvidia.wgmma_lowering as wgmma

    wgmma.HOIST_A_MIN_N = 0


def _triton_ptxas() -> None:
    """tilec's PTX assembled by the ptxas in Triton's wheel (12.8 for Triton 3.6), the one that
    assembles Triton's side (`--triton-ptxas` names it where Triton is not importable)."""
    import tilec_nvidia.codegen as codegen

    path = TRITON_PTXAS[0]
    if path is None:
        from triton.backends.nvidia.compiler import get_ptxas

        path = get_ptxas(90).path
    os.environ["TILEC_PTXAS"] = path
    codegen.find_ptxas.cache_clear()


TRITON_PTXAS: list[str | None] = [None]


def ptxas_version() -> str:
    """The ptxas tilec uses: its path's last two parts and its release."""
    from tilec_nvidia.codegen import find_ptxas

    path = find_ptxas()
    if path is None:
        return "none"
    text = subprocess.run([path, "--version"], capture_output=True, text=True).stdout
    release = re.search(r"release ([\d.]+)", text)
    return f"{release[1] if release else '?'} ({'/'.join(Path(path).parts[-2:])})"


PATCHES = {"rings": _rings, "no-rings": _no_rings, "no-defer": _no_defer, "hoist-a": _hoist_a,
           "hoist-lowering": _hoist_lowering, "ptxas-triton": _triton_ptxas}  # fmt: skip
VARIANTS = ("base", "base-again", "main-only", *PATCHES, "ahead", *STAGES)

_LOOP = """    for _ in range(steps):
        q_t = tl.load(q_t_ptrs)
        m = tl.load(M + offs_m)
"""
_AHEAD_LOOP = """    end = start_m + steps * BLOCK_M1
    m = tl.load(M + offs_m, mask=offs_m < end, other=0.0)
    d_next = tl.load(D + offs_m, mask=offs_m < end, other=0.0)
    for _ in range(steps):
        q_t = tl.load(q_t_ptrs)
"""
_DELTA = "ds_t = p_t * (dp_t - tl.load(D + offs_m)[None, :])"
_AHEAD_DELTA = "ds_t = p_t * (dp_t - d_next[None, :])"
_STEP = "        offs_m += BLOCK_M1\n        q_t_ptrs"
_AHEAD_STEP = """        offs_m += BLOCK_M1
        m = tl.load(M + offs_m, mask=offs_m < end, other=0.0)
        d_next = tl.load(D + offs_m, mask=offs_m < end, other=0.0)
        q_t_ptrs"""


def ahead_source(text: str) -> str:
    """sweep_attention.py with the dK/dV loop's m and Delta loaded an iteration ahead."""
    for old, new in ((_LOOP, _AHEAD_LOOP), (_DELTA, _AHEAD_DELTA), (_STEP, _AHEAD_STEP)):
        if text.count(old) != 1:
            raise SystemExit(f"attention_bwd_ab: sweep_attention.py changed, cannot find {old!r}")
        text = text.replace(old, new)
    return text


def tilec_kernels(variant: str, folder: Path) -> dict:
    """The sweep's kernels under tilec, for `ahead` from a rewritten copy of sweep_attention.py
    (tilec reads a kernel's source back from its file, so the copy is written to `folder`)."""
    from sweep import KERNEL_FILES, load_kernels

    if "ahead" not in parts(variant):
        return load_kernels("tilec")
    import tilec
    import tilec.language as tl

    namespace = {"jit": tilec.jit, "tl": tl, "__name__": "sweep_kernels_tilec_ahead"}
    for name in KERNEL_FILES:
        text = (HERE / name).read_text()
        if name == "sweep_attention.py":
            text = ahead_source(text)
        path = folder / name
        path.write_text(text)
        exec(compile(text, str(path), "exec"), namespace)
    return namespace


def parts(variant: str) -> list[str]:
    """A variant's switches: `a+b` applies a and b."""
    return variant.split("+")


def apply(variant: str) -> None:
    for part in parts(variant):
        if part in PATCHES:
            PATCHES[part]()


def case_list(names: list[str]) -> list:
    from sweep_cases import attention

    cases = []
    for name in names:
        n, d, causal = CASES[name]
        cases.append(attention(n, d, causal, True, configs=[CONFIG]))
    return cases


def tilec_config(variant: str) -> tuple:
    stages = [STAGES[p] for p in parts(variant) if p in STAGES]
    return (*CONFIG[:-1], stages[-1]) if stages else CONFIG


def main_launcher(case, kernels, inputs, outputs, config):
    """The launch of `sweep_attn_bwd` alone (AttentionCase.launch without the Delta kernel,
    whose output the check left in `outputs`)."""
    q = inputs["q"]
    batch, heads, n, d = q.shape
    block_m1, block_n1, block_m2, block_n2, slice_, warps, stages = config
    kernel = kernels["sweep_attn_bwd"][(n // block_n1, batch * heads)]
    args = (q, inputs["k_scaled"], inputs["v"], inputs["scale"], inputs["do"], outputs["dq"],
            outputs["dk"], outputs["dv"], inputs["m"], outputs["delta"], *q.stride()[:3], heads,
            n)  # fmt: skip
    meta = dict(BLOCK_M1=block_m1, BLOCK_N1=block_n1, BLOCK_M2=block_m2, BLOCK_N2=block_n2,
                SLICE=slice_, HEAD_DIM=d, CAUSAL=case.fields["causal"], num_warps=warps,
                num_stages=stages)  # fmt: skip
    return lambda: kernel(*args, **meta)


# One variant's process --------------------------------------------------------------------------


def worker(variant: str, names: list[str], mode: str, folder: Path, quick: bool) -> list[dict]:
    """mode 'warm': launch each case's kernels once (compiling); 'time': check and time."""
    import sweep
    from sweep import check, first_line, make_env, time_rounds, torch_sync

    apply(variant)
    kernels = {"tilec": tilec_kernels(variant, folder)}
    if mode == "time":
        kernels["triton"] = sweep.load_kernels("triton")
    env = make_env(False, 0)
    sync = torch_sync(env.device)
    rows = []
    for case in case_list(names):
        row = {"variant": variant, "case": case.label, "tilec": {}, "triton": {}}
        row["ptxas"] = ptxas_version()
        inputs = case.setup(env)
        expected = case.expected(inputs)
        chosen = {}
        for side, namespace in kernels.items():
            config = tilec_config(variant) if side == "tilec" else CONFIG
            row[side]["config"] = case.describe(config)
            try:
                outputs, error = check(case, namespace, inputs, expected, config, sync)
            except Exception as failure:
                row[side]["failure"] = first_line(failure)
                continue
            row[side]["error"] = error
            launch = main_launcher if "main-only" in parts(variant) else sweep.launcher
            chosen[side] = launch(case, namespace, inputs, outputs, config)
        if mode == "time":
            for side in chosen:
                row[side]["failures"] = []
            time_rounds(case, chosen, row, quick)
            if "us" in row["tilec"] and "us" in row["triton"]:
                row["speed"] = row["triton"]["us"] / row["tilec"]["us"]
        rows.append(row)
        del inputs, expected, chosen
    return rows


def dry_worker(variant: str, names: list[str], folder: Path) -> list[dict]:
    """Compile every case's kernels for sm_90a (no GPU): ptxas's registers, spills, shared."""
    from attention_bwd_static import signature

    import tilec
    from tilec_nvidia.codegen import ptx_to_cubin

    apply(variant)
    kernels = tilec_kernels(variant, folder)
    rows, seen = [], set()
    for name in names:
        _n, d, causal = CASES[name]
        if (d, causal) in seen:
            continue
        seen.add((d, causal))
        m1, n1, m2, n2, slice_, warps, stages = tilec_config(variant)
        const = dict(BLOCK_M1=m1, BLOCK_N1=n1, BLOCK_M2=m2, BLOCK_N2=n2, SLICE=slice_,
                     HEAD_DIM=d, CAUSAL=causal)  # fmt: skip
        sig = signature()
        compiled = tilec.compile(
            kernels["sweep_attn_bwd"], sig, const, backend="nvidia", target="sm_90a",
            num_warps=warps, num_stages=stages, divisibility=[k for k in sig if sig[k] != "fp32"],
        )  # fmt: skip
        info: dict = {}
        ptx_to_cubin(compiled.asm["ptx"], "sm_90a", info=info)
        ptxas = next(iter(info.values()))
        rows.append(dict(variant=variant, case=f"d{d} {'causal' if causal else 'non-causal'}",
                         registers=ptxas.registers, spill_stores=ptxas.spill_stores,
                         spill_loads=ptxas.spill_loads, shared=compiled.metadata["shared_bytes"],
                         ptx_lines=compiled.asm["ptx"].count("\n"), ptxas=ptxas_version()))  # fmt: skip
    return rows


# The driver ---------------------------------------------------------------------------------


def spawn(variant: str, args, mode: str, cache: Path) -> subprocess.Popen:
    command = [sys.executable, str(Path(__file__).resolve()), "--worker", variant,
               "--mode", mode, "--cases", ",".join(args.cases)]  # fmt: skip
    command += ["--quick"] if args.quick else []
    command += ["--triton-ptxas", args.triton_ptxas] if args.triton_ptxas else []
    env = dict(os.environ, TILEC_CACHE_DIR=str(cache))
    return subprocess.Popen(command, env=env, stdout=subprocess.PIPE, text=True)


def collect(process: subprocess.Popen, variant: str) -> list[dict]:
    out, _ = process.communicate()
    found = re.search(r"^AB-ROWS (.*)$", out or "", re.M)
    if process.returncode or not found:
        return [{"variant": variant, "failure": f"worker rc={process.returncode}"}]
    return json.loads(found.group(1))


def in_parallel(args, mode: str, caches: dict[str, Path]) -> list[dict]:
    """Every variant's worker in `mode`, `--jobs` processes at a time; their rows."""
    pending, running, rows = list(caches), [], []
    while pending or running:
        while pending and len(running) < args.jobs:
            variant = pending.pop(0)
            running.append((variant, spawn(variant, args, mode, caches[variant])))
        variant, process = running.pop(0)
        rows += collect(process, variant)
    return rows


def print_rows(rows: list[dict], dry: bool) -> None:
    if dry:
        print("| variant | kernel | registers | spill st/ld B | shared B | PTX lines | ptxas |")
        print("|---|---|---|---|---|---|---|")
        for r in rows:
            if "failure" in r:
                print(f"| {r['variant']} | FAILED: {r['failure']} | | | | | |")
                continue
            print(f"| {r['variant']} | {r['case']} | {r['registers']} | "
                  f"{r['spill_stores']}/{r['spill_loads']} | {r['shared']} | {r['ptx_lines']} | "
                  f"{r['ptxas']} |")  # fmt: skip
        return
    assemblers = {r["variant"]: r["ptxas"] for r in rows if "ptxas" in r}
    print("tilec's ptxas: " + ", ".join(f"{v} {p}" for v, p in assemblers.items()))
    print("| case | variant | tilec us (rounds) | triton us (rounds) | speed | tilec err |")
    print("|---|---|---|---|---|---|")
    order = list(dict.fromkeys(r["variant"] for r in rows))
    for r in sorted(rows, key=lambda r: (r.get("case", ""), order.index(r["variant"]))):
        if "failure" in r:
            print(f"| - | {r['variant']} | FAILED: {r['failure']} | | | |")
            continue
        cells = []
        for side in ("tilec", "triton"):
            s = r[side]
            if "us" in s:
                rounds = "/".join(f"{t:.0f}" for t in s["rounds_us"])
                cells.append(f"{s['us']:.1f} ({rounds})")
            else:
                cells.append(f"FAILED {s.get('failure') or s.get('failures')}")
        speed = f"{r['speed']:.3f}" if "speed" in r else "-"
        err = r["tilec"].get("error")
        err = f"{err:.1e}" if err is not None else "-"
        staged = any(p in STAGES for p in parts(r["variant"]))
        label = r["case"] + (f" [{r['tilec']['config']}]" if staged else "")
        print(f"| {label} | {r['variant']} | {cells[0]} | {cells[1]} | {speed} | {err} |")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--variants", default=DEFAULT_VARIANTS)
    parser.add_argument("--cases", default=",".join(CASES))
    parser.add_argument("--json")
    parser.add_argument("--jobs", type=int, default=8)
    parser.add_argument("--quick", action="store_true", help="sweep.py's --quick timing")
    parser.add_argument("--dry-run", action="store_true", help="compile for sm_90a, no GPU")
    parser.add_argument("--list", action="store_true")
    parser.add_argument("--triton-ptxas", help="ptxas-triton's ptxas (default: Triton's own)")
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    parser.add_argument("--mode", default="time", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    args.cases = args.cases.split(",")
    variants = args.variants.split(",")
    for name in variants:
        if not all(part in VARIANTS for part in parts(name)):
            parser.error(f"unknown variant {name!r}; the variants: {', '.join(VARIANTS)}")
    for name in args.cases:
        if name not in CASES:
            parser.error(f"unknown case {name!r}; the cases: {', '.join(CASES)}")
    if args.list:
        print(__doc__[__doc__.index("Variants") :])
        return 0
    TRITON_PTXAS[0] = args.triton_ptxas
    if args.worker:
        with tempfile.TemporaryDirectory(prefix="attention-bwd-ab-") as folder:
            if args.mode == "dry":
                rows = dry_worker(args.worker, args.cases, Path(folder))
            else:
                rows = worker(args.worker, args.cases, args.mode, Path(folder), args.quick)
        print("AB-ROWS " + json.dumps(rows), flush=True)
        return 0
    with tempfile.TemporaryDirectory(prefix="attention-bwd-ab-cache-") as top:
        # one cache a variant; base-again and main-only use base's
        caches = {v: Path(top) / ("base" if v in SAME_AS_BASE else v) for v in variants}
        rows = []
        compiled = {v: c for v, c in caches.items() if v not in SAME_AS_BASE}
        if "base" not in variants and any(v in SAME_AS_BASE for v in variants):
            compiled["base"] = caches[next(v for v in variants if v in SAME_AS_BASE)]
        if args.dry_run:
            print_rows(in_parallel(args, "dry", compiled), True)
        else:
            # launched once (compiling tilec's kernels), `--jobs` variants at a time; Triton
            # compiles in the first timing process, before it times anything
            start = time.perf_counter()
            failed = [r for r in in_parallel(args, "warm", compiled) if "failure" in r]
            seconds = time.perf_counter() - start
            print(f"compiled every variant's kernels in {seconds:.0f} s ({args.jobs} jobs)")
            for r in failed:
                print(f"warm-up of {r['variant']} failed: {r['failure']}")
            for variant in variants:
                start = time.perf_counter()
                done = collect(spawn(variant, args, "time", caches[variant]), variant)
                rows += done
                speeds = ", ".join(
                    f"{r['case'].split()[1]} {r['case'].split()[2][:3]} {r['speed']:.3f}"
                    if "speed" in r
                    else f"{r.get('case', '-')} failed"
                    for r in done
                )
                print(f"{variant} ({time.perf_counter() - start:.0f} s): {speeds}", flush=True)
                if args.json:
                    Path(args.json).write_text(json.dumps(rows, indent=1))
            print_rows(rows, False)
    return 0


if __name__ == "__main__":
    sys.exit(main())
