"""Kernels that make their tensor descriptors (`tl.make_tensor_descriptor`) and read them
through TMA on sm_90 where the specialization proves TMA's alignments (docs/tma.md, step 4):
compiled by test_tma_made.py, run against interp and torch by test_tma_made_gpu.py."""

from __future__ import annotations

from tma_kernels import tile_dot

import tilec
import tilec.language as tl


@tilec.jit
def copy_made(x_ptr, y_ptr, M, N, ld, out_ld, SHIFT: tl.constexpr, CSHIFT: tl.constexpr,
              BM: tl.constexpr, BN: tl.constexpr, PADDING: tl.constexpr):  # fmt: skip
    """y's block (i, j) = the block of x (M x N, rows `ld` apart) at (i * BM - SHIFT,
    j * BN + CSHIFT), elements outside x the padding."""
    desc = tl.make_tensor_descriptor(x_ptr, shape=[M, N], strides=[ld, 1],
                                     block_shape=[BM, BN], padding_option=PADDING)  # fmt: skip
    i, j = tl.program_id(0), tl.program_id(1)
    block = desc.load([i * BM - SHIFT, j * BN + CSHIFT])
    rows = i * BM + tl.arange(0, BM)
    cols = j * BN + tl.arange(0, BN)
    tl.store(y_ptr + rows[:, None] * out_ld + cols[None, :], block)


@tilec.jit
def copy_made_constant(x_ptr, y_ptr, M, BM: tl.constexpr, BN: tl.constexpr,
                       LD: tl.constexpr):  # fmt: skip
    """`copy_made` of an x of M rows of `BN` columns `LD` apart (compile-time constants)."""
    desc = tl.make_tensor_descriptor(x_ptr, shape=[M, BN], strides=[LD, 1],
                                     block_shape=[BM, BN])  # fmt: skip
    i = tl.program_id(0)
    block = desc.load([i * BM, 0])
    rows = i * BM + tl.arange(0, BM)
    tl.store(y_ptr + rows[:, None] * BN + tl.arange(0, BN)[None, :], block)


@tilec.jit
def store_made(x_ptr, y_ptr, M, N, BM: tl.constexpr, BN: tl.constexpr):
    """y (M x N) = x (M x N) block by block, read and written through made descriptors."""
    x_desc = tl.make_tensor_descriptor(x_ptr, shape=[M, N], strides=[N, 1], block_shape=[BM, BN])
    y_desc = tl.make_tensor_descriptor(y_ptr, shape=[M, N], strides=[N, 1], block_shape=[BM, BN])
    i, j = tl.program_id(0), tl.program_id(1)
    y_desc.store([i * BM, j * BN], x_desc.load([i * BM, j * BN]))


@tilec.jit
def matmul_made(a_ptr, b_ptr, c_ptr, M, N, K, BM: tl.constexpr, BN: tl.constexpr,
                BK: tl.constexpr, PROGRAMS: tl.constexpr, B_T: tl.constexpr):  # fmt: skip
    """c (M x N, c's dtype) = a (M x K) @ b (K x N, or N x K with `B_T`): Triton's
    device-descriptor persistent matmul (tutorial 09's `matmul_kernel_descriptor_persistent`),
    `PROGRAMS` programs looping over the tiles, every operand a made descriptor."""
    a_desc = tl.make_tensor_descriptor(a_ptr, shape=[M, K], strides=[K, 1], block_shape=[BM, BK])
    if B_T:
        b_desc = tl.make_tensor_descriptor(b_ptr, shape=[N, K], strides=[K, 1],
                                           block_shape=[BN, BK])  # fmt: skip
    else:
        b_desc = tl.make_tensor_descriptor(b_ptr, shape=[K, N], strides=[N, 1],
                                           block_shape=[BK, BN])  # fmt: skip
    c_desc = tl.make_tensor_descriptor(c_ptr, shape=[M, N], strides=[N, 1], block_shape=[BM, BN])
    tiles_n = tl.cdiv(N, BN)
    for tile in range(tl.program_id(0), tl.cdiv(M, BM) * tiles_n, PROGRAMS):
        i = tile // tiles_n
        j = tile % tiles_n
        acc = tile_dot(a_desc, b_desc, i, j, K, BM, BN, BK, B_T)
        c_desc.store([i * BM, j * BN], acc.to(c_desc.dtype))


MATMULS = [  # matmul_made's cases: element, (M, N, K), (BM, BN, BK), stages, warps, b^T
    ("fp16", (256, 192, 1024), (64, 64, 32), 3, 4, False),
    ("bf16", (200, 80, 112), (64, 64, 32), 3, 4, False),  # ragged tiles, K not a multiple of BK
    ("fp16", (384, 256, 528), (128, 128, 64), 4, 8, True),  # the benchmark's config, K ragged
    ("fp16", (256, 256, 256), (128, 256, 64), 3, 8, True),  # the benchmark's widest config
    ("fp16", (2048, 2048, 512), (128, 128, 64), 3, 4, True),  # 2 blocks an SM, waves
    ("bf16", (160, 192, 528), (32, 64, 64), 3, 8, False),  # mma.sync: ldmatrix reads the ring
    ("fp16", (128, 128, 64), (64, 64, 64), 1, 4, False),  # no pipeline: one TMA load each
]
"""N and K (the row strides) multiples of 16, so that the launch's specialization proves the
alignments; the tiles ragged where the sizes are not multiples of the blocks."""


@tilec.jit
def dot_shifted(a_ptr, b_ptr, c_ptr, M, N, K, SHIFT: tl.constexpr, BM: tl.constexpr,
                BN: tl.constexpr, BK: tl.constexpr):  # fmt: skip
    """c (fp32, M x N) = a[:, SHIFT:] @ b[: K - SHIFT]: a's blocks start `SHIFT` columns past
    each multiple of BK, off a 16-byte boundary where SHIFT elements are not 16 bytes."""
    a_desc = tl.make_tensor_descriptor(a_ptr, shape=[M, K], strides=[K, 1], block_shape=[BM, BK])
    b_desc = tl.make_tensor_descriptor(b_ptr, shape=[K, N], strides=[N, 1], block_shape=[BK, BN])
    i, j = tl.program_id(0), tl.program_id(1)
    acc = tl.zeros((BM, BN), tl.float32)
    for k in range(0, tl.cdiv(K - SHIFT, BK)):
        acc = tl.dot(a_desc.load([i * BM, k * BK + SHIFT]), b_desc.load([k * BK, j * BN]), acc)
    rows = i * BM + tl.arange(0, BM)
    cols = j * BN + tl.arange(0, BN)
    tl.store(c_ptr + rows[:, None] * N + cols[None, :], acc,
             mask=(rows[:, None] < M) & (cols[None, :] < N))  # fmt: skip


@tilec.jit
def copy_rows_of_heads(x_ptr, y_ptr, Z, H, N, D: tl.constexpr, BM: tl.constexpr):
    """y = x, a (Z, H, N, D) tensor read as Z * H * N rows of D through a made descriptor whose
    row count is that product (the fused-attention tutorial's `y_dim`), block by block."""
    rows = Z * H * N
    desc = tl.make_tensor_descriptor(x_ptr, shape=[rows, D], strides=[D, 1], block_shape=[BM, D])
    i = tl.program_id(0)
    block = desc.load([i * BM, 0])
    offs = i * BM + tl.arange(0, BM)
    tl.store(y_ptr + offs[:, None] * D + tl.arange(0, D)[None, :], block,
             mask=offs[:, None] < rows)  # fmt: skip
