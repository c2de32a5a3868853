"""fp16 (bf16, fp32 in tf32, or fp8) matmul: tilec's nvidia backend against Triton on the same source.

    python benchmarks/matmul_vs_triton.py [--size 4096] [--dtype float16] [--quick] [--target sm_80]

Needs an NVIDIA GPU, torch and triton (the device machine has them). The kernel is Triton's
tutorial 03 matmul (grouped program order, masks, f32 accumulation), written once and exec'd
under `tilec` and under `triton`. Each configuration (BLOCK_M, BLOCK_N, BLOCK_K, num_warps,
num_stages) runs on both; times are `do_bench` means (`tilec.testing`'s for tilec,
Triton's for Triton), TFLOP/s = 2 M N K / time.
Triton's tutorial configuration for fp16 on Hopper is the first row. With `--dtype float32` the
dot runs in tf32 on both (the default `input_precision` of each), with `CONFIGS_F32`. With
`--dtype float8_e4m3fn` or `float8_e5m2` B is stored K-major (Triton's fp8 tutorial: `b.T`), with
`CONFIGS_FP8` (wgmma k32 on sm_90a, Triton's default max_num_imprecise_acc on both).
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

KERNEL = """
@jit
def matmul_kernel(a_ptr, b_ptr, c_ptr, M, N, K, stride_am, stride_ak, stride_bk, stride_bn,
                  stride_cm, stride_cn, BLOCK_SIZE_M: tl.constexpr, BLOCK_SIZE_N: tl.constexpr,
                  BLOCK_SIZE_K: tl.constexpr, GROUP_SIZE_M: tl.constexpr):
    pid = tl.program_id(axis=0)
    num_pid_m = tl.cdiv(M, BLOCK_SIZE_M)
    num_pid_n = tl.cdiv(N, BLOCK_SIZE_N)
    num_pid_in_group = GROUP_SIZE_M * num_pid_n
    group_id = pid // num_pid_in_group
    first_pid_m = group_id * GROUP_SIZE_M
    group_size_m = min(num_pid_m - first_pid_m, GROUP_SIZE_M)
    pid_m = first_pid_m + ((pid % num_pid_in_group) % group_size_m)
    pid_n = (pid % num_pid_in_group) // group_size_m
    offs_am = (pid_m * BLOCK_SIZE_M + tl.arange(0, BLOCK_SIZE_M)) % M
    offs_bn = (pid_n * BLOCK_SIZE_N + tl.arange(0, BLOCK_SIZE_N)) % N
    offs_k = tl.arange(0, BLOCK_SIZE_K)
    a_ptrs = a_ptr + (offs_am[:, None] * stride_am + offs_k[None, :] * stride_ak)
    b_ptrs = b_ptr + (offs_k[:, None] * stride_bk + offs_bn[None, :] * stride_bn)
    accumulator = tl.zeros((BLOCK_SIZE_M, BLOCK_SIZE_N), dtype=tl.float32)
    for k in range(0, tl.cdiv(K, BLOCK_SIZE_K)):
        a = tl.load(a_ptrs, mask=offs_k[None, :] < K - k * BLOCK_SIZE_K, other=0.0)
        b = tl.load(b_ptrs, mask=offs_k[:, None] < K - k * BLOCK_SIZE_K, other=0.0)
        accumulator = tl.dot(a, b, accumulator)
        a_ptrs += BLOCK_SIZE_K * stride_ak
        b_ptrs += BLOCK_SIZE_K * stride_bk
    c = accumulator.to(tl.float16)
    offs_cm = pid_m * BLOCK_SIZE_M + tl.arange(0, BLOCK_SIZE_M)
    offs_cn = pid_n * BLOCK_SIZE_N + tl.arange(0, BLOCK_SIZE_N)
    c_ptrs = c_ptr + stride_cm * offs_cm[:, None] + stride_cn * offs_cn[None, :]
    c_mask = (offs_cm[:, None] < M) & (offs_cn[None, :] < N)
    tl.store(c_ptrs, c, mask=c_mask)
"""

CONFIGS = [  # BLOCK_M, BLOCK_N, BLOCK_K, num_warps, num_stages
    (128, 256, 64, 8, 3),
    (128, 128, 64, 8, 3),
    (128, 128, 32, 4, 4),
    (64, 128, 32, 4, 4),
    (128, 64, 32, 4, 4),
]


CONFIGS_F32 = [  # f32 operands take twice the shared memory: K blocks of 32
    (128, 128, 32, 8, 3),
    (128, 256, 32, 8, 3),
    (128, 128, 64, 8, 3),
    (128, 128, 32, 4, 4),
    (64, 128, 32, 4, 4),
]


CONFIGS_FP8 = [  # the sweep's: K blocks of 128 bytes
    (128, 256, 128, 8, 3),
    (128, 128, 128, 4, 4),
    (64, 128, 64, 4, 4),
]


def load_kernel(flavour: str):
    if flavour == "tilec":
        import tilec as front
        import tilec.language as tl
    else:
        import triton as front
        import triton.language as tl
    namespace = {"jit": front.jit, "tl": tl}
    path = Path(tempfile.gettempdir()) / f"matmul_vs_triton_{flavour}.py"
    path.write_text(KERNEL)  # inspect.getsource (both JITs need it) reads the file
    exec(compile(KERNEL, str(path), "exec"), namespace)
    return namespace["matmul_kernel"]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=4096, help="M = N = K")
    parser.add_argument(
        "--dtype",
        default="float16",
        choices=("float16", "bfloat16", "float32", "float8_e4m3fn", "float8_e5m2"),
    )
    parser.add_argument("--quick", action="store_true", help="fewer repetitions")
    parser.add_argument("--stages", default="", help="num_stages values to try, like 1,2,3,4")
    parser.add_argument("--configs", type=int, default=len(CONFIGS), help="the first N configs")
    parser.add_argument(
        "--target",
        default=None,
        help="tilec's arch (sm_80: the mma.sync path); default: the device's",
    )
    args = parser.parse_args()
    fp8 = args.dtype.startswith("float8")
    table = CONFIGS_F32 if args.dtype == "float32" else CONFIGS_FP8 if fp8 else CONFIGS
    configs = table[: args.configs]
    if args.stages:
        stage_list = [int(s) for s in args.stages.split(",")]
        configs = [(*c[:4], s) for c in configs for s in stage_list]
    import torch
    from triton.testing import do_bench

    import tilec.testing

    size = args.size
    dtype = getattr(torch, args.dtype)
    gen = torch.Generator(device="cuda").manual_seed(0)
    a = torch.randn(size, size, device="cuda", generator=gen).to(dtype)
    b = torch.randn(size, size, device="cuda", generator=gen).to(dtype)
    b = b.T if fp8 else b  # float8: B K-major (stride_bk 1), as Triton's tutorial
    ref = (a.float() @ b.float()).half()
    kernels = {"tilec": load_kernel("tilec"), "triton": load_kernel("triton")}
    target = f"; tilec target {args.target}" if args.target else ""
    print(f"device: {torch.cuda.get_device_name()}; {args.dtype} {size}^3{target}")
    print("| BLOCK_M, N, K, warps, stages | tilec TFLOP/s | Triton TFLOP/s | tilec/Triton | "
          "tilec max error |")  # fmt: skip
    print("|---|---|---|---|---|")
    for bm, bn, bk, warps, stages in configs:
        row = {}
        for name, kernel in kernels.items():
            c = torch.empty(size, size, device="cuda", dtype=torch.float16)
            grid = (((size + bm - 1) // bm) * ((size + bn - 1) // bn),)

            meta = dict(BLOCK_SIZE_M=bm, BLOCK_SIZE_N=bn, BLOCK_SIZE_K=bk, GROUP_SIZE_M=8,
                        num_warps=warps, num_stages=stages)  # fmt: skip
            if name == "tilec" and args.target:
                meta["target"] = args.target

            def call(kernel=kernel, c=c, grid=grid, meta=meta):
                kernel[grid](
                    a, b, c, size, size, size, a.stride(0), a.stride(1), b.stride(0),
                    b.stride(1), c.stride(0), c.stride(1), **meta,
                )  # fmt: skip

            try:
                call()
                torch.cuda.synchronize()
            except Exception as error:  # report the configuration and go on
                row[name] = (float("nan"), f"{type(error).__name__}: {str(error)[:200]}")
                continue
            error = float((c.float() - ref.float()).abs().max())
            timer = tilec.testing.do_bench if name == "tilec" else do_bench
            ms = timer(call, warmup=5 if args.quick else 25, rep=20 if args.quick else 100)
            row[name] = (2 * size**3 / ms / 1e9, error)
        tilec_tf, tilec_err = row["tilec"]
        triton_tf, _ = row["triton"]
        print(f"| {bm}, {bn}, {bk}, {warps}, {stages} | {tilec_tf:.1f} | {triton_tf:.1f} | "
              f"{tilec_tf / triton_tf:.3f} | {tilec_err} |")  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
