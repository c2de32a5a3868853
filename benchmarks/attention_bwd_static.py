"""Static comparison of tilec's and Triton's attention backward on sm_90a (issue 23): no GPU.

    python benchmarks/attention_bwd_static.py [--python OTHER_PYTHON] [--configs ...]
        [--out DIR] [--hoist-a]

The kernels are the sweep's (benchmarks/sweep_attention.py, Triton 3.6 tutorial 06's algorithm):
`sweep_attn_bwd_delta` (Delta = rowsum(O dO)) and `sweep_attn_bwd` (dK, dV, then dQ, of one key
block and one query block a program), executed under each compiler as the sweep does and
specialized as its launches on contiguous fp16 (batch, heads, N, D) tensors specialize them
(pointers and integers divisible by 16), compiled for sm_90a: tilec with `tilec.compile(...,
target="sm_90a")`, Triton with `triton.compile(ASTSource(...), GPUTarget("cuda", 90, 32))`. As
`attention_static.py` (whose ptxas, SASS and occupancy helpers this uses), `--python` names an
interpreter with Triton that compiles the side this one lacks.

Per kernel and side: ptxas registers, spills and warnings (C7519: registers of wgmma's A written
after its fence, so ptxas injects `warpgroup.arrive`s), shared memory, CTAs an SM; per loop (the
dK/dV loop and the dQ loop; when causal, their masked diagonal loops first): the PTX wgmma
shapes (SS: both operands in shared memory, RS: A in registers) and the SASS of the loop body:
instructions, HGMMA, WARPGROUP.ARRIVE, WARPGROUP.DEPBAR, BAR.SYNC, STS/LDS (shared-memory
layout conversions), LDG/LDGSTS, FADD, MUFU.EX2, uniform-datapath instructions (descriptor
arithmetic) and local memory. `--hoist-a` adds tilec's PTX with wgmma's A registers packed
before the fence (`attention_static.hoist_a_packing`). Nothing is timed.
"""

from __future__ import annotations

import argparse
import collections
import json
import re
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from attention_static import (  # noqa: E402
    _opcode,
    find_tool,
    hoist_a_packing,
    importable,
    occupancy,
    ptxas_report,
    sass_instructions,
    table,
)

POINTERS = ("Q", "K", "V", "DO", "DQ", "DK", "DV", "M", "D")
INTEGERS = ("stride_z", "stride_h", "stride_n", "H", "N_CTX")
CONFIGS = ["64:c:64x64x64x64:2:4:3", "128:n:64x64x64x64:2:4:3", "64:n:32x128x128x32:2:4:5",
           "128:c:64x64x64x64:2:4:3"]  # fmt: skip
"""The sweep's quick backward cases: head dim, causal (c) or not (n), BLOCK_M1 x BLOCK_N1 x
BLOCK_M2 x BLOCK_N2, SLICE, warps, stages."""
SIDES = ("tilec", "triton")


def parse(text: str) -> dict:
    head, causal, blocks, slice_, warps, stages = text.split(":")
    m1, n1, m2, n2 = (int(b) for b in blocks.split("x"))
    return dict(HEAD_DIM=int(head), CAUSAL=causal == "c", BLOCK_M1=m1, BLOCK_N1=n1,
                BLOCK_M2=m2, BLOCK_N2=n2, SLICE=int(slice_), warps=int(warps),
                stages=int(stages), name=text)  # fmt: skip


def signature() -> dict:
    return {**dict.fromkeys(POINTERS[:7], "*fp16"), "M": "*fp32", "D": "*fp32",
            "sm_scale": "fp32", **dict.fromkeys(INTEGERS, "i32")}  # fmt: skip


def delta_job(cfg: dict) -> tuple:
    sig = {"Out": "*fp16", "DO": "*fp16", "Delta": "*fp32", "N_CTX": "i32"}
    const = dict(BLOCK_M=cfg["BLOCK_N1"], HEAD_DIM=cfg["HEAD_DIM"])
    return "sweep_attn_bwd_delta", sig, const, 4, 1


def bwd_job(cfg: dict) -> tuple:
    const = {k: cfg[k] for k in ("BLOCK_M1", "BLOCK_N1", "BLOCK_M2", "BLOCK_N2", "SLICE",
                                 "HEAD_DIM", "CAUSAL")}  # fmt: skip
    return "sweep_attn_bwd", signature(), const, cfg["warps"], cfg["stages"]


def compile_side(side: str, configs: list[dict], out: Path) -> list[dict]:
    from sweep import load_kernels

    kernels = load_kernels(side)
    results = []
    for cfg in configs:
        for job in (delta_job(cfg), bwd_job(cfg)):
            name, sig, const, warps, stages = job
            stem = out / f"{side}_{name}_{cfg['name'].replace(':', '_')}"
            if side == "tilec":
                import tilec

                compiled = tilec.compile(
                    kernels[name], sig, const, backend="nvidia", target="sm_90a",
                    num_warps=warps, num_stages=stages,
                    divisibility=[n for n in sig if sig[n] != "fp32"],
                )  # fmt: skip
                ptx, cubin, shared = (compiled.asm["ptx"], compiled.asm["cubin"],
                                      compiled.metadata["shared_bytes"])  # fmt: skip
                from tilec_nvidia.codegen import find_ptxas

                ptxas = find_ptxas()
            else:
                import triton
                from triton.backends.compiler import GPUTarget
                from triton.backends.nvidia.compiler import get_ptxas
                from triton.compiler import ASTSource

                fn = kernels[name]
                names = list(fn.arg_names)
                full = {n: "constexpr" if n in const else sig[n] for n in names}
                attrs = {(names.index(n),): [["tt.divisibility", 16]]
                         for n in sig if sig[n] != "fp32"}  # fmt: skip
                source = ASTSource(fn=fn, signature=full, constexprs=const, attrs=attrs)
                compiled = triton.compile(source, target=GPUTarget("cuda", 90, 32),
                                          options={"num_warps": warps, "num_stages": stages})  # fmt: skip
                ptx, cubin, shared = (
                    compiled.asm["ptx"],
                    compiled.asm["cubin"],
                    compiled.metadata.shared,
                )
                ptxas = get_ptxas(90).path
            Path(f"{stem}.ptx").write_text(ptx)
            Path(f"{stem}.cubin").write_bytes(cubin)
            results.append(dict(side=side, config=cfg["name"], kernel=name, warps=warps,
                                ptx=f"{stem}.ptx", shared=int(shared), ptxas=ptxas))  # fmt: skip
    tools = {}
    if side == "triton":
        from attention_static import _triton_tool

        tools["cuobjdump"] = _triton_tool("cuobjdump")
    (out / f"{side}.json").write_text(json.dumps({"kernels": results, "tools": tools}))
    return results


def ptx_loops(ptx: str) -> list[list[str]]:
    """The instructions of each loop: from a label to the branch back to it."""
    lines = [line.strip() for line in ptx.splitlines()]
    labels = {m[1]: i for i, line in enumerate(lines) if (m := re.match(r"(\$L__BB\d+_\d+):", line))}  # fmt: skip
    loops = []
    for i, line in enumerate(lines):
        m = re.search(r"\bbra(?:\.uni)?\s+(\$L__BB\d+_\d+);", line)
        if m and labels.get(m[1], i) < i:
            loops.append(lines[labels[m[1]] + 1 : i + 1])
    return loops


def wgmma_shapes(body: list[str]) -> str:
    count = collections.Counter()
    for s in body:
        m = re.search(r"wgmma\.mma_async\.sync\.aligned\.(m\d+n\d+k\d+)[^ ]* \{[^}]*\}, (\{)?", s)
        if m:
            count[f"{m[1]} {'RS' if m[2] else 'SS'}"] += 1
    return ", ".join(f"{n} {k}" for k, n in count.items()) or "-"


def sass_loops(instructions: list[tuple[int, str]]) -> list[list[str]]:
    loops = []
    for address, text in instructions:
        m = re.search(r"\bBRA\s+(?:`\()?\S*?0x([0-9a-f]+)", text)
        if m and int(m[1], 16) < address:
            loops.append([t for a, t in instructions if int(m[1], 16) <= a <= address])
    return loops


SASS_KEYS = ("HGMMA", "WARPGROUP.ARRIVE", "WARPGROUP.DEPBAR", "BAR.SYNC", "STS", "LDS", "LDG",
             "LDGSTS", "FADD", "MUFU.EX2", "LDL", "STL")  # fmt: skip


def sass_row(body: list[str]) -> dict:
    ops = collections.Counter(_opcode(t) for t in body)
    row = {k: sum(n for o, n in ops.items() if o == k or o.startswith(k + ".")) for k in SASS_KEYS}
    row["uniform"] = sum(n for o, n in ops.items() if o.startswith("U") or o == "R2UR")
    row["instructions"] = len(body)
    return row


def analyse(kernel: dict, cuobjdump: str | None, ptx_path: str | None = None) -> dict:
    path = ptx_path or kernel["ptx"]
    report = ptxas_report(kernel["ptxas"], path)
    sass = sass_instructions(report["cubin"], cuobjdump) if cuobjdump and report["cubin"] else []
    ctas, per_scheduler = occupancy(report["registers"] or 255, kernel["warps"], kernel["shared"])
    return dict(report=report, ptx=[wgmma_shapes(b) for b in ptx_loops(Path(path).read_text())],
                sass=[sass_row(b) for b in sass_loops(sass)], total=len(sass), ctas=ctas,
                per_scheduler=per_scheduler)  # fmt: skip


def print_report(kernels: list[dict], cuobjdump: str | None, hoist: bool) -> None:
    rows, loop_rows = [], []
    for k in sorted(kernels, key=lambda k: (CONFIGS_ORDER.get(k["config"], 0), k["kernel"],
                                             SIDES.index(k["side"]))):  # fmt: skip
        variants = [(k["side"], None)]
        if hoist and k["side"] == "tilec" and k["kernel"] == "sweep_attn_bwd":
            with tempfile.NamedTemporaryFile("w", suffix=".ptx", delete=False) as f:
                f.write(hoist_a_packing(Path(k["ptx"]).read_text()))
            variants.append(("tilec hoist-a", f.name))
        for side, path in variants:
            a = analyse(k, cuobjdump, path)
            r = a["report"]
            rows.append([k["config"], k["kernel"], side, r["registers"], r["spills"],
                         r["warnings"], k["shared"], a["ctas"], a["total"]])  # fmt: skip
            for i, (shapes, s) in enumerate(zip(a["ptx"], a["sass"], strict=False)):
                loop_rows.append([k["config"], i, side, shapes, s["instructions"],
                                  *(s[key] for key in SASS_KEYS), s["uniform"]])  # fmt: skip
    print(table(["config", "kernel", "side", "regs", "spills st/ld", "ptxas warnings",
                 "shared B", "CTAs/SM", "SASS instr."], rows))  # fmt: skip
    print()
    print(table(["config", "loop", "side", "PTX wgmma", "SASS instr.", *SASS_KEYS, "uniform"],
                loop_rows))  # fmt: skip


CONFIGS_ORDER: dict[str, int] = {}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--configs", type=lambda s: s.split(","), default=CONFIGS)
    parser.add_argument("--python", action="append", default=[],
                        help="another interpreter that compiles the side this one cannot")  # fmt: skip
    parser.add_argument("--out", type=Path, help="folder for the PTX and cubins")
    parser.add_argument("--hoist-a", action="store_true",
                        help="also tilec's PTX with wgmma's A packed before the fence")  # fmt: skip
    parser.add_argument("--side", choices=SIDES, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    configs = [parse(c) for c in args.configs]
    CONFIGS_ORDER.update({c["name"]: i for i, c in enumerate(configs)})
    out = args.out or Path(tempfile.mkdtemp(prefix="attention-bwd-static-"))
    out.mkdir(parents=True, exist_ok=True)
    if args.side:
        compile_side(args.side, configs, out)
        return 0
    kernels, tools = [], {}
    for side in SIDES:
        if importable(side):
            kernels += compile_side(side, configs, out)
            continue
        for python in args.python:
            command = [python, str(Path(__file__).resolve()), "--side", side, "--out", str(out),
                       "--configs", ",".join(args.configs)]  # fmt: skip
            done = subprocess.run(command, capture_output=True, text=True, check=False)
            if done.returncode == 0:
                found = json.loads((out / f"{side}.json").read_text())
                kernels += found["kernels"]
                tools.update({k: v for k, v in found["tools"].items() if v})
                break
            print(f"{side}: {python} failed:\n{done.stderr[-2000:]}", file=sys.stderr)
    if not kernels:
        print("nothing compiled", file=sys.stderr)
        return 1
    print(f"artifacts: {out}\n")
    print_report(kernels, tools.get("cuobjdump") or find_tool("cuobjdump"), args.hoist_a)
    return 0


if __name__ == "__main__":
    sys.exit(main())
