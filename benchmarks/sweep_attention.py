"""The sweep's attention kernels (benchmarks/sweep.py): forward and backward, the algorithm of
Triton 3.6's fused-attention tutorial (06) with pointer arithmetic instead of tensor descriptors.

Executed by the sweep with `jit` and `tl` bound to tilec's or to Triton's (see sweep_kernels.py).
Tensors are (batch, heads, N_CTX, HEAD_DIM) with the head dimension contiguous; N_CTX is a
multiple of every block size. The forward keeps M = log2 of each row's softmax sum (scores in
base 2, the scale sm_scale * log2(e) folded in) for the backward, which gets K pre-scaled by
that factor (as the tutorial's host code does) and rebuilds the probabilities from M.
"""

from typing import TYPE_CHECKING

if TYPE_CHECKING:  # bound by the sweep: tilec's or Triton's
    import tilec.language as tl
    from tilec import jit


@jit
def sweep_attn_fwd_keys(
    acc, l_i, m_i, q, k_head, v_head, stride_n, qk_scale, offs_m, offs_n, offs_d, lo, hi,
    DIAGONAL: tl.constexpr, BLOCK_N: tl.constexpr,
):  # fmt: skip
    """Keys [lo, hi) folded into the running softmax (acc, l_i, m_i) of the query rows offs_m;
    DIAGONAL blocks drop the keys that come after their query."""
    for start_n in range(lo, hi, BLOCK_N):
        start_n = tl.multiple_of(start_n, BLOCK_N)
        keys = start_n + offs_n
        k_t = tl.load(k_head + keys[None, :] * stride_n + offs_d[:, None])
        scores = tl.dot(q, k_t)
        if DIAGONAL:
            later = offs_m[:, None] < keys[None, :]
            scores = scores * qk_scale + tl.where(later, -1.0e6, 0.0)
            m_new = tl.maximum(m_i, tl.max(scores, 1))
            scores = scores - m_new[:, None]
        else:
            m_new = tl.maximum(m_i, tl.max(scores, 1) * qk_scale)
            scores = scores * qk_scale - m_new[:, None]
        p = tl.math.exp2(scores)
        alpha = tl.math.exp2(m_i - m_new)
        acc = acc * alpha[:, None]
        v = tl.load(v_head + keys[:, None] * stride_n + offs_d[None, :])
        acc = tl.dot(p.to(v.dtype), v, acc)
        l_i = l_i * alpha + tl.sum(p, 1)
        m_i = m_new
    return acc, l_i, m_i


@jit
def sweep_attn_fwd(
    Q, K, V, Out, M, sm_scale, stride_z, stride_h, stride_n, H, N_CTX,
    HEAD_DIM: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, CAUSAL: tl.constexpr,
):  # fmt: skip
    """O = softmax(Q K^T sm_scale) V for BLOCK_M query rows of one (batch, head) a program; when
    CAUSAL, the keys before the block unmasked, then the block's diagonal masked."""
    start_m = tl.program_id(0)
    hz = tl.program_id(1)
    head = ((hz // H) * stride_z + (hz % H) * stride_h).to(tl.int64)
    offs_m = start_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = tl.arange(0, BLOCK_N)
    offs_d = tl.arange(0, HEAD_DIM)
    q = tl.load(Q + head + offs_m[:, None] * stride_n + offs_d[None, :])
    m_i = tl.zeros([BLOCK_M], dtype=tl.float32) - float("inf")
    l_i = tl.zeros([BLOCK_M], dtype=tl.float32)
    acc = tl.zeros([BLOCK_M, HEAD_DIM], dtype=tl.float32)
    qk_scale = sm_scale * 1.44269504  # log2(e)
    if CAUSAL:
        acc, l_i, m_i = sweep_attn_fwd_keys(
            acc, l_i, m_i, q, K + head, V + head, stride_n, qk_scale, offs_m, offs_n, offs_d,
            0, start_m * BLOCK_M, False, BLOCK_N,
        )  # fmt: skip
        acc, l_i, m_i = sweep_attn_fwd_keys(
            acc, l_i, m_i, q, K + head, V + head, stride_n, qk_scale, offs_m, offs_n, offs_d,
            start_m * BLOCK_M, (start_m + 1) * BLOCK_M, True, BLOCK_N,
        )  # fmt: skip
    else:
        acc, l_i, m_i = sweep_attn_fwd_keys(
            acc, l_i, m_i, q, K + head, V + head, stride_n, qk_scale, offs_m, offs_n, offs_d,
            0, N_CTX, False, BLOCK_N,
        )  # fmt: skip
    tl.store(M + hz.to(tl.int64) * N_CTX + offs_m, m_i + tl.math.log2(l_i))
    out = acc / l_i[:, None]
    tl.store(
        Out + head + offs_m[:, None] * stride_n + offs_d[None, :], out.to(Out.dtype.element_ty)
    )


@jit
def sweep_attn_bwd_delta(Out, DO, Delta, N_CTX, BLOCK_M: tl.constexpr, HEAD_DIM: tl.constexpr):
    """Delta = rowsum(Out * dO), the backward's correction term, for BLOCK_M rows a program."""
    offs_m = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    hz = tl.program_id(1).to(tl.int64)
    offs_d = tl.arange(0, HEAD_DIM)
    place = hz * N_CTX * HEAD_DIM + offs_m[:, None] * HEAD_DIM + offs_d[None, :]
    o = tl.load(Out + place).to(tl.float32)
    do = tl.load(DO + place).to(tl.float32)
    tl.store(Delta + hz * N_CTX + offs_m, tl.sum(o * do, axis=1))


@jit
def sweep_attn_bwd_kv(
    dk, dv, Q, k, v, DO, M, D, stride_n, offs_n, offs_d, start_m, steps,
    BLOCK_M1: tl.constexpr, MASK: tl.constexpr,
):  # fmt: skip
    """dK and dV of the keys offs_n from `steps` blocks of BLOCK_M1 queries from start_m (the
    transposed products, so that the key rows stay the first dimension)."""
    offs_m = start_m + tl.arange(0, BLOCK_M1)
    q_t_ptrs = Q + offs_m[None, :] * stride_n + offs_d[:, None]
    do_ptrs = DO + offs_m[:, None] * stride_n + offs_d[None, :]
    for _ in range(steps):
        q_t = tl.load(q_t_ptrs)
        m = tl.load(M + offs_m)
        p_t = tl.math.exp2(tl.dot(k, q_t) - m[None, :])
        if MASK:
            p_t = tl.where(offs_m[None, :] >= offs_n[:, None], p_t, 0.0)
        do = tl.load(do_ptrs)
        dv += tl.dot(p_t.to(do.dtype), do)
        dp_t = tl.dot(v, tl.trans(do))
        ds_t = p_t * (dp_t - tl.load(D + offs_m)[None, :])
        dk += tl.dot(ds_t.to(q_t.dtype), tl.trans(q_t))
        offs_m += BLOCK_M1
        q_t_ptrs += BLOCK_M1 * stride_n
        do_ptrs += BLOCK_M1 * stride_n
    return dk, dv


@jit
def sweep_attn_bwd_q(
    dq, q, K, V, do, m, delta, stride_n, offs_m, offs_d, start_n, steps,
    BLOCK_N2: tl.constexpr, MASK: tl.constexpr,
):  # fmt: skip
    """dQ of the queries offs_m from `steps` blocks of BLOCK_N2 keys from start_n."""
    offs_n = start_n + tl.arange(0, BLOCK_N2)
    k_t_ptrs = K + offs_n[None, :] * stride_n + offs_d[:, None]
    v_t_ptrs = V + offs_n[None, :] * stride_n + offs_d[:, None]
    for _ in range(steps):
        k_t = tl.load(k_t_ptrs)
        v_t = tl.load(v_t_ptrs)
        p = tl.math.exp2(tl.dot(q, k_t) - m)
        if MASK:
            p = tl.where(offs_m[:, None] >= offs_n[None, :], p, 0.0)
        dp = tl.dot(do, v_t)
        ds = p * (dp - delta[:, None])
        dq += tl.dot(ds.to(k_t.dtype), tl.trans(k_t))
        offs_n += BLOCK_N2
        k_t_ptrs += BLOCK_N2 * stride_n
        v_t_ptrs += BLOCK_N2 * stride_n
    return dq


@jit
def sweep_attn_bwd(
    Q, K, V, sm_scale, DO, DQ, DK, DV, M, D, stride_z, stride_h, stride_n, H, N_CTX,
    BLOCK_M1: tl.constexpr, BLOCK_N1: tl.constexpr, BLOCK_M2: tl.constexpr,
    BLOCK_N2: tl.constexpr, SLICE: tl.constexpr, HEAD_DIM: tl.constexpr, CAUSAL: tl.constexpr,
):  # fmt: skip
    """Program pid of (batch, head) program_id(1): dK, dV of keys [pid BLOCK_N1, +BLOCK_N1) and
    dQ of queries [pid BLOCK_M2, +BLOCK_M2). When CAUSAL the diagonal blocks come first, in
    steps SLICE times smaller, masked; then the rest unmasked."""
    pid = tl.program_id(0)
    hz = tl.program_id(1)
    head = ((hz // H) * stride_z + (hz % H) * stride_h).to(tl.int64)  # into Q, K, V and their grads
    rows = hz.to(tl.int64) * N_CTX  # into M and D
    offs_d = tl.arange(0, HEAD_DIM)

    start_n = pid * BLOCK_N1
    offs_n = start_n + tl.arange(0, BLOCK_N1)
    key_place = head + offs_n[:, None] * stride_n + offs_d[None, :]
    k = tl.load(K + key_place)
    v = tl.load(V + key_place)
    dk = tl.zeros([BLOCK_N1, HEAD_DIM], dtype=tl.float32)
    dv = tl.zeros([BLOCK_N1, HEAD_DIM], dtype=tl.float32)
    if CAUSAL:
        MASK_M1: tl.constexpr = BLOCK_M1 // SLICE
        dk, dv = sweep_attn_bwd_kv(
            dk, dv, Q + head, k, v, DO + head, M + rows, D + rows, stride_n, offs_n, offs_d,
            start_n, BLOCK_N1 // MASK_M1, MASK_M1, True,
        )  # fmt: skip
        start_m = start_n + BLOCK_N1
    else:
        start_m = 0
    dk, dv = sweep_attn_bwd_kv(
        dk, dv, Q + head, k, v, DO + head, M + rows, D + rows, stride_n, offs_n, offs_d,
        start_m, (N_CTX - start_m) // BLOCK_M1, BLOCK_M1, False,
    )  # fmt: skip
    tl.store(DV + key_place, dv.to(DV.dtype.element_ty))
    tl.store(DK + key_place, (dk * sm_scale).to(DK.dtype.element_ty))

    first_m = pid * BLOCK_M2
    offs_m = first_m + tl.arange(0, BLOCK_M2)
    query_place = head + offs_m[:, None] * stride_n + offs_d[None, :]
    q = tl.load(Q + query_place)
    do = tl.load(DO + query_place)
    m = tl.load(M + rows + offs_m)[:, None]
    delta = tl.load(D + rows + offs_m)
    dq = tl.zeros([BLOCK_M2, HEAD_DIM], dtype=tl.float32)
    if CAUSAL:
        MASK_N2: tl.constexpr = BLOCK_N2 // SLICE
        dq = sweep_attn_bwd_q(
            dq, q, K + head, V + head, do, m, delta, stride_n, offs_m, offs_d, first_m,
            BLOCK_M2 // MASK_N2, MASK_N2, True,
        )  # fmt: skip
        last = first_m  # the keys before the diagonal block, unmasked
    else:
        last = N_CTX
    dq = sweep_attn_bwd_q(
        dq, q, K + head, V + head, do, m, delta, stride_n, offs_m, offs_d, 0, last // BLOCK_N2,
        BLOCK_N2, False,
    )  # fmt: skip
    tl.store(DQ + query_place, (dq * 0.6931471824645996).to(DQ.dtype.element_ty))  # ln(2)
