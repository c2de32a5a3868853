"""Where the sweep's attention forward loses to Triton at head dim 128 (issue 23): the binary, its
launch or the ptxas that assembled it.

    python benchmarks/attention_launch_ab.py [--cases 1x16x16384x128:128x64:8:3,...] [--rounds 3]

Needs an NVIDIA GPU, torch and Triton. A case is `BATCHxHEADSxNxD:BLOCK_MxBLOCK_N:WARPS:STAGES`
(non-causal; `:causal` appended for the causal kernel). The sweep's `sweep_attn_fwd` is compiled
by both compilers as benchmarks/attention_static.py compiles it (the sweep's specialization);
each cubin is loaded and launched by the one ctypes launcher of benchmarks/matmul_launch_ab.py,
under its three loads (`driver`: tilec's, no cache configuration; `triton`: Triton's,
`CU_FUNC_CACHE_PREFER_SHARED` and the opt-in limit; `prefer-l1`). tilec's PTX is also assembled
by the ptxas Triton ships (`tilec PTX + Triton's ptxas`), and each side's own launch (the
sweep's) is timed. Every variant is checked against torch's attention first, then timed with
`triton.testing.do_bench` (median), interleaved over `--rounds`.

Read: Triton's cubin as slow as tilec's through the `driver` load -> the launch (the cache
configuration); tilec's PTX as fast as Triton's once assembled by Triton's ptxas -> the ptxas
this machine gives tilec (`TILEC_PTXAS`); tilec's cubin slower through every load -> the code.
The static comparison (attention_static.py) finds the d128 128x64 w8 loops' instructions equal.
"""

from __future__ import annotations

import argparse
import ctypes
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import attention_static  # noqa: E402
from matmul_launch_ab import CACHE, Driver, open_driver, time_table  # noqa: E402

CASES = ["1x16x16384x128:128x64:8:3", "8x16x2048x128:128x64:8:3", "4x16x4096x128:64x64:4:3"]
"""The sweep's slowest head-dim-128 rows (RESULTS.md, fifth session: 0.93-0.95)."""


def parse(case: str) -> tuple[tuple[int, ...], dict]:
    shape, blocks, warps, stages, *causal = case.split(":")
    batch, heads, n, d = (int(x) for x in shape.split("x"))
    cfg = attention_static.parse_config(f"{d}:{blocks}:{warps}:{stages}", causal == ["causal"])
    return (batch, heads, n, d), cfg


def triton_ptxas_cubin(ptx: str) -> bytes:
    from triton.backends.nvidia.compiler import get_ptxas

    with tempfile.TemporaryDirectory() as folder:
        source, binary = Path(folder) / "k.ptx", Path(folder) / "k.cubin"
        source.write_text(ptx)
        command = [get_ptxas(90).path, "-arch=sm_90a", "-O3", str(source), "-o", str(binary)]
        subprocess.run(command, check=True)
        return binary.read_bytes()


def variants(case: str, driver: Driver, out: Path) -> tuple[dict, float]:
    import torch
    from sweep import load_kernels

    (batch, heads, n, d), cfg = parse(case)
    q, k, v = (torch.randn(batch, heads, n, d, device="cuda", dtype=torch.float16) * 0.5
               for _ in range(3))  # fmt: skip
    o = torch.empty_like(q)
    m = torch.empty(batch, heads, n, device="cuda", dtype=torch.float32)
    scale = d**-0.5
    grid = (n // cfg["block_m"], batch * heads, 1)
    threads = 32 * cfg["warps"]
    pointers = [ctypes.c_uint64(t.data_ptr()) for t in (q, k, v, o, m)]
    ints = [ctypes.c_int32(x) for x in (*q.stride()[:3], heads, n)]
    params = [*pointers, ctypes.c_float(scale), *ints]
    attention_static.KERNEL[0] = "sweep"
    launches = {}
    for side in ("tilec", "triton"):
        made = (attention_static.compile_tilec if side == "tilec" else attention_static.compile_triton)(cfg, out)  # fmt: skip
        image, shared = Path(made["paths"]["cubin"]).read_bytes(), made["shared"]
        extra = [] if side == "tilec" else [ctypes.c_uint64(0), ctypes.c_uint64(0)]  # scratches
        images = {f"{side} cubin": image}
        if side == "tilec":
            ptx = Path(made["paths"]["ptx"]).read_text()
            images["tilec PTX + Triton's ptxas"] = triton_ptxas_cubin(ptx)
            print(f"{case}: tilec's ptxas {made['ptxas']}", flush=True)
        for what, binary in images.items():
            for way in CACHE:
                function = driver.load(binary, "sweep_attn_fwd", shared, way)
                launches[f"{what}, {way} load"] = driver.launcher(function, grid, threads, shared, [*params, *extra])  # fmt: skip
        jitted = load_kernels(side)["sweep_attn_fwd"]

        def own(jitted=jitted):
            jitted[grid[:2]](q, k, v, o, m, scale, *q.stride()[:3], heads, n, HEAD_DIM=d,
                             BLOCK_M=cfg["block_m"], BLOCK_N=cfg["block_n"],
                             CAUSAL=cfg["causal"], num_warps=cfg["warps"],
                             num_stages=cfg["stages"])  # fmt: skip

        launches[f"{side} own launch"] = own
    reference = torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=cfg["causal"])
    for name, launch in launches.items():
        o.fill_(float("nan"))
        launch()
        torch.cuda.synchronize()
        error = float((o.float() - reference.float()).norm() / reference.float().norm())
        if not error < 1e-2:
            raise SystemExit(f"{case}: {name} is wrong (relative error {error:.2e})")
    flops = 4.0 * batch * heads * n * n * d * (0.5 if cfg["causal"] else 1.0)
    return launches, flops


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--cases", type=lambda s: s.split(","), default=CASES)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    from triton.testing import do_bench

    driver = open_driver()
    with tempfile.TemporaryDirectory() as folder:
        for case in args.cases:
            launches, flops = variants(case, driver, Path(folder))
            timed = [(name, launch, do_bench) for name, launch in launches.items()]
            time_table(case, timed, args.rounds, flops)
    return 0


if __name__ == "__main__":
    sys.exit(main())
