"""Static comparison of the sweep's memory-bound kernels (issue 23) as tilec and Triton compile
them for sm_90a: no GPU.

    python benchmarks/memory_static.py [--python TRITON_PYTHON] [--only softmax,layernorm,...]

The kernels are benchmarks/sweep_kernels.py's, executed under each compiler as the sweep does,
specialized as the sweep's launches on contiguous tensors specialize them (pointers and the
integers divisible by 16 marked so: the 3000-column softmax's stride and width are not), with
the sweep's block sizes and warps. tilec compiles with `tilec.compile(..., target="sm_90a")`,
Triton with `triton.compile(ASTSource(...), GPUTarget("cuda", 90, 32))` (`--python` names an
interpreter with Triton when this one has none: the script runs itself there with `--side`).
Both PTX are assembled by the `ptxas` on PATH and disassembled by `cuobjdump -sass` (`CUOBJDUMP`
or PATH; Triton's wheel ships one). Per kernel and side: registers, SASS instructions up to the
first EXIT (the path every program runs: slow-path subroutines after it are left out), barriers,
shuffles, MUFU.RCP (one per division that is not shared), the global loads and stores by
width, and of the first loop's global loads those issued before the first use of any of their
data (the cross-entropy loop over vocabulary blocks: at d9d3368 ptxas issued its second 16-byte
load after the first one's data came back, `1/2`, which cost 7% on the H200).
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
from pathlib import Path

HERE = Path(__file__).resolve().parent


def cases() -> dict[str, tuple]:
    """name -> (family, kernel, signature, integer values, constexprs, warps)."""
    out: dict[str, tuple] = {}
    p2 = lambda n: 1 << (n - 1).bit_length()  # noqa: E731
    for dt, cols, w in [("bf16", 3000, 8), ("bf16", 32768, 16), ("fp32", 32768, 16),
                        ("bf16", 8192, 8), ("bf16", 8192, 16), ("bf16", 1024, 4), ("bf16", 4096, 4)]:  # fmt: skip
        sig = dict(out_ptr=f"*{dt}", in_ptr=f"*{dt}", in_stride="i32", out_stride="i32",
                   n_cols="i32")  # fmt: skip
        ints = dict(in_stride=cols, out_stride=cols, n_cols=cols)
        out[f"softmax {dt} x{cols} w{w}"] = ("softmax", "sweep_softmax", sig, ints,
                                             dict(BLOCK=p2(cols)), w)  # fmt: skip
    for dt, cols, w in [("bf16", 1024, 4), ("bf16", 2048, 4), ("bf16", 4096, 4), ("bf16", 4096, 8),
                        ("bf16", 4096, 16), ("bf16", 5120, 4), ("bf16", 5120, 8), ("bf16", 5120, 16),
                        ("bf16", 8192, 4), ("bf16", 8192, 8), ("bf16", 8192, 16),
                        ("fp32", 4096, 4), ("fp32", 4096, 8), ("fp32", 4096, 16)]:  # fmt: skip
        sig = dict(x_ptr=f"*{dt}", y_ptr=f"*{dt}", w_ptr=f"*{dt}", b_ptr=f"*{dt}",
                   mean_ptr="*fp32", rstd_ptr="*fp32", stride="i32", N="i32", eps="fp32")  # fmt: skip
        out[f"layernorm_fwd {dt} x{cols} w{w}"] = ("layernorm_fwd", "sweep_layer_norm_fwd", sig,
                                                   dict(stride=cols, N=cols),
                                                   dict(BLOCK=p2(cols)), w)  # fmt: skip
    for dt, cols, w in [("bf16", 1024, 4), ("bf16", 4096, 8), ("bf16", 5120, 16)]:
        sig = dict(x_ptr=f"*{dt}", dy_ptr=f"*{dt}", dx_ptr=f"*{dt}", w_ptr=f"*{dt}",
                   mean_ptr="*fp32", rstd_ptr="*fp32", dw_part_ptr="*fp32", db_part_ptr="*fp32",
                   stride="i32", M="i32", N="i32")  # fmt: skip
        out[f"layernorm_bwd {dt} x{cols} w{w}"] = ("layernorm_bwd", "sweep_layer_norm_bwd", sig,
                                                   dict(stride=cols, M=8192, N=cols),
                                                   dict(BLOCK=p2(cols)), w)  # fmt: skip
    for cols, w in [(4096, 8), (8192, 16)]:
        sig = dict(x_ptr="*bf16", y_ptr="*bf16", w_ptr="*bf16", stride="i32", N="i32", eps="fp32")
        out[f"rmsnorm bf16 x{cols} w{w}"] = ("rmsnorm", "sweep_rms_norm", sig,
                                             dict(stride=cols, N=cols), dict(BLOCK=p2(cols)), w)  # fmt: skip
    sig = dict(x_ptr="*bf16", cos_ptr="*fp32", sin_ptr="*fp32", out_ptr="*bf16", S="i32", H="i32")
    for dim, seq, heads, block_h, w in [(64, 4096, 32, 8, 4), (64, 4096, 32, 16, 8),
                                        (128, 4096, 32, 8, 4), (128, 4096, 32, 16, 8),
                                        (128, 16384, 8, 8, 4)]:  # fmt: skip
        out[f"rotary bf16 d{dim} S{seq} H{heads} {block_h} heads w{w}"] = (
            "rotary", "sweep_rotary", sig, dict(S=seq, H=heads),
            dict(HALF=dim // 2, BLOCK_H=block_h), w)  # fmt: skip
    for dt, vocab, block, w in [("bf16", 32000, 4096, 8), ("bf16", 50257, 4096, 8),
                                ("bf16", 128256, 4096, 8), ("fp32", 128256, 4096, 8),
                                ("fp32", 128256, 8192, 8), ("bf16", 128256, 16384, 16)]:  # fmt: skip
        sig = dict(logits_ptr=f"*{dt}", target_ptr="*i64", loss_ptr="*fp32", stride="i32",
                   V="i32")  # fmt: skip
        out[f"cross_entropy {dt} V{vocab} {block} w{w}"] = (
            "cross_entropy", "sweep_cross_entropy", sig, dict(stride=vocab, V=vocab),
            dict(BLOCK=block), w)  # fmt: skip
    sig = dict(gate_ptr="*bf16", up_ptr="*bf16", out_ptr="*bf16", n="i32")
    for block, w in [(1024, 4), (2048, 8)]:
        out[f"swiglu bf16 {block} w{w}"] = ("swiglu", "sweep_swiglu", sig, dict(n=2048 * 5504),
                                            dict(BLOCK=block), w)  # fmt: skip
    return out


def compile_side(side: str, names: list[str]) -> dict[str, str]:
    """The PTX of each case `side` compiles."""
    sys.path.insert(0, str(HERE))
    from sweep import load_kernels

    kernels = load_kernels(side)
    ptx = {}
    for name in names:
        _, kernel_name, sig, ints, consts, warps = cases()[name]
        kernel = kernels[kernel_name]
        divisible = [n for n, t in sig.items() if t.startswith("*")]
        divisible += [n for n, v in ints.items() if v % 16 == 0]
        if side == "tilec":
            import tilec

            ptx[name] = tilec.compile(kernel, sig, consts, backend="nvidia", target="sm_90a",
                                      num_warps=warps, divisibility=divisible).asm["ptx"]  # fmt: skip
            continue
        import triton
        from triton.backends.compiler import GPUTarget
        from triton.compiler import ASTSource

        names_ = list(kernel.arg_names)
        full = {n: "constexpr" if n in consts else sig[n] for n in names_}
        attrs = {(names_.index(n),): [["tt.divisibility", 16]] for n in divisible}
        source = ASTSource(fn=kernel, signature=full, constexprs=dict(consts), attrs=attrs)
        compiled = triton.compile(source, target=GPUTarget("cuda", 90, 32),
                                  options={"num_warps": warps})  # fmt: skip
        ptx[name] = compiled.asm["ptx"]
    return ptx


def figures(ptx: str, folder: Path, name: str) -> dict:
    """Registers and SASS counts of `ptx` (module doc)."""
    from attention_static import sass_instructions, sass_loop

    source, cubin = folder / f"{name}.ptx", folder / f"{name}.cubin"
    source.write_text(ptx)
    done = subprocess.run(["ptxas", "-arch=sm_90a", "-v", str(source), "-o", str(cubin)],
                          capture_output=True, text=True, check=True)  # fmt: skip
    cuobjdump = os.environ.get("CUOBJDUMP") or shutil.which("cuobjdump") or "cuobjdump"
    counts: collections.Counter = collections.Counter()
    instructions = sass_instructions(cubin.read_bytes(), cuobjdump)
    for _, text in instructions:
        opcode = re.sub(r"^@!?U?P\w+\s+", "", text).split()[0]
        if opcode == "NOP":
            continue
        counts["main path"] += 1
        counts[opcode] += 1
        if opcode == "EXIT" and not text.startswith("@"):
            break
    loads = ", ".join(f"{k.replace('.E', '')}={v}" for k, v in sorted(counts.items())
                      if k.startswith(("LDG", "STG")))  # fmt: skip
    return {"registers": int(re.search(r"Used (\d+) registers", done.stderr).group(1)),
            "main path": counts["main path"], "SHFL": counts["SHFL.BFLY"],
            "BAR": sum(v for k, v in counts.items() if k.startswith("BAR")),
            "MUFU.RCP": counts["MUFU.RCP"], "loads and stores": loads,
            "loop loads ahead": loads_ahead(sass_loop(instructions))}  # fmt: skip


def loads_ahead(body: list[str]) -> str:
    """`a/n`: of the loop body's `n` global loads, the `a` issued before any instruction reads a
    register one of them wrote (a load issued later waits for an earlier one's data: ptxas gave
    a live value a register of its destination); "-" without a loop or loads."""
    loads = [t for t in body if re.sub(r"^@!?U?P\w+\s+", "", t).startswith("LDG")]
    written: set[int] = set()
    ahead = 0
    for text in body:
        opcode, _, rest = re.sub(r"^@!?U?P\w+\s+", "", text).partition(" ")
        operands = rest.split(", ")
        if any(int(r) in written for o in operands[1:] for r in re.findall(r"\bR(\d+)\b", o)):
            break
        if opcode.startswith("LDG"):
            first = int(re.match(r"R(\d+)", operands[0]).group(1))
            words = {"128": 4, "64": 2}.get(opcode.rsplit(".", 1)[-1], 1)
            written.update(range(first, first + words))
            ahead += 1
    return f"{ahead}/{len(loads)}" if loads else "-"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--python", help="an interpreter that imports the side this one lacks")
    parser.add_argument("--only", type=lambda s: s.split(","), help="families (softmax, ...)")
    parser.add_argument("--side", choices=("tilec", "triton"), help=argparse.SUPPRESS)
    parser.add_argument("--names", type=lambda s: s.split("|"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.side:
        print(json.dumps(compile_side(args.side, args.names)))
        return 0
    names = [n for n, c in cases().items() if not args.only or c[0] in args.only]
    ptx: dict[str, dict[str, str]] = {}
    for side in ("tilec", "triton"):
        try:
            ptx[side] = compile_side(side, names)
        except ImportError:
            if not args.python:
                print(f"skipping {side}: not importable here (give --python)")
                continue
            command = [args.python, __file__, "--side", side, "--names", "|".join(names)]
            done = subprocess.run(command, capture_output=True, text=True, check=True)
            ptx[side] = json.loads(done.stdout.splitlines()[-1])
    folder = Path(tempfile.mkdtemp(prefix="memory-static-"))
    columns = ["registers", "main path", "BAR", "SHFL", "MUFU.RCP", "loads and stores",
               "loop loads ahead"]  # fmt: skip
    print("| kernel | side | " + " | ".join(columns) + " |")
    print("|---|---|" + "---:|" * (len(columns) - 1) + "---|")
    for name in names:
        for side, texts in ptx.items():
            got = figures(texts[name], folder, f"{side}-{name.replace(' ', '_')}")
            print(f"| {name} | {side} | " + " | ".join(str(got[c]) for c in columns) + " |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
