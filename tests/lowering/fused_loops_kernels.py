"""The persistent matmul (`tl.range(..., flatten=True)`, Triton 3.6 tutorial 09's pattern, as
benchmarks/persistent_vs_triton.py's `persistent` kernel) whose tile loop and K loop
`fuse-nested-loops` fuses: compiled for sm_90a by test_fused_loops_sm90.py and
test_fused_loops_issue.py, run on the GPU by tests/nvidia/test_fused_loops_gpu.py."""

from __future__ import annotations

import tilec
import tilec.language as tl


@tilec.jit
def tile_of(tile, num_m, num_n, GROUP: tl.constexpr):
    """The tile's row and column, tiles taken in groups of GROUP rows (tutorial 03's order)."""
    per_group = GROUP * num_n
    first_m = (tile // per_group) * GROUP
    rows = tl.minimum(num_m - first_m, GROUP)
    return first_m + (tile % per_group) % rows, (tile % per_group) // rows


@tilec.jit
def persistent_matmul(a_ptr, b_ptr, c_ptr, M, N, K, BM: tl.constexpr, BN: tl.constexpr,
                      BK: tl.constexpr, PROGRAMS: tl.constexpr, GROUP: tl.constexpr = 8,
                      B_NK: tl.constexpr = True, FLAT: tl.constexpr = True):  # fmt: skip
    """C (M x N, C's element type) = A (M x K) B, PROGRAMS programs looping over the tiles: in
    groups of GROUP rows (GROUP = 1: row by row, `tile // num_n`), B stored N x K (the
    benchmark's) or, without B_NK, K x N; FLAT: the tile loop's `flatten`."""
    num_m = tl.cdiv(M, BM)
    num_n = tl.cdiv(N, BN)
    for tile in tl.range(tl.program_id(0), num_m * num_n, PROGRAMS, flatten=FLAT):
        if GROUP == 1:
            pid_m = tile // num_n
            pid_n = tile % num_n
        else:
            pid_m, pid_n = tile_of(tile, num_m, num_n, GROUP)
        rm = (pid_m * BM + tl.arange(0, BM)) % M
        rn = (pid_n * BN + tl.arange(0, BN)) % N
        rk = tl.arange(0, BK)
        acc = tl.zeros((BM, BN), dtype=tl.float32)
        for k in range(0, tl.cdiv(K, BK)):
            a = tl.load(a_ptr + rm[:, None] * K + (k * BK + rk)[None, :],
                        mask=(k * BK + rk)[None, :] < K, other=0.0)  # fmt: skip
            if B_NK:
                b = tl.load(b_ptr + rn[None, :] * K + (k * BK + rk)[:, None],
                            mask=(k * BK + rk)[:, None] < K, other=0.0)  # fmt: skip
            else:
                b = tl.load(b_ptr + (k * BK + rk)[:, None] * N + rn[None, :],
                            mask=(k * BK + rk)[:, None] < K, other=0.0)  # fmt: skip
            acc = tl.dot(a, b, acc)
        cm = pid_m * BM + tl.arange(0, BM)
        cn = pid_n * BN + tl.arange(0, BN)
        tl.store(c_ptr + cm[:, None] * N + cn[None, :], acc.to(c_ptr.dtype.element_ty),
                 mask=(cm[:, None] < M) & (cn[None, :] < N))  # fmt: skip
