"""The sweep's matmul and memory-bound kernels (benchmarks/sweep.py), one source for both compilers.

The sweep reads this file and executes it twice, with `jit` and `tl` bound to tilec's or to
Triton's, so that both compile the same functions. Nothing here imports either (the import below
is for readers and linters only). Every kernel reads and writes contiguous rows (the last stride
is 1) and computes in float32 whatever its storage type.
"""

from typing import TYPE_CHECKING

if TYPE_CHECKING:  # bound by the sweep: tilec's or Triton's
    import tilec.language as tl
    from tilec import jit


@jit
def sweep_matmul(
    a_ptr, b_ptr, c_ptr, bias_ptr, M, N, K,
    stride_az, stride_am, stride_ak, stride_bz, stride_bk, stride_bn,
    stride_cz, stride_cm, stride_cn,
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
    GROUP_M: tl.constexpr, BIAS_RELU: tl.constexpr,
):  # fmt: skip
    """C[z] = A[z] @ B[z] for z = program_id(1), optionally relu(C + bias[None, :]).

    Axis 0 walks the tiles of C in groups of GROUP_M tile rows, column by column inside a group,
    so that the programs running together share their A rows and B columns in L2. Rows and
    columns past the edge wrap around when loaded (their sums are computed and never stored);
    the K tail is masked with zeros."""
    pid = tl.program_id(0)
    z = tl.program_id(1)
    tiles_m = tl.cdiv(M, BLOCK_M)
    tiles_n = tl.cdiv(N, BLOCK_N)
    group_tiles = GROUP_M * tiles_n
    first_m = (pid // group_tiles) * GROUP_M
    group_rows = min(tiles_m - first_m, GROUP_M)
    tile_m = first_m + (pid % group_tiles) % group_rows
    tile_n = (pid % group_tiles) // group_rows
    rows = tile_m * BLOCK_M + tl.arange(0, BLOCK_M)
    cols = tile_n * BLOCK_N + tl.arange(0, BLOCK_N)
    ks = tl.arange(0, BLOCK_K)
    a_block = a_ptr + z * stride_az + (rows % M)[:, None] * stride_am + ks[None, :] * stride_ak
    b_block = b_ptr + z * stride_bz + ks[:, None] * stride_bk + (cols % N)[None, :] * stride_bn
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for step in range(0, tl.cdiv(K, BLOCK_K)):
        k_left = K - step * BLOCK_K
        a = tl.load(a_block, mask=ks[None, :] < k_left, other=0.0)
        b = tl.load(b_block, mask=ks[:, None] < k_left, other=0.0)
        acc = tl.dot(a, b, acc)
        a_block += BLOCK_K * stride_ak
        b_block += BLOCK_K * stride_bk
    if BIAS_RELU:
        bias = tl.load(bias_ptr + cols, mask=cols < N, other=0.0).to(tl.float32)
        acc = tl.maximum(acc + bias[None, :], 0.0)
    c_block = c_ptr + z * stride_cz + rows[:, None] * stride_cm + cols[None, :] * stride_cn
    inside = (rows[:, None] < M) & (cols[None, :] < N)
    tl.store(c_block, acc.to(c_ptr.dtype.element_ty), mask=inside)


@jit
def sweep_softmax(out_ptr, in_ptr, in_stride, out_stride, n_cols, BLOCK: tl.constexpr):
    """softmax over one row per program (the whole row in one block)."""
    row = tl.program_id(0).to(tl.int64)
    cols = tl.arange(0, BLOCK)
    inside = cols < n_cols
    x = tl.load(in_ptr + row * in_stride + cols, mask=inside, other=-float("inf"))
    x = x.to(tl.float32)
    e = tl.exp(x - tl.max(x, axis=0))
    y = e / tl.sum(e, axis=0)
    tl.store(out_ptr + row * out_stride + cols, y.to(out_ptr.dtype.element_ty), mask=inside)


@jit
def sweep_layer_norm_fwd(
    x_ptr, y_ptr, w_ptr, b_ptr, mean_ptr, rstd_ptr, stride, N, eps, BLOCK: tl.constexpr
):
    """y = (x - mean) * rstd * w + b over one row per program; mean and rstd kept for backward."""
    row = tl.program_id(0).to(tl.int64)
    cols = tl.arange(0, BLOCK)
    inside = cols < N
    x = tl.load(x_ptr + row * stride + cols, mask=inside, other=0.0).to(tl.float32)
    mean = tl.sum(x, axis=0) / N
    centred = tl.where(inside, x - mean, 0.0)
    rstd = 1.0 / tl.sqrt(tl.sum(centred * centred, axis=0) / N + eps)
    w = tl.load(w_ptr + cols, mask=inside, other=0.0).to(tl.float32)
    b = tl.load(b_ptr + cols, mask=inside, other=0.0).to(tl.float32)
    y = centred * rstd * w + b
    tl.store(y_ptr + row * stride + cols, y.to(y_ptr.dtype.element_ty), mask=inside)
    tl.store(mean_ptr + row, mean)
    tl.store(rstd_ptr + row, rstd)


@jit
def sweep_layer_norm_bwd(
    x_ptr, dy_ptr, dx_ptr, w_ptr, mean_ptr, rstd_ptr, dw_part_ptr, db_part_ptr, stride, M, N,
    BLOCK: tl.constexpr,
):  # fmt: skip
    """dx of the layer norm for rows pid, pid + programs, ...; this program's sums of dy * x_hat
    and dy (the parts of dw and db) go to row pid of the part buffers."""
    pid = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    inside = cols < N
    w = tl.load(w_ptr + cols, mask=inside, other=0.0).to(tl.float32)
    dw = tl.zeros([BLOCK], dtype=tl.float32)
    db = tl.zeros([BLOCK], dtype=tl.float32)
    for row in range(pid, M, tl.num_programs(0)):
        start = row * stride
        x = tl.load(x_ptr + start + cols, mask=inside, other=0.0).to(tl.float32)
        dy = tl.load(dy_ptr + start + cols, mask=inside, other=0.0).to(tl.float32)
        mean = tl.load(mean_ptr + row)
        rstd = tl.load(rstd_ptr + row)
        x_hat = tl.where(inside, (x - mean) * rstd, 0.0)
        w_dy = w * dy
        c1 = tl.sum(x_hat * w_dy, axis=0) / N
        c2 = tl.sum(w_dy, axis=0) / N
        dx = (w_dy - (x_hat * c1 + c2)) * rstd
        tl.store(dx_ptr + start + cols, dx.to(dx_ptr.dtype.element_ty), mask=inside)
        dw += dy * x_hat
        db += dy
    tl.store(dw_part_ptr + pid * N + cols, dw, mask=inside)
    tl.store(db_part_ptr + pid * N + cols, db, mask=inside)


@jit
def sweep_column_sum(
    part_ptr, out_ptr, rows, N, BLOCK_ROWS: tl.constexpr, BLOCK_COLS: tl.constexpr
):
    """out[j] = sum over i of part[i, j] (rows x N, float32) for BLOCK_COLS columns a program."""
    cols = tl.program_id(0) * BLOCK_COLS + tl.arange(0, BLOCK_COLS)
    acc = tl.zeros([BLOCK_ROWS, BLOCK_COLS], dtype=tl.float32)
    for first in range(0, rows, BLOCK_ROWS):
        lines = first + tl.arange(0, BLOCK_ROWS)
        inside = (lines[:, None] < rows) & (cols[None, :] < N)
        acc += tl.load(part_ptr + lines[:, None] * N + cols[None, :], mask=inside, other=0.0)
    total = tl.sum(acc, axis=0)
    tl.store(out_ptr + cols, total.to(out_ptr.dtype.element_ty), mask=cols < N)


@jit
def sweep_rms_norm(x_ptr, y_ptr, w_ptr, stride, N, eps, BLOCK: tl.constexpr):
    """y = x / sqrt(mean(x^2) + eps) * w over one row per program."""
    row = tl.program_id(0).to(tl.int64)
    cols = tl.arange(0, BLOCK)
    inside = cols < N
    x = tl.load(x_ptr + row * stride + cols, mask=inside, other=0.0).to(tl.float32)
    rstd = 1.0 / tl.sqrt(tl.sum(x * x, axis=0) / N + eps)
    w = tl.load(w_ptr + cols, mask=inside, other=0.0).to(tl.float32)
    tl.store(y_ptr + row * stride + cols, (x * rstd * w).to(y_ptr.dtype.element_ty), mask=inside)


@jit
def sweep_cross_entropy(logits_ptr, target_ptr, loss_ptr, stride, V, BLOCK: tl.constexpr):
    """loss[row] = logsumexp(logits[row]) - logits[row, target[row]], the vocabulary read once in
    BLOCK-wide chunks with a running maximum and sum per lane."""
    row = tl.program_id(0).to(tl.int64)
    start = logits_ptr + row * stride
    cols = tl.arange(0, BLOCK)
    # -1e30, not -inf: a lane that has seen no logit yet keeps a finite maximum
    lane_max = tl.full([BLOCK], -1.0e30, dtype=tl.float32)
    lane_sum = tl.zeros([BLOCK], dtype=tl.float32)
    for first in range(0, V, BLOCK):
        x = tl.load(start + first + cols, mask=first + cols < V, other=-float("inf"))
        x = x.to(tl.float32)
        new_max = tl.maximum(lane_max, x)
        lane_sum = lane_sum * tl.exp(lane_max - new_max) + tl.exp(x - new_max)
        lane_max = new_max
    top = tl.max(lane_max, axis=0)
    total = tl.sum(lane_sum * tl.exp(lane_max - top), axis=0)
    target = tl.load(target_ptr + row)
    picked = tl.load(start + target).to(tl.float32)
    tl.store(loss_ptr + row, tl.log(total) + top - picked)


@jit
def sweep_rotary(x_ptr, cos_ptr, sin_ptr, out_ptr, S, H, HALF: tl.constexpr, BLOCK_H: tl.constexpr):
    """Rotary embedding of x (tokens, H, 2 * HALF) with the halves rotated (GPT-NeoX style):
    out = (x1 cos - x2 sin, x2 cos + x1 sin), cos and sin (S, HALF) of the token's position
    (token % S); BLOCK_H heads of one token a program."""
    token = tl.program_id(0)
    heads = tl.program_id(1) * BLOCK_H + tl.arange(0, BLOCK_H)
    dims = tl.arange(0, HALF)
    place = token.to(tl.int64) * H * (2 * HALF) + heads[:, None] * (2 * HALF) + dims[None, :]
    inside = heads[:, None] < H
    x1 = tl.load(x_ptr + place, mask=inside, other=0.0).to(tl.float32)
    x2 = tl.load(x_ptr + place + HALF, mask=inside, other=0.0).to(tl.float32)
    position = (token % S) * HALF + dims
    cos = tl.load(cos_ptr + position)[None, :]
    sin = tl.load(sin_ptr + position)[None, :]
    kind = out_ptr.dtype.element_ty
    tl.store(out_ptr + place, (x1 * cos - x2 * sin).to(kind), mask=inside)
    tl.store(out_ptr + place + HALF, (x2 * cos + x1 * sin).to(kind), mask=inside)


@jit
def sweep_swiglu(gate_ptr, up_ptr, out_ptr, n, BLOCK: tl.constexpr):
    """out = silu(gate) * up, elementwise."""
    offsets = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    inside = offsets < n
    gate = tl.load(gate_ptr + offsets, mask=inside, other=0.0).to(tl.float32)
    up = tl.load(up_ptr + offsets, mask=inside, other=0.0).to(tl.float32)
    out = gate * tl.sigmoid(gate) * up
    tl.store(out_ptr + offsets, out.to(out_ptr.dtype.element_ty), mask=inside)
