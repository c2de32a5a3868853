"""Static comparison of tilec's and Triton's flash-attention forward on sm_90a (issue 10): no GPU.

    python benchmarks/attention_static.py [--configs 128:128x64:8:3,...] [--causal no|yes|both]
        [--kernel example|sweep] [--python OTHER_PYTHON] [--out DIR] [--variants]
        [--ptxas-wrappers DIR]

The kernel is `examples/attention.py`'s, exec'd under each compiler exactly as
`gpu_vs_triton.py` does (`load_kernels`), specialized as a launch on (4, 32, 4096, D) fp16
tensors specializes it (the last dimension's strides equal to 1, every other integer divisible
by 16, 16-byte aligned pointers); with `--kernel sweep`, the sweep's `sweep_attn_fwd`
(benchmarks/sweep_attention.py, which also stores M = m_i + log2(l_i)) as `sweep.py` executes
it, its pointers and integers divisible by 16. Either is compiled for sm_90a: tilec with `tilec.compile(...,
target="sm_90a")`, Triton with `triton.compile(ASTSource(...), GPUTarget("cuda", 90, 32))`.
Each side whose compiler this interpreter imports is compiled here; `--python` names another
interpreter (one with triton, say) that compiles the side this one lacks: the script runs
itself there with `--side` and reads the artifacts back. A side neither can compile is skipped
with a message.

Per kernel and side, of the main loop (the first `scf.for`: the unmasked key blocks):
1. IR (tilec's gir, Triton's TTGIR): the dots (asynchronous or not, their `pendings`), the
   waits, the cp.async copies, commit groups and waits, barriers, and the shared-memory
   allocations with their swizzle.
2. PTX: wgmma shapes and counts (RS: A in registers), fence / commit / wait_group, the registers
   written between a `wgmma.fence` and its wgmmas (ptxas must then inject `warpgroup.arrive`:
   C7519), cp.async, bar.sync, shuffles, ex2 (`.ftz` or not), f16x2 conversions, and float
   arithmetic that may not contract (`.rn`).
3. SASS (`cuobjdump -sass` of each side's cubin) and `ptxas -v` (registers, spills, every
   warning): instructions a loop iteration, HGMMA shapes (and how many close a `gsb0` group),
   `WARPGROUP.ARRIVE`, `WARPGROUP.DEPBAR`, `BAR.SYNC`, LDGSTS widths, MUFU.EX2 and the
   FSETP/FMUL pairs of the non-ftz ex2 (the denormal path), how many ex2 results are in flight
   at most, R2UR, local memory; and the occupancy (CTAs an SM, warps a scheduler) that
   registers, shared memory and warps allow.

With `--variants`, tilec's PTX is also assembled with each fix that RESULTS.md proposes applied
as a text patch (`PTX_PATCHES`), to show what each does to ptxas's output. With
`--ptxas-wrappers DIR`, the script writes one executable `DIR/ptxas-<variant>` a variant: a ptxas
that patches the PTX it is given, then runs the real one, so that the device can time each fix
without a compiler change:

    TILEC_PTXAS=DIR/ptxas-hoist-a TILEC_CACHE_DIR=$(mktemp -d) \\
        python benchmarks/gpu_vs_triton.py --quick --only flops

Nothing here times anything: it is a CPU-machine comparison of what the compilers emit.
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from glob import glob
from pathlib import Path

HERE = Path(__file__).resolve().parent
STRIDES = [f"stride_{t}{d}" for t in "qkvo" for d in ("z", "h", "n" if t in "kv" else "m", "k")]
POINTERS = ("Q", "K", "V", "Out")
INTEGERS = (*STRIDES, "H", "N_CTX")
UNIT_STRIDES = tuple(s for s in STRIDES if s.endswith("k"))
CONFIGS = ["64:128x64:8:3", "64:128x32:8:2", "64:64x64:4:3", "128:128x64:8:3", "128:128x32:8:3",
           "128:64x64:4:3", "128:64x32:4:3"]  # fmt: skip
"""`gpu_vs_triton.ATTENTION_CONFIGS`: head dim, BLOCK_M x BLOCK_N, warps, stages."""
SIDES = ("tilec", "triton")
ARCH = "sm_90a"
SM_REGISTERS = 65536
SM_SHARED = 228 * 1024
CTA_RESERVED_SHARED = 1024
SM_MAX_WARPS = 64
SCHEDULERS = 4


# Configurations ------------------------------------------------------------------------------


def parse_config(text: str, causal: bool) -> dict:
    head, blocks, warps, stages = text.split(":")
    block_m, block_n = blocks.split("x")
    return dict(head_dim=int(head), block_m=int(block_m), block_n=int(block_n),
                warps=int(warps), stages=int(stages), causal=causal)  # fmt: skip


def tag(cfg: dict) -> str:
    kind = "causal" if cfg["causal"] else "noncausal"
    return (f"d{cfg['head_dim']}_{cfg['block_m']}x{cfg['block_n']}_w{cfg['warps']}"
            f"_s{cfg['stages']}_{kind}")  # fmt: skip


def label(cfg: dict) -> str:
    kind = "causal" if cfg["causal"] else "non-causal"
    return (f"d{cfg['head_dim']} {cfg['block_m']}x{cfg['block_n']}/{cfg['warps']}w/"
            f"{cfg['stages']}s {kind}")  # fmt: skip


# Compiling -----------------------------------------------------------------------------------


def importable(name: str) -> bool:
    try:
        __import__(name)
    except ImportError:
        return False
    return True


def constexprs(cfg: dict) -> dict:
    return dict(HEAD_DIM=cfg["head_dim"], BLOCK_M=cfg["block_m"], BLOCK_N=cfg["block_n"],
                CAUSAL=cfg["causal"])  # fmt: skip


class KernelSpec:
    """The kernel compiled: its loader's module, name, pointers (with their types), integers and
    the integers equal to 1 (unit strides)."""

    def __init__(self, module, name, pointers, integers, unit_strides):
        self.module, self.name, self.pointers = module, name, pointers
        self.integers, self.unit_strides = integers, unit_strides

    def load(self, side: str):
        return __import__(self.module).load_kernels(side)[self.name]

    def type_of(self, name: str) -> str:
        if name in self.pointers:
            return self.pointers[name]
        return "fp32" if name == "sm_scale" else "i32"


KERNELS = {
    "example": KernelSpec("gpu_vs_triton", "attn_fwd", dict.fromkeys(POINTERS, "*fp16"),
                          INTEGERS, UNIT_STRIDES),
    "sweep": KernelSpec("sweep", "sweep_attn_fwd", {**dict.fromkeys(POINTERS, "*fp16"),
                        "M": "*fp32"}, ("stride_z", "stride_h", "stride_n", "H", "N_CTX"), ()),
}  # fmt: skip
"""`example`: examples/attention.py's kernel (as gpu_vs_triton.py runs it); `sweep`:
benchmarks/sweep_attention.py's `sweep_attn_fwd` (as benchmarks/sweep.py runs it)."""
KERNEL = ["example"]


def compile_tilec(cfg: dict, out: Path) -> dict:
    import tilec
    from tilec_nvidia.codegen import find_ptxas

    spec = KERNELS[KERNEL[0]]
    kernel = spec.load("tilec")
    signature = {**spec.pointers, "sm_scale": "fp32", **dict.fromkeys(spec.integers, "i32")}
    compiled = tilec.compile(
        kernel, signature, constexprs(cfg), backend="nvidia", target=ARCH,
        num_warps=cfg["warps"], num_stages=cfg["stages"],
        divisibility=[*spec.pointers, *(i for i in spec.integers if i not in spec.unit_strides)],
        equal_to_1=list(spec.unit_strides),
    )  # fmt: skip
    return _save(out, "tilec", cfg, compiled.asm["gir"], "gir", compiled.asm["ptx"],
                 compiled.asm["cubin"], compiled.metadata["shared_bytes"], find_ptxas())  # fmt: skip


def compile_triton(cfg: dict, out: Path) -> dict:
    import triton
    from triton.backends.compiler import GPUTarget
    from triton.backends.nvidia.compiler import get_ptxas
    from triton.compiler import ASTSource

    spec = KERNELS[KERNEL[0]]
    kernel = spec.load("triton")
    names = kernel.arg_names
    signature, values = {}, {**constexprs(cfg), **dict.fromkeys(spec.unit_strides, 1)}
    for name in names:
        signature[name] = "constexpr" if name in values else spec.type_of(name)
    divisible = [i for i, n in enumerate(names) if signature[n].startswith("*") or signature[n] == "i32"]  # fmt: skip
    attrs = {(i,): [["tt.divisibility", 16]] for i in divisible}
    source = ASTSource(fn=kernel, signature=signature, constexprs=values, attrs=attrs)
    options = {"num_warps": cfg["warps"], "num_stages": cfg["stages"]}
    compiled = triton.compile(source, target=GPUTarget("cuda", 90, 32), options=options)
    return _save(out, "triton", cfg, compiled.asm["ttgir"], "ttgir", compiled.asm["ptx"],
                 compiled.asm["cubin"], compiled.metadata.shared, get_ptxas(90).path)  # fmt: skip


def _save(out, side, cfg, ir_text, ir_kind, ptx, cubin, shared, ptxas) -> dict:
    stem = out / f"{side}_{tag(cfg)}"
    paths = {ir_kind: f"{stem}.{ir_kind}", "ptx": f"{stem}.ptx", "cubin": f"{stem}.cubin"}
    Path(paths[ir_kind]).write_text(ir_text)
    Path(paths["ptx"]).write_text(ptx)
    Path(paths["cubin"]).write_bytes(cubin)
    return dict(side=side, cfg=cfg, ir_kind=ir_kind, paths=paths, shared=int(shared), ptxas=ptxas)


def compile_side(side: str, configs: list[dict], out: Path) -> list[dict]:
    compile_one = compile_tilec if side == "tilec" else compile_triton
    results = []
    for cfg in configs:
        print(f"[{side}] {label(cfg)}", file=sys.stderr, flush=True)
        results.append(compile_one(cfg, out))
    tools = {"cuobjdump": _triton_tool("cuobjdump")} if side == "triton" else {}
    (out / f"{side}.json").write_text(json.dumps({"kernels": results, "tools": tools}))
    return results


def _triton_tool(name: str) -> str | None:
    try:
        from triton import knobs

        return getattr(knobs.nvidia, name).path
    except (ImportError, AttributeError):
        return None


def other_side(side: str, python: str, args: argparse.Namespace, out: Path) -> list[dict]:
    """`side` compiled by this script under `python`; [] (and a message) where it fails."""
    command = [python, str(Path(__file__).resolve()), "--side", side, "--out", str(out),
               "--configs", ",".join(args.configs), "--causal", args.causal,
               "--kernel", args.kernel]  # fmt: skip
    result = subprocess.run(command, capture_output=True, text=True, check=False)
    if result.returncode != 0:
        tail = "\n".join((result.stderr or result.stdout).strip().splitlines()[-5:])
        print(f"{side} side skipped: {python} failed:\n{tail}", file=sys.stderr)
        return []
    found = json.loads((out / f"{side}.json").read_text())
    TOOLS.update({k: v for k, v in found["tools"].items() if v})
    return found["kernels"]


TOOLS: dict[str, str] = {}
"""Binary tools the other side's interpreter found (Triton ships cuobjdump and nvdisasm)."""


def find_tool(name: str) -> str | None:
    candidates = [TOOLS.get(name), shutil.which(name),
                  *sorted(glob(f"/usr/local/cuda*/bin/{name}"), reverse=True)]  # fmt: skip
    return next((c for c in candidates if c and os.access(c, os.X_OK)), None)


# 1. IR ---------------------------------------------------------------------------------------

IR_PATTERNS = {
    "gir": {
        "dot": r"gpu\.warp_group_dot %.*?\{pendings = (\d+)",
        "wait": r"gpu\.warp_group_dot_wait .*?\{pendings = (\d+)",
        "copy": r"gpu\.async_copy_global_to_local",
        "commit": r"gpu\.async_commit_group",
        "async_wait": r"gpu\.async_wait \{num = (\d+)",
        "barrier": r"tile\.barrier",
        "encoding": r"^(#shared\d*) = #gpu\.nvmma_shared<\{swizzle = (\d+), transposed = (\w+)",
        "alloc": r"(?:gpu\.local_alloc : !gpu\.memdesc<|gpu\.convert_layout %\S+ : tensor<)"
        r"([\dx]+)xf16, (#shared\d*)",
    },
    "ttgir": {
        "dot": r"ttng\.warp_group_dot %.*?\{.*?isAsync = (true)",
        "wait": r"ttng\.warp_group_dot_wait .*?\{pendings = (\d+)",
        "copy": r"ttg\.async_copy_global_to_local",
        "commit": r"ttg\.async_commit_group",
        "async_wait": r"ttg\.async_wait .*?\{num = (\d+)",
        "barrier": r"gpu\.barrier",
        "encoding": r"^(#shared\d*) = #ttg\.nvmma_shared<\{swizzlingByteWidth = (\d+), "
        r"transposed = (\w+)",
        "alloc": r"ttg\.local_alloc .*?!ttg\.memdesc<([\dx]+)xf16, (#shared\d*)",
    },
}


def ir_loops(text: str) -> list[list[str]]:
    """The lines of each outermost `scf.for` (to its closing brace)."""
    lines, loops, i = text.splitlines(), [], 0
    while i < len(lines):
        if " = scf.for " not in lines[i]:
            i += 1
            continue
        indent = len(lines[i]) - len(lines[i].lstrip())
        j = i + 1
        while not (lines[j].startswith(" " * indent + "}") and
                   len(lines[j]) - len(lines[j].lstrip()) == indent):  # fmt: skip
            j += 1
        loops.append(lines[i : j + 1])
        i = j + 1
    return loops


def ir_summary(text: str, kind: str) -> dict:
    pats = IR_PATTERNS[kind]
    loop = "\n".join(ir_loops(text)[0])
    dots = re.findall(pats["dot"], loop)
    encodings = {m[0]: (m[1], m[2]) for m in re.findall(pats["encoding"], text, re.M)}
    allocs = []
    for shape, enc in re.findall(pats["alloc"], text):
        swizzle, transposed = encodings.get(enc, ("?", "?"))
        item = f"{shape} sw{swizzle}{' T' if transposed == 'true' else ''}"
        if item not in allocs:
            allocs.append(item)
    return dict(
        dots=" ".join("async" if d == "true" else f"p{d}" for d in dots),
        waits=" ".join(re.findall(pats["wait"], loop)),
        copies=len(re.findall(pats["copy"], loop)),
        commits=len(re.findall(pats["commit"], loop)),
        async_wait=" ".join(re.findall(pats["async_wait"], loop)),
        barriers=len(re.findall(pats["barrier"], loop)),
        shared=", ".join(allocs),
    )


# 2. PTX --------------------------------------------------------------------------------------


def ptx_loop(ptx: str) -> list[str]:
    """The instructions of the first loop (a label that a later branch jumps back to)."""
    lines = [line.strip() for line in ptx.splitlines()]
    labels = {m.group(1): i for i, line in enumerate(lines)
              if (m := re.match(r"(\$L__BB\d+_\d+):", line))}  # fmt: skip
    for i, line in enumerate(lines):
        m = re.search(r"\bbra(?:\.uni)?\s+(\$L__BB\d+_\d+);", line)
        if m and labels.get(m.group(1), i) < i:
            body = lines[labels[m.group(1)] + 1 : i + 1]
            return [s for s in body if s and not s.startswith(("//", "$", ".", "{", "}"))]
    return []


def ptx_summary(ptx: str) -> dict:
    body = ptx_loop(ptx)
    ops = [re.sub(r"^@!?%p\d+\s+", "", s).split()[0].rstrip(";") for s in body]
    count = collections.Counter(ops)
    wgmma = collections.Counter()
    for s in body:
        m = re.search(r"wgmma\.mma_async\.sync\.aligned\.(m\d+n\d+k\d+)[^ ]* \{[^}]*\}, (\{)?", s)
        if m:
            wgmma[f"{m.group(1)} {'RS' if m.group(2) else 'SS'}"] += 1
    written_after_fence, inside = 0, False
    for op in ops:
        if op.startswith("wgmma.fence"):
            inside = True
        elif op.startswith("wgmma.commit_group"):
            inside = False
        elif inside and op.startswith("cvt"):
            written_after_fence += 1
    sync = [
        op.split(".")[0] + "." + op.split(".")[1] if op.startswith("wgmma") else op
        for op in ops
        if op.startswith(
            (
                "wgmma.fence",
                "wgmma.commit",
                "wgmma.wait",
                "bar.sync",
                "cp.async.wait",
                "cp.async.commit",
            )
        )
    ]
    waits = [s.split("aligned")[-1].strip(" ;") for s in body if "wgmma.wait_group" in s]
    copy = r"cp\.async\.c[ag]\.shared\.global\S*\s+\[[^\]]*\],\s*\[[^\]]*\],\s*(0x[0-9a-f]+|\d+)"
    copies = collections.Counter(int(m, 0) for s in body for m in re.findall(copy, s))
    return dict(
        wgmma=", ".join(f"{n} {k}" for k, n in wgmma.items()),
        fence=count["wgmma.fence.sync.aligned"],
        commit=count["wgmma.commit_group.sync.aligned"],
        wgmma_waits=" ".join(waits),
        cvt_after_fence=written_after_fence,
        cp_async=", ".join(f"{n} x {k} B" for k, n in copies.items()),
        bar_sync=count["bar.sync"],
        shfl=", ".join(f"{n} {k.split('.')[2]}" for k, n in count.items() if k.startswith("shfl")),
        ex2=", ".join(
            f"{n} {k.removeprefix('ex2.approx.')}" for k, n in count.items() if k.startswith("ex2")
        ),
        cvt_f16x2=count["cvt.rn.f16x2.f32"],
        rn_arith=sum(n for k, n in count.items() if re.fullmatch(r"(mul|add|sub)\.rn\.f32", k)),
        fma=sum(n for k, n in count.items() if k.startswith("fma")),
        instructions=len(ops),
        skeleton=" ".join(sync),
    )


# 3. ptxas and SASS ---------------------------------------------------------------------------


def ptxas_report(ptxas: str, ptx_path: str) -> dict:
    with tempfile.TemporaryDirectory() as folder:
        result = subprocess.run([ptxas, f"-arch={ARCH}", "-O3", "-v", ptx_path, "-o",
                                 f"{folder}/k.cubin"], capture_output=True, text=True)  # fmt: skip
        cubin = Path(f"{folder}/k.cubin").read_bytes() if result.returncode == 0 else None
    log = result.stdout + result.stderr
    regs = re.search(r"Used (\d+) registers", log)
    spills = re.search(r"(\d+) bytes spill stores, (\d+) bytes spill loads", log)
    warnings = [line.split("ptxas info    : ")[-1] for line in log.splitlines()
                if re.search(r"\(C\d+\)|warning", line)]  # fmt: skip
    codes = collections.Counter(re.findall(r"\((C\d+)\)", "\n".join(warnings)))
    return dict(
        registers=int(regs.group(1)) if regs else None,
        spills=f"{spills.group(1)}/{spills.group(2)}" if spills else "?",
        warnings=", ".join(f"{n} x {c}" for c, n in codes.items()) or "none",
        warning_text=warnings,
        cubin=cubin,
        version=_version(ptxas),
    )


def _version(tool: str) -> str:
    out = subprocess.run([tool, "--version"], capture_output=True, text=True).stdout
    m = re.search(r"release (\d+\.\d+)", out)
    return m.group(1) if m else "?"


def sass_instructions(cubin: bytes, cuobjdump: str) -> list[tuple[int, str]]:
    with tempfile.NamedTemporaryFile(suffix=".cubin") as f:
        f.write(cubin)
        f.flush()
        out = subprocess.run([cuobjdump, "-sass", f.name], capture_output=True, text=True).stdout
    return [(int(m.group(1), 16), m.group(2).strip())
            for line in out.splitlines()
            if (m := re.match(r"\s*/\*([0-9a-f]{4,})\*/\s+(.*?)\s*;", line))]  # fmt: skip


def sass_loop(instructions: list[tuple[int, str]]) -> list[str]:
    """The first loop: from a backward branch's target to the branch."""
    for address, text in instructions:
        m = re.search(r"\bBRA\s+(?:`\()?\S*?0x([0-9a-f]+)", text)
        if m and int(m.group(1), 16) < address:
            start = int(m.group(1), 16)
            return [t for a, t in instructions if start <= a <= address]
    return []


def _opcode(text: str) -> str:
    return re.sub(r"^@!?U?P\w+\s+", "", text).split()[0]


def ex2_in_flight(body: list[str]) -> int:
    """The most MUFU.EX2 results computed and not yet read at one point of the loop body."""
    pending: set[str] = set()
    most = 0
    for text in body:
        operands = re.findall(r"\bR\d+\b", re.sub(r"^@!?U?P\w+\s+\S+", "", text))
        opcode = _opcode(text)
        reads = operands[1:] if not opcode.startswith(("FSETP", "ISETP")) else operands
        pending -= set(reads)
        if opcode == "MUFU.EX2":
            pending.add(operands[0])
            most = max(most, len(pending))
    return most


def sass_summary(instructions: list[tuple[int, str]]) -> dict:
    body = sass_loop(instructions)
    ops = [_opcode(t) for t in body]
    count = collections.Counter(ops)
    hgmma = collections.Counter(op.removeprefix("HGMMA.") for op in ops if op.startswith("HGMMA"))
    denormal = [m.group(1) for t in body if (m := re.match(r"FSETP\.GEU\.AND (P\d), PT, R\d+, -126", t))]  # fmt: skip
    ldgsts = collections.Counter(op.split(".")[-1] for op in ops if op.startswith("LDGSTS"))
    skeleton = []
    for t in body:
        if re.match(r"(HGMMA|WARPGROUP|BAR\.SYNC|DEPBAR|LDGDEPBAR)", _opcode(t)):
            item = re.sub(
                r"\s+", " ", re.sub(r"R\d+|UR\d+|gdesc\[\w+\]|, RZ|, !UPT|\.tnspB", "", t)
            )
            item = item.replace("HGMMA.", "").replace(".F32", "").replace(" , ,", "")
            item = re.sub(r"\s*,\s*|\s+", " ", item).strip()
            item = item.replace("BAR.SYNC.DEFER_BLOCKING 0x0", "BAR")
            if skeleton and skeleton[-1][0] == item:
                skeleton[-1][1] += 1
            else:
                skeleton.append([item, 1])
    all_ops = collections.Counter(_opcode(t) for _, t in instructions)
    return dict(
        instructions=len(body),
        hgmma=", ".join(f"{n} x {k}" for k, n in hgmma.items()),
        gsb0=sum(1 for t in body if t.startswith("HGMMA") and "gsb0" in t),
        arrive=count["WARPGROUP.ARRIVE"],
        wg_depbar=" ".join(
            re.sub(r".*gsb0, 0x", "", t) for t in body if t.startswith("WARPGROUP.DEPBAR")
        ),
        bar=sum(n for k, n in count.items() if k.startswith("BAR.")),
        ldgsts=", ".join(f"{n} x {k}" for k, n in ldgsts.items()),
        mufu_ex2=count["MUFU.EX2"],
        denormal_ex2=len(denormal),
        denormal_predicates=" ".join(sorted(set(denormal))),
        ex2_in_flight=ex2_in_flight(body),
        r2ur=count["R2UR"],
        ffma=count["FFMA"],
        fmul_fadd=count["FMUL"] + count["FADD"],
        local=all_ops["LDL"] + all_ops["STL"],
        skeleton=" | ".join(f"{n}x {k}" if n > 1 else k for k, n in skeleton),
    )


def occupancy(registers: int, warps: int, shared: int) -> tuple[int, float]:
    """(CTAs an SM, warps a scheduler) that registers, shared memory and warps allow."""
    per_warp = -(-registers * 32 // 256) * 256
    by_registers = SM_REGISTERS // per_warp // warps
    by_shared = SM_SHARED // (shared + CTA_RESERVED_SHARED)
    ctas = max(0, min(by_registers, by_shared, SM_MAX_WARPS // warps, 32))
    return ctas, ctas * warps / SCHEDULERS


# PTX patches: the fixes as text edits --------------------------------------------------------


def hoist_a_packing(ptx: str) -> str:
    """Registers of wgmma's A (the `cvt.rn.f16x2.f32` packing p) written before `wgmma.fence`
    instead of between the wgmmas: the change RESULTS.md proposes for
    `plugins/nvidia/tilec_nvidia/wgmma_lowering.py` (pack every k-step's A registers, then fence)."""
    lines, out, i = ptx.split("\n"), [], 0
    while i < len(lines):
        if "wgmma.fence.sync.aligned" not in lines[i]:
            out.append(lines[i])
            i += 1
            continue
        j = i
        while "wgmma.commit_group" not in lines[j]:
            j += 1
        block = lines[i:j]
        out += [s for s in block if "cvt.rn.f16x2.f32" in s]
        out += [s for s in block if "cvt.rn.f16x2.f32" not in s]
        i = j
    return "\n".join(out)


def ex2_ftz(ptx: str) -> str:
    """`ex2.approx.ftz.f32` (Triton's `tl.exp2`: libdevice's `__nv_exp2f` with ftz): flushes
    results below 2^-126 and subnormal inputs, so it changes what kernels compute there."""
    return ptx.replace("ex2.approx.f32", "ex2.approx.ftz.f32")


def drop_pv_wait(ptx: str) -> str:
    """Without the `wgmma.wait_group.sync.aligned 1` right after the P @ V wgmma's commit
    (`pendings = 1`), which waits for three of its four groups where ptxas splits it (C7519, A
    packed after the fence at d64). A measurement for the attention forward only, where it is
    safe: the next iteration's QK^T waits for every group (wait 0) before the accumulator is
    read or a ring slot refilled, and the loop's exit waits 0; not a general rewrite."""
    return re.sub(r"^\s*wgmma\.wait_group\.sync\.aligned 1;\n", "", ptx, flags=re.M)


PTX_PATCHES = {"hoist-a": (hoist_a_packing,), "ex2-ftz": (ex2_ftz,),
               "hoist-a+ex2-ftz": (hoist_a_packing, ex2_ftz), "no-pv-wait": (drop_pv_wait,)}  # fmt: skip


def patch_ptx(ptx: str, variant: str) -> str:
    for patch in PTX_PATCHES[variant]:
        ptx = patch(ptx)
    return ptx


WRAPPER = '''#!{python}
"""ptxas with the PTX patch '{variant}' of benchmarks/attention_static.py (written by it)."""
import os
import sys

sys.path.insert(0, {benchmarks!r})
from attention_static import patch_ptx

for arg in sys.argv[1:]:
    if arg.endswith(".ptx"):
        with open(arg) as f:
            text = f.read()
        with open(arg, "w") as f:
            f.write(patch_ptx(text, {variant!r}))
os.execv({ptxas!r}, [{ptxas!r}, *sys.argv[1:]])
'''


def write_wrappers(folder: Path, ptxas: str) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    for variant in PTX_PATCHES:
        path = folder / f"ptxas-{variant}"
        path.write_text(WRAPPER.format(python=sys.executable, variant=variant,
                                       benchmarks=str(HERE), ptxas=ptxas))  # fmt: skip
        path.chmod(0o755)
        print(f"wrote {path} (runs {ptxas})")


# Report --------------------------------------------------------------------------------------


def table(header: list[str], rows: list[list]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]
    return "\n".join(lines)


def analyse(kernel: dict, cuobjdump: str | None) -> dict:
    paths = kernel["paths"]
    ir = ir_summary(Path(paths[kernel["ir_kind"]]).read_text(), kernel["ir_kind"])
    ptx = ptx_summary(Path(paths["ptx"]).read_text())
    ptxas = ptxas_report(kernel["ptxas"], paths["ptx"]) if kernel["ptxas"] else {}
    sass = sass_summary(sass_instructions(Path(paths["cubin"]).read_bytes(), cuobjdump)) if cuobjdump else {}  # fmt: skip
    ctas, per_scheduler = occupancy(ptxas.get("registers") or 255, kernel["cfg"]["warps"],
                                    kernel["shared"])  # fmt: skip
    return dict(ir=ir, ptx=ptx, ptxas=ptxas, sass=sass, ctas=ctas, per_scheduler=per_scheduler)


def variant_rows(kernel: dict, cuobjdump: str | None) -> list[list]:
    rows = []
    source = Path(kernel["paths"]["ptx"]).read_text()
    for variant in ("base", *PTX_PATCHES):
        ptx = source if variant == "base" else patch_ptx(source, variant)
        with tempfile.NamedTemporaryFile("w", suffix=".ptx", delete=False) as f:
            f.write(ptx)
        report = ptxas_report(kernel["ptxas"], f.name)
        os.unlink(f.name)
        sass = sass_summary(sass_instructions(report["cubin"], cuobjdump)) if cuobjdump and report["cubin"] else {}  # fmt: skip
        rows.append([label(kernel["cfg"]), variant, report["registers"], report["warnings"],
                     sass.get("instructions"), sass.get("arrive"), sass.get("gsb0"),
                     sass.get("wg_depbar"), sass.get("mufu_ex2"), sass.get("denormal_ex2"),
                     sass.get("ex2_in_flight")])  # fmt: skip
    return rows


def report(kernels: list[dict], cuobjdump: str | None, variants: bool) -> None:
    results = [(k, analyse(k, cuobjdump)) for k in kernels]
    order = {side: i for i, side in enumerate(SIDES)}
    results.sort(key=lambda r: (CONFIG_ORDER.get(tag(r[0]["cfg"]), 0), order[r[0]["side"]]))
    versions = {k["side"]: a["ptxas"].get("version") for k, a in results if a["ptxas"]}
    print(f"\nptxas: {', '.join(f'{s} {v}' for s, v in versions.items())}; "
          f"cuobjdump: {cuobjdump or 'none found (no SASS)'}\n")  # fmt: skip
    print("### 1. IR: the main loop (gir / TTGIR)\n")
    print(table(
        ["kernel", "side", "dots (pendings)", "dot waits (pendings)", "copies", "commit groups",
         "async_wait num", "barriers", "shared allocations (swizzle bytes, T = transposed)"],
        [[label(k["cfg"]), k["side"], a["ir"]["dots"], a["ir"]["waits"], a["ir"]["copies"],
          a["ir"]["commits"], a["ir"]["async_wait"], a["ir"]["barriers"], a["ir"]["shared"]]
         for k, a in results],
    ))  # fmt: skip
    print("\n### 2. PTX: the main loop\n")
    print(table(
        ["kernel", "side", "instr.", "wgmma", "fence/commit", "wait_group", "cvt after fence",
         "cp.async", "bar.sync", "shfl", "ex2", "cvt f16x2", "mul/add/sub .rn", "fma"],
        [[label(k["cfg"]), k["side"], p["instructions"], p["wgmma"],
          f"{p['fence']}/{p['commit']}", p["wgmma_waits"], p["cvt_after_fence"], p["cp_async"],
          p["bar_sync"], p["shfl"], p["ex2"], p["cvt_f16x2"], p["rn_arith"], p["fma"]]
         for k, a in results for p in [a["ptx"]]],
    ))  # fmt: skip
    print("\n### 3. ptxas -v and SASS: the main loop\n")
    print(table(
        ["kernel", "side", "regs", "spills (st/ld)", "ptxas warnings", "SASS instr.", "HGMMA",
         "gsb0", "ARRIVE", "WG.DEPBAR.LE", "BAR", "LDGSTS", "MUFU.EX2", "denormal-path ex2 "
         "(predicates)", "ex2 in flight", "R2UR", "FFMA", "FMUL+FADD", "LDL+STL", "CTAs/SM",
         "warps/scheduler"],
        [[label(k["cfg"]), k["side"], a["ptxas"].get("registers"), a["ptxas"].get("spills"),
          a["ptxas"].get("warnings"), s.get("instructions"), s.get("hgmma"), s.get("gsb0"),
          s.get("arrive"), s.get("wg_depbar"), s.get("bar"), s.get("ldgsts"), s.get("mufu_ex2"),
          f"{s.get('denormal_ex2')} ({s.get('denormal_predicates') or '-'})",
          s.get("ex2_in_flight"), s.get("r2ur"), s.get("ffma"), s.get("fmul_fadd"),
          s.get("local"), a["ctas"], a["per_scheduler"]]
         for k, a in results for s in [a["sass"]]],
    ))  # fmt: skip
    print("\nSASS skeleton of the main loop (waits, barriers, wgmmas, copies):\n")
    for k, a in results:
        if a["sass"]:
            print(f"- {label(k['cfg'])}, {k['side']}: {a['sass']['skeleton']}")
    warned = [(k, a) for k, a in results if a["ptxas"].get("warning_text")]
    if warned:
        print("\nptxas warnings, each kernel's first three:\n")
        for k, a in warned:
            for text in a["ptxas"]["warning_text"][:3]:
                print(f"- {label(k['cfg'])}, {k['side']}: {text}")
    if variants:
        tilec = [k for k, _ in results if k["side"] == "tilec" and k["ptxas"]]
        print("\n### 4. tilec's PTX with the proposed fixes applied as text patches\n")
        print(table(
            ["kernel", "variant", "regs", "ptxas warnings", "SASS instr.", "ARRIVE", "gsb0",
             "WG.DEPBAR.LE", "MUFU.EX2", "denormal-path ex2", "ex2 in flight"],
            [row for k in tilec for row in variant_rows(k, cuobjdump)],
        ))  # fmt: skip


CONFIG_ORDER: dict[str, int] = {}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--configs", type=lambda s: s.split(","), default=CONFIGS,
                        help="HEAD_DIM:BLOCK_MxBLOCK_N:WARPS:STAGES,... (default: "
                        "gpu_vs_triton's attention configurations)")  # fmt: skip
    parser.add_argument("--causal", choices=("no", "yes", "both"), default="both")
    parser.add_argument("--kernel", choices=tuple(KERNELS), default="example",
                        help="example: examples/attention.py's kernel; sweep: "
                        "sweep_attention.py's sweep_attn_fwd")  # fmt: skip
    parser.add_argument(
        "--python",
        action="append",
        default=[],
        help="another interpreter that compiles the side this one cannot",
    )
    parser.add_argument("--out", type=Path, help="folder for the IR, PTX and cubins")
    parser.add_argument(
        "--variants",
        action="store_true",
        help="also assemble tilec's PTX with each fix of PTX_PATCHES applied",
    )
    parser.add_argument(
        "--ptxas-wrappers",
        type=Path,
        metavar="DIR",
        help="write DIR/ptxas-<variant> for TILEC_PTXAS (device A/B) and stop",
    )
    parser.add_argument("--side", choices=SIDES, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    KERNEL[0] = args.kernel
    sys.path.insert(0, str(HERE))  # gpu_vs_triton (the kernels), also when imported
    if args.ptxas_wrappers:
        from tilec_nvidia.codegen import find_ptxas

        ptxas = find_ptxas()
        if ptxas is None:
            parser.error("no ptxas found (TILEC_PTXAS, CUDA_HOME, PATH, /usr/local/cuda*)")
        write_wrappers(args.ptxas_wrappers, ptxas)
        return 0
    causal = {"no": [False], "yes": [True], "both": [False, True]}[args.causal]
    configs = [parse_config(c, k) for c in args.configs for k in causal]
    CONFIG_ORDER.update({tag(c): i for i, c in enumerate(configs)})
    out = args.out or Path(tempfile.mkdtemp(prefix="attention-static-"))
    out.mkdir(parents=True, exist_ok=True)
    if args.side:
        compile_side(args.side, configs, out)
        return 0
    kernels = []
    for side in SIDES:
        if importable(side):
            kernels += compile_side(side, configs, out)
            continue
        for python in args.python:
            kernels += other_side(side, python, args, out)
            if any(k["side"] == side for k in kernels):
                break
        else:
            print(f"{side} side skipped: this interpreter cannot import {side} and no "
                  f"--python interpreter compiled it", file=sys.stderr)  # fmt: skip
    if not kernels:
        print("nothing compiled", file=sys.stderr)
        return 1
    if "cuobjdump" not in TOOLS and importable("triton"):
        TOOLS["cuobjdump"] = _triton_tool("cuobjdump") or ""
    print(f"artifacts: {out}")
    report(kernels, find_tool("cuobjdump"), args.variants)
    return 0


if __name__ == "__main__":
    sys.exit(main())
