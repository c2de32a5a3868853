"""The sweep's attention backward (benchmarks/sweep_attention.py, Triton 3.6 tutorial 06's
algorithm) compiled by tilec, for the sm_90a checks on the CPU and the GPU tests against the
interpreter (tests/nvidia/test_nvidia_attention_bwd.py)."""

from __future__ import annotations

from pathlib import Path

import numpy as np

import tilec
import tilec.language as tl

SOURCE = Path(__file__).resolve().parents[2] / "benchmarks" / "sweep_attention.py"
POINTERS = ("Q", "K", "V", "DO", "DQ", "DK", "DV", "M", "D")
INTEGERS = ("stride_z", "stride_h", "stride_n", "H", "N_CTX")
CONFIGS = [  # head dim, causal, (BLOCK_M1, BLOCK_N1, BLOCK_M2, BLOCK_N2, SLICE, warps, stages)
    (64, True, (64, 64, 64, 64, 2, 4, 3)),
    (128, False, (64, 64, 64, 64, 2, 4, 3)),
    (64, False, (32, 128, 128, 32, 2, 4, 5)),
    (128, True, (64, 64, 64, 64, 2, 4, 3)),
]
"""benchmarks/sweep_cases.py's quick backward cases (ATTN_BWD_CONFIGS)."""
LOG2E = 1.4426950408889634


def kernels() -> dict:
    """The file's kernels with tilec's `jit` and `tl` (as the sweep executes it)."""
    namespace = {"jit": tilec.jit, "tl": tl, "__name__": "attention_bwd_kernels_source"}
    exec(compile(SOURCE.read_text(), str(SOURCE), "exec"), namespace)
    return namespace


def compile_bwd(head_dim: int, causal: bool, config: tuple, backend: str = "nvidia",
                target: str | None = "sm_90a"):  # fmt: skip
    """`sweep_attn_bwd` specialized as the sweep's launches on contiguous fp16 tensors."""
    block_m1, block_n1, block_m2, block_n2, slice_, warps, stages = config
    signature = {**dict.fromkeys(POINTERS[:7], "*fp16"), "M": "*fp32", "D": "*fp32",
                 "sm_scale": "fp32", **dict.fromkeys(INTEGERS, "i32")}  # fmt: skip
    constexprs = dict(BLOCK_M1=block_m1, BLOCK_N1=block_n1, BLOCK_M2=block_m2,
                      BLOCK_N2=block_n2, SLICE=slice_, HEAD_DIM=head_dim, CAUSAL=causal)  # fmt: skip
    return tilec.compile(
        kernels()["sweep_attn_bwd"], signature, constexprs, backend=backend, target=target,
        num_warps=warps, num_stages=stages, divisibility=(*POINTERS, *INTEGERS),
    )  # fmt: skip


def softmax_rows(q, k, scale: float, causal: bool) -> tuple:
    """exp(s - top) of the scores s = q k^T scale (causal: the later keys masked), with each
    row's max `top` and sum `total` (keeping dims), in float64."""
    n = q.shape[-2]
    s = q @ k.transpose(0, 2, 1) * scale
    if causal:
        s = np.where(np.tri(n, dtype=bool), s, -np.inf)
    top = s.max(-1, keepdims=True)
    p = np.exp(s - top)
    return p, top, p.sum(-1, keepdims=True)


def bwd_args(rng, heads: int, n: int, d: int, causal: bool) -> tuple[list, dict]:
    """The launch arguments (batch 1; K pre-scaled as the tutorial's host code does, M and
    Delta from a float64 forward) and the float64 dQ, dK, dV."""
    q, k, v, do = (rng.standard_normal((heads, n, d)) * s for s in (0.5, 0.5, 0.5, 1.0))
    q, k, v, do = (x.astype(np.float16).astype(np.float64) for x in (q, k, v, do))
    scale = d**-0.5
    p, top, total = softmax_rows(q, k, scale, causal)
    p /= total
    o = (p @ v).astype(np.float16).astype(np.float64)
    m = ((top + np.log(total)) * LOG2E)[..., 0]
    delta = (o * do).sum(-1)
    ds = p * (do @ v.transpose(0, 2, 1) - delta[..., None])
    expected = {"dq": ds @ k * scale, "dk": ds.transpose(0, 2, 1) @ q * scale,
                "dv": p.transpose(0, 2, 1) @ do}  # fmt: skip
    k_scaled = (k * (scale * LOG2E)).astype(np.float16)
    out = [np.full(heads * n * d, np.nan, np.float16) for _ in range(3)]
    flat = [x.astype(np.float16).reshape(-1) for x in (q, k_scaled, v)]
    args = [*flat, np.float32(scale), do.astype(np.float16).reshape(-1), *out,
            m.astype(np.float32).reshape(-1), delta.astype(np.float32).reshape(-1),
            heads * n * d, n * d, d, heads, n]  # fmt: skip
    return args, expected
