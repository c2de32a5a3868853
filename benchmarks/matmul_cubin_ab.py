"""Whether the sweep's fp16 128x128x64 w8 s3 matmul loses to Triton in its binary or its launch
(issue 23): both sides' cubins launched by tilec's driver, beside each side's own launch.

    python benchmarks/matmul_cubin_ab.py [--cases square3072,longk1024,skinny] [--rounds 3]
        [--ptxas PATH[,PATH...]] [--triton-ptxas] [--variants NAME[,NAME...]]

Needs an NVIDIA GPU, torch and Triton. For each case of benchmarks/matmul_static.py, each side
compiles the sweep's `sweep_matmul` through its own `warmup` on CUDA tensors (the binary its
launches run); both cubins are then loaded and launched by `tilec_nvidia.driver.CudaDriver` (Triton's
with its own parameters: the unit strides compiled in, its global and profile scratch pointers
null). Every launch is checked against torch, then the four (each cubin under tilec's driver,
each side's own `[grid]` launch) are timed turn about by benchmarks/paired_timer.py over
`--rounds`. Triton's cubin as slow as tilec's under one driver means the binary; level there but
not in the own launches means the launch.

`--ptxas` (and `--triton-ptxas`, the ptxas Triton's wheel ships) adds tilec's PTX assembled by
each ptxas named (`-arch=sm_90a -O3`), launched by tilec's driver: ptxas 13.0 and Triton's 12.8
give tilec's PTX the same SASS, but their cubins differ in ELF ABI (8 against 7) and in 13.0's
compatibility attributes (`EICOMPAT_ATTR_ENABLE_OPPORTUNISTIC_FINALIZATION`), the one difference
left between the two sides' binaries that the disassembly does not show (eighth session).
`--variants` adds tilec's PTX rewritten by benchmarks/matmul_ptx_variants.py's `VARIANTS` (those
that apply), assembled by tilec's ptxas: the place for a bisection of the PTX. A variant that
faults (the sixth session's `matmul_launch_ab.py` stopped on an illegal instruction) takes the
process's CUDA context with it: run `--variants` in an invocation of its own.
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from matmul_launch_ab import print_table  # noqa: E402
from matmul_ptx_variants import VARIANTS  # noqa: E402
from matmul_static import CASES  # noqa: E402
from paired_timer import paired_bench  # noqa: E402
from sweep import load_kernels  # noqa: E402


def ptx_params(ptx: str) -> list[str]:
    """The entry's parameter types in order (`u64` or `u32`)."""
    head = ptx[ptx.index(".entry") : ptx.index(")", ptx.index(".entry"))]
    return re.findall(r"\.param \.(u64|u32|b64|b32|s32)", head)


def assemble(ptx: str, ptxas: str) -> bytes:
    """`ptx` assembled for sm_90a by `ptxas`."""
    with tempfile.TemporaryDirectory() as folder:
        source, binary = os.path.join(folder, "k.ptx"), os.path.join(folder, "k.cubin")
        Path(source).write_text(ptx)
        subprocess.run([ptxas, "-arch=sm_90a", "-O3", source, "-o", binary], check=True)
        return Path(binary).read_bytes()


def release(ptxas: str) -> str:
    """`ptxas`'s CUDA release, as its `--version` names it (`12.8`)."""
    text = subprocess.run([ptxas, "--version"], capture_output=True, text=True).stdout
    found = re.search(r"cuda_(\d+\.\d+)", text)
    return found.group(1) if found else ptxas


def triton_ptxas() -> str:
    import triton

    return os.path.join(os.path.dirname(triton.__file__), "backends", "nvidia", "bin", "ptxas")


def case_launches(
    case: str, driver, assemblers: list[str], variants: list[str]
) -> tuple[dict, float]:
    import torch

    m, n, k, dtype, config, _ = CASES[case]
    kind = {"fp16": torch.float16, "bf16": torch.bfloat16}[dtype]
    block_m, block_n, block_k, warps, stages = config
    a = torch.randn(1, m, k, device="cuda", dtype=kind)
    b = torch.randn(1, k, n, device="cuda", dtype=kind)
    c = torch.empty(1, m, n, device="cuda", dtype=kind)
    strides = [*a.stride(), *b.stride(), *c.stride()]
    grid = ((m + block_m - 1) // block_m * ((n + block_n - 1) // block_n), 1)
    meta = dict(BLOCK_M=block_m, BLOCK_N=block_n, BLOCK_K=block_k, GROUP_M=8, BIAS_RELU=False,
                num_warps=warps, num_stages=stages)  # fmt: skip
    args = (a, b, c, c, m, n, k, *strides)
    pointers = [t.data_ptr() for t in (a, b, c, c)]
    launches = {}
    for side in ("tilec", "triton"):
        jitted = load_kernels(side)["sweep_matmul"]
        compiled = jitted.warmup(*args, grid=grid, **meta)
        ptx = compiled.asm["ptx"]
        if side == "tilec":
            values = [*pointers, m, n, k, *strides]
            shared = compiled.metadata["shared_bytes"]
            name = compiled.metadata["name"]
        else:
            values = [*pointers, m, n, k, *[s for s in strides if s != 1], 0, 0]
            shared, name = compiled.metadata.shared, compiled.metadata.name
        kinds = ptx_params(ptx)
        if len(kinds) != len(values):
            raise SystemExit(f"{side}: {len(kinds)} parameters in the PTX, {len(values)} built")
        signature = ["*i8" if t in ("u64", "b64") else "i32" for t in kinds]
        binaries = {f"{side} cubin": compiled.asm["cubin"]}
        for ptxas in assemblers if side == "tilec" else ():
            binaries[f"tilec PTX, ptxas {release(ptxas)}"] = assemble(ptx, ptxas)
        for variant in variants if side == "tilec" else ():
            from tilec_nvidia.codegen import find_ptxas

            text = VARIANTS[variant](ptx)
            if text is None:
                print(f"{case}: variant {variant} does not apply")
                continue
            binaries[f"tilec PTX, {variant}"] = assemble(text, find_ptxas() or "ptxas")
        for label, binary in binaries.items():
            loaded = driver.load(binary, name, is_ptx=False, shared_bytes=shared,
                                 signature=signature)  # fmt: skip

            def by_driver(loaded=loaded, values=values):
                stream = torch.cuda.current_stream().cuda_stream
                driver.launch(loaded, grid, warps, 32, values, stream=stream)

            launches[f"{label}, tilec's driver"] = by_driver

        def own(jitted=jitted):
            jitted[grid](*args, **meta)

        launches[f"{side} own launch"] = own
    reference = torch.matmul(a.float(), b.float())
    for label, launch in launches.items():
        c.fill_(float("nan"))
        launch()
        torch.cuda.synchronize()
        error = float(torch.linalg.norm((c.float() - reference).flatten())
                      / torch.linalg.norm(reference.flatten()))  # fmt: skip
        if not error < 2e-2:
            raise SystemExit(f"{case}: {label} is wrong (relative error {error:.2e})")
    return launches, 2.0 * m * n * k


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--cases", type=lambda s: s.split(","),
                        default=["square3072", "longk1024", "skinny"])  # fmt: skip
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--ptxas", type=lambda s: s.split(","), default=[],
                        help="also tilec's PTX assembled by these ptxas")  # fmt: skip
    parser.add_argument("--triton-ptxas", action="store_true",
                        help="also tilec's PTX assembled by the ptxas Triton ships")  # fmt: skip
    parser.add_argument("--variants", type=lambda s: s.split(","), default=[],
                        help="also tilec's PTX rewritten by these matmul_ptx_variants")  # fmt: skip
    args = parser.parse_args()
    unknown = [name for name in args.variants if name not in VARIANTS]
    if unknown:
        parser.error(f"--variants: unknown {', '.join(unknown)}; known: {', '.join(VARIANTS)}")
    assemblers = args.ptxas + ([triton_ptxas()] if args.triton_ptxas else [])
    import torch

    from tilec_nvidia.driver import CudaDriver

    torch.empty(1, device="cuda")  # torch's context, current: the driver uses it
    driver = CudaDriver()
    print(torch.cuda.get_device_name())
    for case in args.cases:
        launches, flops = case_launches(case, driver, assemblers, args.variants)
        times = {label: [] for label in launches}
        for _ in range(args.rounds):
            for label, us in paired_bench(launches, 25, 100).items():
                times[label].append(us)
        print_table(f"{case} ({CASES[case][:4]}, {CASES[case][4]})", times, flops)
    return 0


if __name__ == "__main__":
    sys.exit(main())
