"""The sweep's attention forward on sm_90a, compiled on the CPU (issue 23): the loops keep the
softmax statistics m_i and l_i in the slice of the accumulator's layout (the M store after the
loop gives their class a 1-D blocked layout, which cost four conversions through shared memory
an iteration before `sink_conversions` sank a conversion of a conversion), so the loops have
Triton's two `bar.sync` an iteration; and the lowered kernel computes O and M on the CPU wgmma
emulator (tests/lowering/wgmma_emulator.py) as float64 does."""

from __future__ import annotations

import re

import numpy as np
import pytest
from attention_bwd_kernels import LOG2E, kernels, softmax_rows
from test_attention_bwd_sm90 import _loop_bodies, _ptx_loops

import tilec

POINTERS = ("Q", "K", "V", "Out", "M")
INTEGERS = ("stride_z", "stride_h", "stride_n", "H", "N_CTX")


def compile_fwd(head_dim: int, causal: bool, config: tuple, backend: str = "nvidia",
                target: str | None = "sm_90a"):  # fmt: skip
    """`sweep_attn_fwd` specialized as the sweep's launches on contiguous fp16 tensors."""
    block_m, block_n, warps, stages = config
    signature = {**dict.fromkeys(POINTERS[:4], "*fp16"), "M": "*fp32", "sm_scale": "fp32",
                 **dict.fromkeys(INTEGERS, "i32")}  # fmt: skip
    constexprs = dict(HEAD_DIM=head_dim, BLOCK_M=block_m, BLOCK_N=block_n, CAUSAL=causal)
    return tilec.compile(
        kernels()["sweep_attn_fwd"], signature, constexprs, backend=backend, target=target,
        num_warps=warps, num_stages=stages, divisibility=(*POINTERS, *INTEGERS),
    )  # fmt: skip


def fwd_args(rng, heads: int, n: int, d: int, causal: bool) -> tuple[list, dict]:
    """The launch arguments (batch 1) and the float64 O and M (log2 of each row's softmax sum of
    the scores in base 2)."""
    q, k, v = (
        (rng.standard_normal((heads, n, d)) * 0.5).astype(np.float16).astype(np.float64)
        for _ in range(3)
    )
    scale = d**-0.5
    p, top, total = softmax_rows(q, k, scale, causal)
    expected = {"o": p / total @ v, "m": ((top + np.log(total)) * LOG2E)[..., 0]}
    out = np.full(heads * n * d, np.nan, np.float16)
    m = np.full(heads * n, np.nan, np.float32)
    flat = [x.astype(np.float16).reshape(-1) for x in (q, k, v)]
    args = [*flat, out, m, np.float32(scale), heads * n * d, n * d, d, heads, n]
    return args, expected


@pytest.mark.parametrize(
    ("head_dim", "causal", "config"),
    [(64, False, (64, 64, 4, 3)), (64, True, (128, 64, 8, 3)), (128, True, (64, 64, 4, 3))],
)
def test_forward_loops_keep_the_softmax_rows_in_the_accumulator_layout(head_dim, causal, config):
    compiled = compile_fwd(head_dim, causal, config)
    gir = compiled.asm["gir"]
    loops = _loop_bodies(gir, "scf.for")
    assert len(loops) == (2 if causal else 1)
    carried = re.findall(r"= scf\.for .*", gir)
    for line in carried:  # acc in #mma, l_i and m_i in its slice
        assert re.search(r"tensor<\d+xf32, #slice\d*>, tensor<\d+xf32, #slice\d*>", line), line
    # in registers: to p's operand layout, and alpha from the slice of QK^T's #mma to the slice
    # of the accumulator's (head dim 128: another instrShape, the same rows in each thread)
    mma_slices = re.findall(r"^#(slice\d*) = #gpu\.slice<\{dim = 1, parent = #mma", gir, re.M)
    for body in loops:
        converts = re.findall(r"gpu\.convert_layout %\S+ : tensor<[^,]+, #(\w+)>", body)
        assert all(c.startswith("dot_op") or c in mma_slices for c in converts), converts
    # the ring's prologue copies, then Q, the kernel's first shared-memory access (no barrier
    # before its stores, the ring's neither), published by one barrier before the loop:
    # Triton's one barrier (the copies no longer wait for Q's load: wgmma_lowering._Publication)
    ptx = compiled.asm["ptx"]
    stored = ptx.index("fence.proxy.async")
    assert "bar.sync" not in ptx[:stored]
    assert "cp.async.commit_group" in ptx[:stored]
    assert ptx[stored : ptx.index("cp.async.wait_group", stored)].count("bar.sync") == 1
    loops = _ptx_loops(ptx)
    # the diagonal loop runs BLOCK_M / BLOCK_N times: no loop left in the PTX where that is 1
    assert len(loops) == (2 if causal and config[0] > config[1] else 1)
    for body in loops:
        assert "wgmma.mma_async" in body and body.count("bar.sync") == 2, body.count("bar.sync")
        # Q K^T's wait, which retires the last P @ V too (no second wait for it), and the one
        # after committing P @ V (Triton has none there); descriptors in 32 bits
        assert body.count("wgmma.wait_group") == 2, body.count("wgmma.wait_group")
        assert "bfe.u64" not in body and "shr.u64" not in body


@pytest.mark.parametrize(("head_dim", "causal"), [(64, False), (64, True)])
def test_forward_on_the_wgmma_emulator_matches_float64(head_dim, causal):
    """The sm_90a gir lowered with the emulated wgmma and cp.async, run on the CPU: O and M of
    two heads of 128 queries, 64 x 64 blocks on 4 warps, 3 stages."""
    from test_lower_wgmma_emulated import run_emulated

    rng = np.random.default_rng(23)
    heads, n, config = 2, 128, (64, 64, 4, 3)
    args, expected = fwd_args(rng, heads, n, head_dim, causal)
    run_emulated(compile_fwd(head_dim, causal, config), args, (n // config[0], heads))
    got = args[3].astype(np.float64).reshape(heads, n, head_dim)
    np.testing.assert_allclose(got, expected["o"], rtol=1e-2, atol=1e-2, err_msg="o")
    np.testing.assert_allclose(args[4].reshape(heads, n), expected["m"], rtol=1e-4, atol=1e-3)
