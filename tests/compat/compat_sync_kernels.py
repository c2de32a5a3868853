"""Kernels whose programs wait on each other (tests/compat/test_compat_sync.py).

The layer-norm backward pair follows Triton's tutorial 05 (`_layer_norm_bwd_dx_fused` with its
Lock/Count spin lock, and `_layer_norm_bwd_dwdb`).
"""

import tilec
import tilec.language as tl


@tilec.jit
def layer_norm_bwd_dx_fused(
    DX, DY, DW, DB, X, W, Mean, Rstd, Lock, stride, N,
    GROUP_SIZE_M: tl.constexpr, BLOCK_SIZE_N: tl.constexpr,
):  # fmt: skip
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK_SIZE_N)
    mask = cols < N
    X += row * stride
    DY += row * stride
    DX += row * stride
    # Rows share GROUP_SIZE_M partial sums of dw and db, each guarded by a lock.
    lock_id = row % GROUP_SIZE_M
    Lock += lock_id
    Count = Lock + GROUP_SIZE_M
    DW = DW + lock_id * N + cols
    DB = DB + lock_id * N + cols
    x = tl.load(X + cols, mask=mask, other=0).to(tl.float32)
    dy = tl.load(DY + cols, mask=mask, other=0).to(tl.float32)
    w = tl.load(W + cols, mask=mask).to(tl.float32)
    mean = tl.load(Mean + row)
    rstd = tl.load(Rstd + row)
    xhat = (x - mean) * rstd
    wdy = w * dy
    xhat = tl.where(mask, xhat, 0.0)
    wdy = tl.where(mask, wdy, 0.0)
    c1 = tl.sum(xhat * wdy, axis=0) / N
    c2 = tl.sum(wdy, axis=0) / N
    dx = (wdy - (xhat * c1 + c2)) * rstd
    tl.store(DX + cols, dx, mask=mask)
    partial_dw = (dy * xhat).to(w.dtype)
    partial_db = dy.to(w.dtype)
    while tl.atomic_cas(Lock, 0, 1) == 1:
        pass
    count = tl.load(Count)
    if count == 0:  # the first program of the group stores, the others accumulate
        tl.atomic_xchg(Count, 1)
    else:
        partial_dw += tl.load(DW, mask=mask)
        partial_db += tl.load(DB, mask=mask)
    tl.store(DW, partial_dw, mask=mask)
    tl.store(DB, partial_db, mask=mask)
    tl.debug_barrier()
    tl.atomic_xchg(Lock, 0)


@tilec.jit
def layer_norm_bwd_dwdb(
    DW, DB, FINAL_DW, FINAL_DB, M, N, BLOCK_SIZE_M: tl.constexpr, BLOCK_SIZE_N: tl.constexpr
):
    pid = tl.program_id(0)
    cols = pid * BLOCK_SIZE_N + tl.arange(0, BLOCK_SIZE_N)
    dw = tl.zeros((BLOCK_SIZE_M, BLOCK_SIZE_N), dtype=tl.float32)
    db = tl.zeros((BLOCK_SIZE_M, BLOCK_SIZE_N), dtype=tl.float32)
    for i in range(0, M, BLOCK_SIZE_M):
        rows = i + tl.arange(0, BLOCK_SIZE_M)
        mask = (rows[:, None] < M) & (cols[None, :] < N)
        offs = rows[:, None] * N + cols[None, :]
        dw += tl.load(DW + offs, mask=mask, other=0.0)
        db += tl.load(DB + offs, mask=mask, other=0.0)
    sum_dw = tl.sum(dw, axis=0)
    sum_db = tl.sum(db, axis=0)
    tl.store(FINAL_DW + cols, sum_dw, mask=cols < N)
    tl.store(FINAL_DB + cols, sum_db, mask=cols < N)


@tilec.jit
def locked_counter(lock_ptr, count_ptr, order_ptr):
    """Every program adds one under a spin lock and records the count it saw."""
    while tl.atomic_cas(lock_ptr, 0, 1) != 0:
        pass
    seen = tl.load(count_ptr)
    tl.store(count_ptr, seen + 1)
    tl.store(order_ptr + tl.program_id(0), seen)
    tl.atomic_xchg(lock_ptr, 0)


@tilec.jit
def wait_for_last(flag_ptr, out_ptr):
    """Program 0 waits for a flag the last program sets (a plain load and store; the loop
    counts its turns, so that it has an effect and stays)."""
    pid = tl.program_id(0)
    last = tl.num_programs(0) - 1
    if pid == 0:
        turns = 0
        while tl.load(flag_ptr) == 0:
            turns += 1
        tl.store(out_ptr, tl.load(flag_ptr) + 1)
        tl.store(out_ptr + 1, turns)
    if pid == last:
        tl.store(flag_ptr, 41)


@tilec.jit
def grid_barrier(count_ptr, seen_ptr):
    """Each program arrives, then waits until every program has arrived."""
    tl.atomic_add(count_ptr, 1)
    n = tl.num_programs(0)
    while tl.atomic_add(count_ptr, 0) < n:
        pass
    tl.store(seen_ptr + tl.program_id(0), tl.atomic_add(count_ptr, 0))


@tilec.jit
def lock_never_released(lock_ptr, out_ptr):
    while tl.atomic_cas(lock_ptr, 0, 1) == 1:
        pass
    tl.store(out_ptr + tl.program_id(0), 1)


@tilec.jit
def loop_never_ends(x_ptr, out_ptr):
    x = tl.load(x_ptr)
    while x > 0:
        x = x | 1
    tl.store(out_ptr, x)


@tilec.jit
def loop_reading_constant_memory(n_ptr, step_ptr, out_ptr):
    """Reads memory in its exit condition, but memory no program writes."""
    i = 0
    while i < tl.load(n_ptr):
        i += tl.load(step_ptr)
    tl.store(out_ptr + tl.program_id(0), i)


@tilec.jit
def locked_rounds(lock_ptr, count_ptr, ROUNDS: tl.constexpr):
    """Each program takes the lock ROUNDS times, in a loop, and adds one to the count each time."""
    i = 0
    while i < ROUNDS:
        while tl.atomic_cas(lock_ptr, 0, 1) != 0:
            pass
        tl.store(count_ptr, tl.load(count_ptr) + 1)
        tl.atomic_xchg(lock_ptr, 0)
        i += 1
