"""Kernels the frontend tests compile; their line numbers are asserted, so edit with care."""

import tilec
import tilec.language as tl


@tilec.jit
def add_kernel(x_ptr, y_ptr, output_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    pid = tl.program_id(axis=0)
    block_start = pid * BLOCK_SIZE
    offsets = block_start + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    x = tl.load(x_ptr + offsets, mask=mask)
    y = tl.load(y_ptr + offsets, mask=mask)
    output = x + y
    tl.store(output_ptr + offsets, output, mask=mask)


@tilec.jit
def softmax_kernel(out_ptr, in_ptr, in_row_stride, out_row_stride, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    x = tl.load(in_ptr + row * in_row_stride + cols, mask=mask, other=-float("inf"))
    x = x - tl.max(x, axis=0)
    num = tl.exp(x)
    den = tl.sum(num, axis=0)
    tl.store(out_ptr + row * out_row_stride + cols, num / den, mask=mask)


@tilec.jit
def matmul_kernel(
    a_ptr,
    b_ptr,
    c_ptr,
    M,
    N,
    K,
    BLOCK_M: tl.constexpr,
    BLOCK_N: tl.constexpr,
    BLOCK_K: tl.constexpr,
):
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    rm = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    rn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    rk = tl.arange(0, BLOCK_K)
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k in range(0, K, BLOCK_K):
        a = tl.load(a_ptr + rm[:, None] * K + (k + rk)[None, :])
        b = tl.load(b_ptr + (k + rk)[:, None] * N + rn[None, :])
        acc = tl.dot(a, b, acc)
    c = acc.to(tl.float16)
    mask = (rm[:, None] < M) & (rn[None, :] < N)
    tl.store(c_ptr + rm[:, None] * N + rn[None, :], c, mask=mask)


@tilec.jit
def scale(x, factor):
    return x * factor


@tilec.jit
def branchy_kernel(x_ptr, out_ptr, n, flag, BLOCK: tl.constexpr, USE_SCALE: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    total = tl.zeros((BLOCK,), dtype=tl.float32)
    for i in range(n):
        total += tl.load(x_ptr + i * BLOCK + offs)
    if flag > 0:
        total = total * 2.0
    else:
        total = -total
    if USE_SCALE:
        total = scale(total, 0.5)
    for j in tl.static_range(2):
        total = total + j
    tl.store(out_ptr + offs, total)


@tilec.jit
def while_kernel(x_ptr, n):
    i = 0
    total = 0.0
    while i < n:
        total += tl.load(x_ptr + i)
        i += 1
    tl.store(x_ptr, total)


@tilec.jit
def builtins_kernel(x_ptr, u_ptr, i_ptr, n, BLOCK: tl.constexpr):
    tl.static_assert(BLOCK % 16 == 0, "BLOCK must be a multiple of 16")
    offs = tl.multiple_of(tl.arange(0, BLOCK), 16)
    x = tl.load(x_ptr + offs)
    y = tl.where(x > 0, tl.exp(x), tl.sigmoid(x))
    y = tl.maximum(tl.minimum(y, 1.0), tl.sqrt(tl.abs(x))) + tl.fma(x, x, 2.0)
    y = tl.log(y) + tl.log2(y) + tl.exp2(y) + tl.rsqrt(y) + tl.sin(y) + tl.cos(y) + tl.erf(y)
    u = tl.load(u_ptr + offs)
    u = (u >> 1) // 3 % 5
    k = tl.load(i_ptr + offs)
    k = ~(k << 2) ^ (k & 7) | -k
    half = x.to(tl.float16) / 2
    grid = tl.reshape(tl.broadcast_to(x[None, :], (2, BLOCK)), (BLOCK, 2))
    col = tl.sum(tl.trans(grid), axis=0) + tl.min(tl.expand_dims(x, 0), axis=0)
    chunks = tl.cdiv(n, BLOCK) + tl.num_programs(0) + max(BLOCK, 4)
    tl.atomic_add(x_ptr + offs, y + half + k / 2 + u + col.to(tl.float32) + chunks)
    tl.device_print("x", x)
    tl.debug_barrier()
