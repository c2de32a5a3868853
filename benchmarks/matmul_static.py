"""Static comparison of the sweep's matmul (issue 23) as tilec and Triton compile it for sm_90a.

    python benchmarks/matmul_static.py [--python TRITON_PYTHON] [--cases shortk,skinny,...]
        [--out DIR]

The kernel is benchmarks/sweep_kernels.py's `sweep_matmul`, executed under each compiler as the
sweep does, specialized as the sweep's launch on contiguous tensors specializes it (unit last
strides, the other integers and the pointers divisible by 16), compiled for sm_90a: tilec with
`tilec.compile(..., target="sm_90a")`, Triton with `triton.compile(ASTSource(...),
GPUTarget("cuda", 90, 32))`. A side this interpreter cannot import is compiled by `--python`
(the script runs itself there with `--side` and reads the PTX back). Both PTX are assembled with
the `ptxas` on PATH (`-v`: registers) and disassembled with `cuobjdump -sass` (`CUOBJDUMP` or
PATH; Triton's wheel ships one). Per kernel and side: registers, SASS instructions (NOPs left
out) before the main loop (the longest backward branch), in it and after it (the epilogue), and
the epilogue's shared-memory and global-store instructions. Nothing is timed."""

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
CASES = {  # M, N, K, dtype, (BLOCK_M, BLOCK_N, BLOCK_K, warps, stages), bias + ReLU
    "shortk": (4096, 4096, 256, "fp16", (128, 256, 64, 8, 3), False),
    "skinny": (64, 8192, 8192, "bf16", (128, 128, 64, 8, 3), False),
    "bias": (4096, 4096, 4096, "fp16", (128, 256, 64, 8, 3), True),
    "square": (4096, 4096, 4096, "fp16", (128, 256, 64, 8, 3), False),
    "fp8": (4096, 4096, 4096, "fp8e4nv", (128, 256, 128, 8, 3), False),
    "fp8ragged": (4095, 4095, 4095, "fp8e4nv", (64, 128, 64, 4, 4), False),
    "ragged": (4095, 4095, 4095, "fp16", (64, 128, 32, 4, 4), False),
    "longk": (512, 512, 65536, "fp16", (128, 128, 64, 8, 3), False),
    "square3072": (3072, 3072, 3072, "fp16", (128, 128, 64, 8, 3), False),
    "longk1024": (1024, 1024, 32768, "bf16", (128, 128, 64, 8, 3), False),
    "skinnyn": (8192, 128, 8192, "fp16", (128, 128, 64, 8, 3), False),
}
"""fp8 cases as the sweep launches them: B stored K-major (its transpose contiguous), C fp16."""
EPILOGUE_OPS = ("STS", "STSM", "LDS", "LDSM", "STG", "LOP3", "LEA", "BAR")


def specialization(case: str) -> tuple[dict, dict, list, list, tuple]:
    m, n, k, dtype, config, bias = CASES[case]
    fp8 = dtype.startswith("fp8")
    b_strides = (1, k) if fp8 else (n, 1)
    ints = dict(M=m, N=n, K=k, stride_az=m * k, stride_am=k, stride_ak=1, stride_bz=k * n,
                stride_bk=b_strides[0], stride_bn=b_strides[1], stride_cz=m * n, stride_cm=n,
                stride_cn=1)  # fmt: skip
    out = "fp16" if fp8 else dtype
    signature = {"a_ptr": f"*{dtype}", "b_ptr": f"*{dtype}", "c_ptr": f"*{out}",
                 "bias_ptr": f"*{out}", **dict.fromkeys(ints, "i32")}  # fmt: skip
    block_m, block_n, block_k = config[:3]
    constexprs = dict(BLOCK_M=block_m, BLOCK_N=block_n, BLOCK_K=block_k, GROUP_M=8,
                      BIAS_RELU=bias)  # fmt: skip
    unit = [name for name, value in ints.items() if value == 1]
    divisible = ["a_ptr", "b_ptr", "c_ptr", "bias_ptr"]
    divisible += [name for name, value in ints.items() if value % 16 == 0]
    return signature, constexprs, divisible, unit, config


def compile_side(side: str, case: str) -> str:
    """The PTX of `case` compiled by `side`."""
    return compiled(side, case).asm["ptx"]


def compiled(side: str, case: str):
    """`case` compiled by `side`: tilec's or Triton's compiled kernel (`asm`, `metadata`)."""
    sys.path.insert(0, str(HERE))
    from sweep import load_kernels

    kernel = load_kernels(side)["sweep_matmul"]
    signature, constexprs, divisible, unit, config = specialization(case)
    warps, stages = config[3:]
    if side == "tilec":
        import tilec

        return tilec.compile(kernel, signature, constexprs, backend="nvidia", target="sm_90a",
                             num_warps=warps, num_stages=stages, divisibility=divisible,
                             equal_to_1=unit)  # fmt: skip
    import triton
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource

    values = {**constexprs, **dict.fromkeys(unit, 1)}
    names = list(kernel.arg_names)
    full = {n: "constexpr" if n in values else signature[n] for n in names}
    attrs = {(names.index(n),): [["tt.divisibility", 16]] for n in divisible if n not in unit}
    source = ASTSource(fn=kernel, signature=full, constexprs=values, attrs=attrs)
    options = {"num_warps": warps, "num_stages": stages}
    return triton.compile(source, target=GPUTarget("cuda", 90, 32), options=options)


def sass_figures(ptx: str, folder: Path, name: str) -> dict:
    """Registers and the SASS instruction counts of `ptx` (module doc)."""
    source, cubin = folder / f"{name}.ptx", folder / f"{name}.cubin"
    source.write_text(ptx)
    assembled = subprocess.run(["ptxas", "-arch=sm_90a", "-v", str(source), "-o", str(cubin)],
                               capture_output=True, text=True, check=True)  # fmt: skip
    registers = int(re.search(r"Used (\d+) registers", assembled.stderr).group(1))
    cuobjdump = os.environ.get("CUOBJDUMP") or shutil.which("cuobjdump") or "cuobjdump"
    text = subprocess.run([cuobjdump, "-sass", str(cubin)], capture_output=True, text=True,
                          check=True).stdout  # fmt: skip
    code = []
    for line in text.splitlines():
        found = re.match(r"\s+/\*([0-9a-f]{4,})\*/\s+(.*?)\s*;", line)
        if found:
            opcode = re.sub(r"^@!?U?P\w+\s+", "", found.group(2)).split()[0]
            if opcode != "NOP":
                code.append((int(found.group(1), 16), opcode, found.group(2)))
    loop = (0, -1)
    for address, opcode, instruction in code:
        target = re.search(r"BRA\s+(?:`\(\.L_x_\d+\)\s*)?0x([0-9a-f]+)", instruction)
        if opcode == "BRA" and target and int(target.group(1), 16) < address:
            start = int(target.group(1), 16)
            if address - start > loop[1] - loop[0]:
                loop = (start, address)
    parts: collections.Counter = collections.Counter()
    epilogue: collections.Counter = collections.Counter()
    for address, opcode, _ in code:
        part = "prologue" if address < loop[0] else "loop" if address <= loop[1] else "epilogue"
        parts[part] += 1
        if part == "epilogue":
            epilogue[opcode.split(".")[0]] += 1
    return dict(registers=registers, total=len(code), **parts,
                **{op: epilogue[op] for op in EPILOGUE_OPS})  # fmt: skip


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--python", help="an interpreter that imports the side this one lacks")
    parser.add_argument("--cases", type=lambda s: s.split(","), default=list(CASES))
    parser.add_argument("--out", type=Path, help="keep the PTX and cubins here")
    parser.add_argument("--side", choices=("tilec", "triton"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.side:
        print(json.dumps({case: compile_side(args.side, case) for case in args.cases}))
        return 0
    ptx: dict[str, dict[str, str]] = {}
    for side in ("tilec", "triton"):
        try:
            ptx[side] = {case: compile_side(side, case) for case in args.cases}
        except ImportError:
            if not args.python:
                print(f"skipping {side}: not importable here (give --python)")
                continue
            command = [args.python, __file__, "--side", side, "--cases", ",".join(args.cases)]
            done = subprocess.run(command, capture_output=True, text=True, check=True)
            ptx[side] = json.loads(done.stdout.splitlines()[-1])
    folder = args.out or Path(tempfile.mkdtemp(prefix="matmul-static-"))
    folder.mkdir(parents=True, exist_ok=True)
    columns = ["registers", "total", "prologue", "loop", "epilogue", *EPILOGUE_OPS]
    print("| case | side | " + " | ".join(columns) + " |")
    print("|---|---|" + "---:|" * len(columns))
    for case in args.cases:
        for side, texts in ptx.items():
            figures = sass_figures(texts[case], folder, f"{side}-{case}")
            print(f"| {case} | {side} | " + " | ".join(str(figures[c]) for c in columns) + " |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
