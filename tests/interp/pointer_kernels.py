"""Kernels whose pointer tensors take the paths of `tilec_interp.pointers`: kept as base plus
offsets, advanced in loops, passed to helpers, selected between, or materialized."""

import tilec
import tilec.language as tl


@tilec.jit
def advance_in_loop(x_ptr, out_ptr, steps, BLOCK: tl.constexpr):
    """out[p * BLOCK + i] = sum over s < steps of x[p * BLOCK + i + s * 4 - 8] (x has margins)."""
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    ptrs = (x_ptr + 8) + (offs - 8)  # a negative i32 offset on an advanced base
    total = tl.zeros((BLOCK,), dtype=tl.float32)
    for _ in range(steps):
        total += tl.load(ptrs)
        ptrs += 4
    tl.store(out_ptr + offs, total)


@tilec.jit
def load_via_helper(ptrs, mask):
    return tl.load(ptrs, mask=mask, other=-1.0)


@tilec.jit
def select_pointers(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    """Even programs read x, odd programs y (a select of scalar pointers of two buffers), and
    lanes alternate between x and y (a select of pointer tensors)."""
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    base = tl.where(pid % 2 == 0, x_ptr, y_ptr)
    by_program = load_via_helper(base + offs, mask)
    by_lane = tl.load(tl.where(offs % 2 == 0, x_ptr + offs, y_ptr + offs), mask=mask, other=0.0)
    tl.store(out_ptr + offs, by_program + 1000.0 * by_lane, mask=mask)


@tilec.jit
def wide_offsets(x_ptr, out_ptr, offsets_ptr, BLOCK: tl.constexpr):
    """Gathers with offsets of the dtype of offsets_ptr (i64 or u32)."""
    i = tl.arange(0, BLOCK)
    offsets = tl.load(offsets_ptr + i)
    tl.store(out_ptr + i, tl.load(x_ptr + offsets))


@tilec.jit
def masked_far_lanes(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    """Masked-off lanes point far outside x; only lanes < n are read."""
    i = tl.arange(0, BLOCK)
    offs = tl.where(i < n, i, i + 1_000_000)
    tl.store(out_ptr + i, tl.load(x_ptr + offs, mask=i < n, other=7.0))
