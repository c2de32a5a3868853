"""Flash-attention forward (online softmax, two `tl.dot`s a key block), causal and not, fp16
inputs with fp32 accumulation, checked against NumPy.

The kernel follows Triton's fused-attention tutorial with pointer arithmetic instead of tensor
descriptors. One program computes BLOCK_M query rows of one (batch, head) pair and walks the
keys in blocks of BLOCK_N in two stages: the blocks that need no mask (every key before the
program's first query row when causal, every whole block otherwise) and then the blocks that do
(the diagonal when causal, the ragged tail of the sequence otherwise). The softmax runs in base 2:
`sm_scale * log2(e)` is folded into the scores.
"""

import numpy as np

import tilec
import tilec.language as tl


@tilec.jit
def _attn_fwd_inner(
    acc, l_i, m_i, q, k_ptrs, v_ptrs, stride_kn, stride_vn, qk_scale, offs_m, offs_n, N_CTX,
    lo, hi, MASKED: tl.constexpr, CAUSAL: tl.constexpr, BLOCK_N: tl.constexpr,
):  # fmt: skip
    """Keys [lo, hi) into the running (acc, l_i, m_i); MASKED blocks check the sequence end and,
    when CAUSAL, that a key comes no later than its query."""
    for start_n in range(lo, hi, BLOCK_N):
        cols = start_n + offs_n
        if MASKED:
            k = tl.load(k_ptrs + start_n * stride_kn, mask=cols[None, :] < N_CTX, other=0.0)
        else:
            k = tl.load(k_ptrs + start_n * stride_kn)
        qk = tl.dot(q, k) * qk_scale
        if MASKED:
            keep = cols[None, :] < N_CTX
            if CAUSAL:
                keep = keep & (offs_m[:, None] >= cols[None, :])
            qk = tl.where(keep, qk, -1.0e6)
        m_ij = tl.maximum(m_i, tl.max(qk, 1))
        p = tl.exp2(qk - m_ij[:, None])
        alpha = tl.exp2(m_i - m_ij)
        l_i = l_i * alpha + tl.sum(p, 1)
        acc = acc * alpha[:, None]
        if MASKED:
            v = tl.load(v_ptrs + start_n * stride_vn, mask=cols[:, None] < N_CTX, other=0.0)
        else:
            v = tl.load(v_ptrs + start_n * stride_vn)
        acc = tl.dot(p.to(tl.float16), v, acc)
        m_i = m_ij
    return acc, l_i, m_i


@tilec.jit
def attn_fwd(
    Q, K, V, Out, sm_scale,
    stride_qz, stride_qh, stride_qm, stride_qk,
    stride_kz, stride_kh, stride_kn, stride_kk,
    stride_vz, stride_vh, stride_vn, stride_vk,
    stride_oz, stride_oh, stride_om, stride_ok,
    H, N_CTX,
    HEAD_DIM: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, CAUSAL: tl.constexpr,
):  # fmt: skip
    start_m = tl.program_id(0)
    off_hz = tl.program_id(1)
    off_z = off_hz // H
    off_h = off_hz % H
    offs_m = start_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = tl.arange(0, BLOCK_N)
    offs_d = tl.arange(0, HEAD_DIM)
    q_ptrs = Q + off_z * stride_qz + off_h * stride_qh
    q_ptrs = q_ptrs + offs_m[:, None] * stride_qm + offs_d[None, :] * stride_qk
    # K is loaded transposed (HEAD_DIM x BLOCK_N), so the first dot is q @ k.
    k_ptrs = K + off_z * stride_kz + off_h * stride_kh
    k_ptrs = k_ptrs + offs_d[:, None] * stride_kk + offs_n[None, :] * stride_kn
    v_ptrs = V + off_z * stride_vz + off_h * stride_vh
    v_ptrs = v_ptrs + offs_n[:, None] * stride_vn + offs_d[None, :] * stride_vk
    m_i = tl.zeros([BLOCK_M], dtype=tl.float32) - float("inf")
    l_i = tl.zeros([BLOCK_M], dtype=tl.float32) + 1.0
    acc = tl.zeros([BLOCK_M, HEAD_DIM], dtype=tl.float32)
    qk_scale = sm_scale * 1.44269504
    q = tl.load(q_ptrs, mask=offs_m[:, None] < N_CTX, other=0.0)
    if CAUSAL:
        lo = start_m * BLOCK_M
        hi = tl.minimum((start_m + 1) * BLOCK_M, N_CTX)
    else:
        lo = N_CTX // BLOCK_N * BLOCK_N
        hi = N_CTX
    acc, l_i, m_i = _attn_fwd_inner(
        acc, l_i, m_i, q, k_ptrs, v_ptrs, stride_kn, stride_vn, qk_scale, offs_m, offs_n, N_CTX,
        0, lo, False, CAUSAL, BLOCK_N,
    )  # fmt: skip
    acc, l_i, m_i = _attn_fwd_inner(
        acc, l_i, m_i, q, k_ptrs, v_ptrs, stride_kn, stride_vn, qk_scale, offs_m, offs_n, N_CTX,
        lo, hi, True, CAUSAL, BLOCK_N,
    )  # fmt: skip
    acc = acc / l_i[:, None]
    o_ptrs = Out + off_z * stride_oz + off_h * stride_oh
    o_ptrs = o_ptrs + offs_m[:, None] * stride_om + offs_d[None, :] * stride_ok
    tl.store(o_ptrs, acc.to(tl.float16), mask=offs_m[:, None] < N_CTX)


def attention(q, k, v, causal, sm_scale, block_m=64, block_n=32, num_warps=4):
    """softmax(q @ k^T * sm_scale) @ v over arrays shaped (batch, heads, seq, head_dim)."""
    batch, heads, n_ctx, head_dim = q.shape
    if causal and block_m % block_n:
        raise ValueError(f"causal attention needs block_m ({block_m}) a multiple of block_n")
    out = np.empty_like(q)
    grid = (tilec.cdiv(n_ctx, block_m), batch * heads)
    strides = [int(s) for t in (q, k, v, out) for s in np.array(t.strides) // t.itemsize]
    attn_fwd[grid](
        q, k, v, out, sm_scale, *strides, heads, n_ctx,
        HEAD_DIM=head_dim, BLOCK_M=block_m, BLOCK_N=block_n, CAUSAL=causal, num_warps=num_warps,
    )  # fmt: skip
    return out


def reference(q, k, v, causal, sm_scale):
    """The same attention in float64 NumPy."""
    scores = np.einsum("bhmd,bhnd->bhmn", q.astype(np.float64), k.astype(np.float64)) * sm_scale
    if causal:
        n = q.shape[2]
        scores = np.where(np.tril(np.ones((n, n), dtype=bool)), scores, -np.inf)
    scores = np.exp(scores - scores.max(axis=-1, keepdims=True))
    probs = scores / scores.sum(axis=-1, keepdims=True)
    return np.einsum("bhmn,bhnd->bhmd", probs, v.astype(np.float64))


def main():
    rng = np.random.default_rng(0)
    worst = 0.0
    # 100 is not a multiple of the blocks: the masked stages run for both kinds.
    for head_dim in (64, 128):
        for causal in (False, True):
            q, k, v = (
                rng.standard_normal((1, 2, 100, head_dim)).astype(np.float16) for _ in range(3)
            )
            sm_scale = 1.0 / np.sqrt(head_dim)
            out = attention(q, k, v, causal, sm_scale)
            expected = reference(q, k, v, causal, sm_scale)
            np.testing.assert_allclose(out, expected, rtol=1e-2, atol=1e-2)
            worst = max(worst, float(np.max(np.abs(out - expected))))
    print(f"attention: max abs error {worst:.3g} (OK)")


if __name__ == "__main__":
    main()
