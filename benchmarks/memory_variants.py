"""Source variants of three of the sweep's memory-bound kernels (benchmarks/sweep_kernels.py), for
benchmarks/memory_source_ab.py: each computes what its sweep kernel computes, with its loads
moved or given a cache hint. Executed under tilec's or Triton's `jit` and `tl` as the sweep's
kernels are (sweep.load_kernels)."""

# ruff: noqa: F821  (jit and tl come from the namespace the file is executed in)


@jit
def layer_norm_fwd_wb_first(
    x_ptr, y_ptr, w_ptr, b_ptr, mean_ptr, rstd_ptr, stride, N, eps, BLOCK: tl.constexpr
):
    """sweep_layer_norm_fwd with the weight and bias loaded before the two reductions."""
    row = tl.program_id(0).to(tl.int64)
    cols = tl.arange(0, BLOCK)
    inside = cols < N
    x = tl.load(x_ptr + row * stride + cols, mask=inside, other=0.0).to(tl.float32)
    w = tl.load(w_ptr + cols, mask=inside, other=0.0).to(tl.float32)
    b = tl.load(b_ptr + cols, mask=inside, other=0.0).to(tl.float32)
    mean = tl.sum(x, axis=0) / N
    centred = tl.where(inside, x - mean, 0.0)
    rstd = 1.0 / tl.sqrt(tl.sum(centred * centred, axis=0) / N + eps)
    y = centred * rstd * w + b
    tl.store(y_ptr + row * stride + cols, y.to(y_ptr.dtype.element_ty), mask=inside)
    tl.store(mean_ptr + row, mean)
    tl.store(rstd_ptr + row, rstd)


@jit
def layer_norm_fwd_x_evict_first(
    x_ptr, y_ptr, w_ptr, b_ptr, mean_ptr, rstd_ptr, stride, N, eps, BLOCK: tl.constexpr
):
    """sweep_layer_norm_fwd with x loaded evict_first (read once) and y stored `.cs`."""
    row = tl.program_id(0).to(tl.int64)
    cols = tl.arange(0, BLOCK)
    inside = cols < N
    x = tl.load(x_ptr + row * stride + cols, mask=inside, other=0.0, eviction_policy="evict_first")
    x = x.to(tl.float32)
    mean = tl.sum(x, axis=0) / N
    centred = tl.where(inside, x - mean, 0.0)
    rstd = 1.0 / tl.sqrt(tl.sum(centred * centred, axis=0) / N + eps)
    w = tl.load(w_ptr + cols, mask=inside, other=0.0).to(tl.float32)
    b = tl.load(b_ptr + cols, mask=inside, other=0.0).to(tl.float32)
    y = centred * rstd * w + b
    place = y_ptr + row * stride + cols
    tl.store(place, y.to(y_ptr.dtype.element_ty), mask=inside, cache_modifier=".cs")
    tl.store(mean_ptr + row, mean)
    tl.store(rstd_ptr + row, rstd)


@jit
def rotary_trig_first(
    x_ptr, cos_ptr, sin_ptr, out_ptr, S, H, HALF: tl.constexpr, BLOCK_H: tl.constexpr
):
    """sweep_rotary with cos and sin loaded before x."""
    token = tl.program_id(0)
    heads = tl.program_id(1) * BLOCK_H + tl.arange(0, BLOCK_H)
    dims = tl.arange(0, HALF)
    position = (token % S) * HALF + dims
    cos = tl.load(cos_ptr + position)[None, :]
    sin = tl.load(sin_ptr + position)[None, :]
    place = token.to(tl.int64) * H * (2 * HALF) + heads[:, None] * (2 * HALF) + dims[None, :]
    inside = heads[:, None] < H
    x1 = tl.load(x_ptr + place, mask=inside, other=0.0).to(tl.float32)
    x2 = tl.load(x_ptr + place + HALF, mask=inside, other=0.0).to(tl.float32)
    kind = out_ptr.dtype.element_ty
    tl.store(out_ptr + place, (x1 * cos - x2 * sin).to(kind), mask=inside)
    tl.store(out_ptr + place + HALF, (x2 * cos + x1 * sin).to(kind), mask=inside)


@jit
def rotary_evict_first(
    x_ptr, cos_ptr, sin_ptr, out_ptr, S, H, HALF: tl.constexpr, BLOCK_H: tl.constexpr
):
    """sweep_rotary with x loaded evict_first and the output stored `.cs`."""
    token = tl.program_id(0)
    heads = tl.program_id(1) * BLOCK_H + tl.arange(0, BLOCK_H)
    dims = tl.arange(0, HALF)
    place = token.to(tl.int64) * H * (2 * HALF) + heads[:, None] * (2 * HALF) + dims[None, :]
    inside = heads[:, None] < H
    x1 = tl.load(x_ptr + place, mask=inside, other=0.0, eviction_policy="evict_first")
    x2 = tl.load(x_ptr + place + HALF, mask=inside, other=0.0, eviction_policy="evict_first")
    x1, x2 = x1.to(tl.float32), x2.to(tl.float32)
    position = (token % S) * HALF + dims
    cos = tl.load(cos_ptr + position)[None, :]
    sin = tl.load(sin_ptr + position)[None, :]
    kind = out_ptr.dtype.element_ty
    tl.store(out_ptr + place, (x1 * cos - x2 * sin).to(kind), mask=inside, cache_modifier=".cs")
    tl.store(
        out_ptr + place + HALF, (x2 * cos + x1 * sin).to(kind), mask=inside, cache_modifier=".cs"
    )


@jit
def swiglu_evict_first(gate_ptr, up_ptr, out_ptr, n, BLOCK: tl.constexpr):
    """sweep_swiglu with both loads evict_first."""
    offsets = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    inside = offsets < n
    gate = tl.load(gate_ptr + offsets, mask=inside, other=0.0, eviction_policy="evict_first")
    up = tl.load(up_ptr + offsets, mask=inside, other=0.0, eviction_policy="evict_first")
    gate, up = gate.to(tl.float32), up.to(tl.float32)
    out = gate * tl.sigmoid(gate) * up
    tl.store(out_ptr + offsets, out.to(out_ptr.dtype.element_ty), mask=inside)


@jit
def swiglu_store_cs(gate_ptr, up_ptr, out_ptr, n, BLOCK: tl.constexpr):
    """sweep_swiglu with the output stored `.cs` (streaming)."""
    offsets = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    inside = offsets < n
    gate = tl.load(gate_ptr + offsets, mask=inside, other=0.0).to(tl.float32)
    up = tl.load(up_ptr + offsets, mask=inside, other=0.0).to(tl.float32)
    out = gate * tl.sigmoid(gate) * up
    tl.store(out_ptr + offsets, out.to(out_ptr.dtype.element_ty), mask=inside, cache_modifier=".cs")
