"""Kernels whose tensor descriptors (`tl.make_tensor_descriptor`) are made from values the
kernel computes (docs/tma.md, step 4: maps built in the kernel, `tilec_nvidia.tma_made`):
compiled by test_tma_computed.py, run against interp by test_tma_computed_gpu.py."""

from __future__ import annotations

import tilec
import tilec.language as tl


@tilec.jit
def copy_offset_base(x_ptr, y_ptr, M, N, ld, CUT: tl.constexpr, SHIFT: tl.constexpr,
                     BM: tl.constexpr, BN: tl.constexpr, PADDING: tl.constexpr):  # fmt: skip
    """Program (i, j) reads x's rows from i * BM on (a descriptor whose base is offset by the
    program id, `M - i * BM - CUT` rows of N columns `ld` apart) at (0 - SHIFT, j * BN) and
    writes the block to y (rows of `BN * num_programs(1)` elements)."""
    i, j = tl.program_id(0), tl.program_id(1)
    desc = tl.make_tensor_descriptor(x_ptr + i * BM * ld, shape=[M - i * BM - CUT, N],
                                     strides=[ld, 1], block_shape=[BM, BN],
                                     padding_option=PADDING)  # fmt: skip
    block = desc.load([-SHIFT, j * BN])
    rows = i * BM + tl.arange(0, BM)
    cols = j * BN + tl.arange(0, BN)
    tl.store(y_ptr + rows[:, None] * (BN * tl.num_programs(1)) + cols[None, :], block)


@tilec.jit
def copy_computed_stride(x_ptr, y_ptr, M, N, half_ld, BM: tl.constexpr, BN: tl.constexpr):
    """y = x's block (i, j) of a descriptor whose row stride the kernel computes (2 * half_ld),
    written through a descriptor made from y's parameters and computed sizes."""
    i, j = tl.program_id(0), tl.program_id(1)
    src = tl.make_tensor_descriptor(x_ptr, shape=[M, N], strides=[half_ld * 2, 1],
                                    block_shape=[BM, BN])  # fmt: skip
    dst = tl.make_tensor_descriptor(y_ptr, shape=[M + 0 * i, N], strides=[N, 1],
                                    block_shape=[BM, BN])  # fmt: skip
    dst.store([i * BM, j * BN], src.load([i * BM, j * BN]))


@tilec.jit
def row_sums_in_loop(x_ptr, y_ptr, M, N, BM: tl.constexpr, BN: tl.constexpr):
    """y[r] = the sum of x's row r (M x N), a descriptor made each iteration over a column
    slice (its base and size computed from the loop variable)."""
    i = tl.program_id(0)
    total = tl.zeros([BM], dtype=tl.float32)
    for k in range(0, tl.cdiv(N, BN)):
        desc = tl.make_tensor_descriptor(x_ptr + k * BN, shape=[M, N - k * BN], strides=[N, 1],
                                         block_shape=[BM, BN])  # fmt: skip
        total += tl.sum(desc.load([i * BM, 0]).to(tl.float32), axis=1)
    rows = i * BM + tl.arange(0, BM)
    tl.store(y_ptr + rows, total, mask=rows < M)


@tilec.jit
def store_offset_base(x_ptr, y_ptr, M, N, BM: tl.constexpr, BN: tl.constexpr):
    """y (M x N) = x (M x N, pointer loads) through a store descriptor per program whose base
    is y's row i * BM and whose size is the rows left."""
    i, j = tl.program_id(0), tl.program_id(1)
    rows = i * BM + tl.arange(0, BM)
    cols = j * BN + tl.arange(0, BN)
    mask = (rows[:, None] < M) & (cols[None, :] < N)
    block = tl.load(x_ptr + rows[:, None] * N + cols[None, :], mask=mask, other=0)
    out = tl.make_tensor_descriptor(y_ptr + i * BM * N, shape=[M - i * BM, N], strides=[N, 1],
                                    block_shape=[BM, BN])  # fmt: skip
    out.store([0, j * BN], block)


@tilec.jit
def row_sums_invariant(x_ptr, y_ptr, M, N, BM: tl.constexpr, BN: tl.constexpr):
    """`row_sums_in_loop` through one descriptor made before the loop (its base program i's
    first row, its size the rows left): the loop's loads share its map."""
    i = tl.program_id(0)
    desc = tl.make_tensor_descriptor(x_ptr + i * BM * N, shape=[M - i * BM, N], strides=[N, 1],
                                     block_shape=[BM, BN])  # fmt: skip
    total = tl.zeros([BM], dtype=tl.float32)
    for k in range(0, tl.cdiv(N, BN)):
        total += tl.sum(desc.load([0, k * BN]).to(tl.float32), axis=1)
    rows = i * BM + tl.arange(0, BM)
    tl.store(y_ptr + rows, total, mask=rows < M)


@tilec.jit
def scale_in_place(x_ptr, M, N, factor, BM: tl.constexpr, BN: tl.constexpr):
    """x's block (i, j) *= factor, read and written through one descriptor whose base is
    program i's first row: the load and the store share its map."""
    i, j = tl.program_id(0), tl.program_id(1)
    desc = tl.make_tensor_descriptor(x_ptr + i * BM * N, shape=[M - i * BM, N], strides=[N, 1],
                                     block_shape=[BM, BN])  # fmt: skip
    block = desc.load([0, j * BN])
    desc.store([0, j * BN], (block.to(tl.float32) * factor).to(block.dtype))


@tilec.jit
def copy_tail_1d(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    """y[i] = x[i] for i < n, block by block through a 1-D descriptor whose base is the
    program's block and whose size is what is left of x."""
    i = tl.program_id(0)
    desc = tl.make_tensor_descriptor(x_ptr + i * BLOCK, shape=[n - i * BLOCK], strides=[1],
                                     block_shape=[BLOCK])  # fmt: skip
    offs = i * BLOCK + tl.arange(0, BLOCK)
    tl.store(y_ptr + offs, desc.load([0]), mask=offs < n)
