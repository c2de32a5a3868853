"""A loop that loads a row statistic one iteration ahead (the attention backward's m with its
load moved to the end of the body, carried to the next iteration; issue 23's A/B variant
`ahead`, benchmarks/attention_bwd_ab.py), compiled for sm_90a and run on the CPU wgmma emulator:
`remove-layout-conversions` carries the row and its stepped index in the slice of the
accumulator's layout, two new loop-carried values made one inside the other (it failed with an
IndexError, the second's yield slot taken before the first's)."""

from __future__ import annotations

import numpy as np
from test_lower_wgmma_emulated import run_emulated

import tilec
import tilec.language as tl


@tilec.jit
def rows_ahead(K, Q, M, Out, steps, BLOCK: tl.constexpr, D: tl.constexpr):
    offs_n = tl.arange(0, BLOCK)
    offs_d = tl.arange(0, D)
    k = tl.load(K + offs_n[:, None] * D + offs_d[None, :])
    acc = tl.zeros([BLOCK, D], dtype=tl.float32)
    offs_m = tl.arange(0, BLOCK)
    m = tl.load(M + offs_m)
    for _ in range(steps):
        q_t = tl.load(Q + offs_m[None, :] * D + offs_d[:, None])
        p_t = tl.math.exp2(tl.dot(k, q_t) - m[None, :])
        acc += tl.dot(p_t.to(tl.float16), tl.trans(q_t))
        offs_m += BLOCK
        m = tl.load(M + offs_m, mask=offs_m < steps * BLOCK, other=0.0)
    tl.store(Out + offs_n[:, None] * D + offs_d[None, :], acc)


def test_row_loaded_ahead_on_the_wgmma_emulator():
    block, d, steps = 64, 32, 3
    rng = np.random.default_rng(23)
    k = (rng.standard_normal((block, d)) * 0.25).astype(np.float16)
    q = (rng.standard_normal((steps * block, d)) * 0.25).astype(np.float16)
    m = rng.standard_normal(steps * block).astype(np.float32)
    out = np.full((block, d), np.nan, np.float32)
    kernel = tilec.compile(
        rows_ahead,
        {"K": "*fp16", "Q": "*fp16", "M": "*fp32", "Out": "*fp32", "steps": "i32"},
        {"BLOCK": block, "D": d},
        backend="nvidia",
        target="sm_90a",
        num_warps=4,
        num_stages=2,
        divisibility=("K", "Q", "M", "Out"),
    )
    loop = kernel.asm["gir"].split("scf.for")[-1]
    body = loop.split("scf.yield")[0]
    assert "tensor<64xf32, #blocked" not in body  # m loaded and carried in the slice of #mma
    args = [k.reshape(-1), q.reshape(-1), m, out.reshape(-1), steps]
    run_emulated(kernel, args, (1,))
    p_t = np.exp2(k.astype(np.float64) @ q.astype(np.float64).T - m[None, :])
    p_t = p_t.astype(np.float16).astype(np.float64)
    expected = p_t @ q.astype(np.float64)
    np.testing.assert_allclose(out, expected, rtol=1e-2, atol=1e-2)
