"""tf32 and int8 `tl.dot` on the GPU: one masked matmul kernel timed at one size, beside
torch.matmul (cuBLAS; tf32 enabled for f32). A first data point of the mma.sync m16n8k8 and
m16n8k32 paths, not a tuned comparison.

    python benchmarks/dot_numerics.py [--size 4096]
"""

from __future__ import annotations

import argparse

import torch

import tilec
import tilec.language as tl
from tilec.testing import do_bench


@tilec.jit
def matmul_kernel(a_ptr, b_ptr, c_ptr, M, N, K, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
                  BLOCK_K: tl.constexpr, PRECISION: tl.constexpr, INTEGER: tl.constexpr):  # fmt: skip
    offs_m = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = tl.program_id(1) * BLOCK_N + tl.arange(0, BLOCK_N)
    offs_k = tl.arange(0, BLOCK_K)
    if INTEGER:
        acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.int32)
    else:
        acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k in range(0, K, BLOCK_K):
        rk = k + offs_k
        a_mask = (offs_m[:, None] < M) & (rk[None, :] < K)
        b_mask = (rk[:, None] < K) & (offs_n[None, :] < N)
        a = tl.load(a_ptr + offs_m[:, None] * K + rk[None, :], mask=a_mask)
        b = tl.load(b_ptr + rk[:, None] * N + offs_n[None, :], mask=b_mask)
        acc = tl.dot(a, b, acc, input_precision=PRECISION)
    c_mask = (offs_m[:, None] < M) & (offs_n[None, :] < N)
    tl.store(c_ptr + offs_m[:, None] * N + offs_n[None, :], acc, mask=c_mask)


CASES = [  # name, dtype, input_precision, (BLOCK_M, BLOCK_N, BLOCK_K), num_warps, num_stages
    ("f32 tf32", torch.float32, "tf32", (128, 128, 32), 8, 3),
    ("f32 tf32x3", torch.float32, "tf32x3", (128, 128, 32), 8, 3),
    ("i8 -> i32", torch.int8, None, (128, 128, 64), 8, 3),
]


def time_case(size: int, dtype, precision, blocks, warps: int, stages: int) -> tuple[float, float]:
    """(tilec ms, torch ms) of one size^3 matmul."""
    integer = dtype == torch.int8
    if integer:
        a = torch.randint(-128, 128, (size, size), dtype=dtype, device="cuda")
        b = torch.randint(-128, 128, (size, size), dtype=dtype, device="cuda")
        c = torch.empty((size, size), dtype=torch.int32, device="cuda")
    else:
        a = torch.randn((size, size), dtype=dtype, device="cuda")
        b = torch.randn((size, size), dtype=dtype, device="cuda")
        c = torch.empty((size, size), dtype=dtype, device="cuda")
    grid = (size // blocks[0], size // blocks[1])

    def run() -> None:
        matmul_kernel[grid](a, b, c, size, size, size, BLOCK_M=blocks[0], BLOCK_N=blocks[1],
                            BLOCK_K=blocks[2], PRECISION=precision, INTEGER=integer,
                            num_warps=warps, num_stages=stages)  # fmt: skip

    if integer:
        reference = getattr(torch, "_int_mm", None)
        torch_ms = do_bench(lambda: reference(a, b)) if reference else float("nan")
    else:
        torch_ms = do_bench(lambda: torch.matmul(a, b))
    return do_bench(run), torch_ms


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--size", type=int, default=4096)
    size = parser.parse_args().size
    torch.backends.cuda.matmul.allow_tf32 = True
    flops = 2.0 * size**3
    print("| case | blocks (M, N, K), warps, stages | tilec ms | tilec T(FL)OP/s | torch ms |")
    print("|---|---|---|---|---|")
    for name, dtype, precision, blocks, warps, stages in CASES:
        ms, torch_ms = time_case(size, dtype, precision, blocks, warps, stages)
        print(f"| {name} | {blocks}, {warps}, {stages} | {ms:.3f} | {flops / ms / 1e9:.1f} | "
              f"{torch_ms:.3f} |")  # fmt: skip


if __name__ == "__main__":
    main()
