"""Kernels for tests/language: one kernel per family, the operation picked by a constexpr string
(resolved at compile time, so each (OP, dtype) pair compiles to a kernel with just that op)."""

import tilec
import tilec.language as tl


@tilec.jit
def binary_kernel(x_ptr, y_ptr, out_ptr, OP: tl.constexpr, N: tl.constexpr):
    offs = tl.arange(0, N)
    x = tl.load(x_ptr + offs)
    y = tl.load(y_ptr + offs)
    if OP == "add":
        r = x + y
    elif OP == "sub":
        r = x - y
    elif OP == "mul":
        r = x * y
    elif OP == "truediv":
        r = x / y
    elif OP == "floordiv":
        r = x // y
    elif OP == "mod":
        r = x % y
    elif OP == "and":
        r = x & y
    elif OP == "or":
        r = x | y
    elif OP == "xor":
        r = x ^ y
    elif OP == "shl":
        r = x << y
    elif OP == "shr":
        r = x >> y
    elif OP == "minimum":
        r = tl.minimum(x, y)
    elif OP == "maximum":
        r = tl.maximum(x, y)
    elif OP == "minimum_nan":
        r = tl.minimum(x, y, propagate_nan=tl.PropagateNan.ALL)
    elif OP == "maximum_nan":
        r = tl.maximum(x, y, propagate_nan=tl.PropagateNan.ALL)
    elif OP == "lt":
        r = x < y
    elif OP == "le":
        r = x <= y
    elif OP == "gt":
        r = x > y
    elif OP == "ge":
        r = x >= y
    elif OP == "eq":
        r = x == y
    elif OP == "ne":
        r = x != y
    elif OP == "where":
        r = tl.where(x > y, x, y)
    elif OP == "py_min":
        r = min(x, y)
    else:
        tl.static_assert(OP == "py_max", "unknown OP")
        r = max(x, y)
    tl.store(out_ptr + offs, r)


@tilec.jit
def unary_kernel(x_ptr, out_ptr, OP: tl.constexpr, N: tl.constexpr):
    offs = tl.arange(0, N)
    x = tl.load(x_ptr + offs)
    if OP == "exp":
        r = tl.exp(x)
    elif OP == "exp2":
        r = tl.exp2(x)
    elif OP == "log":
        r = tl.log(x)
    elif OP == "log2":
        r = tl.log2(x)
    elif OP == "sqrt":
        r = tl.sqrt(x)
    elif OP == "rsqrt":
        r = tl.rsqrt(x)
    elif OP == "abs":
        r = tl.abs(x)
    elif OP == "sin":
        r = tl.sin(x)
    elif OP == "cos":
        r = tl.cos(x)
    elif OP == "sigmoid":
        r = tl.sigmoid(x)
    elif OP == "erf":
        r = tl.erf(x)
    elif OP == "neg":
        r = -x
    elif OP == "invert":
        r = ~x
    else:
        tl.static_assert(OP == "fma", "unknown OP")
        r = tl.fma(x, x, x)
    tl.store(out_ptr + offs, r)


@tilec.jit
def clamp_kernel(x_ptr, out_ptr, lo, hi, PROPAGATE: tl.constexpr, N: tl.constexpr):
    offs = tl.arange(0, N)
    x = tl.load(x_ptr + offs)
    if PROPAGATE:
        r = tl.clamp(x, lo, hi, propagate_nan=tl.PropagateNan.ALL)
    else:
        r = tl.clamp(x, lo, hi)
    tl.store(out_ptr + offs, r)


@tilec.jit
def cast_kernel(x_ptr, out_ptr, DTYPE: tl.constexpr, N: tl.constexpr):
    offs = tl.arange(0, N)
    tl.store(out_ptr + offs, tl.load(x_ptr + offs).to(DTYPE))


@tilec.jit
def reduce_kernel(x_ptr, out_ptr, OP: tl.constexpr, M: tl.constexpr, N: tl.constexpr):
    """Reduces an [M, N] tile along axis 1 into out[M] (scans: out[M, N])."""
    rows = tl.arange(0, M)
    cols = tl.arange(0, N)
    x = tl.load(x_ptr + rows[:, None] * N + cols[None, :])
    if OP == "sum":
        tl.store(out_ptr + rows, tl.sum(x, axis=1))
    elif OP == "max":
        tl.store(out_ptr + rows, tl.max(x, axis=1))
    elif OP == "min":
        tl.store(out_ptr + rows, tl.min(x, axis=1))
    elif OP == "argmax":
        tl.store(out_ptr + rows, tl.argmax(x, axis=1))
    elif OP == "argmin":
        tl.store(out_ptr + rows, tl.argmin(x, axis=1))
    elif OP == "xor_sum":
        tl.store(out_ptr + rows, tl.xor_sum(x, axis=1))
    elif OP == "reduce_or":
        tl.store(out_ptr + rows, tl.reduce(x, 1, or_combine))
    elif OP == "reduce_max":
        tl.store(out_ptr + rows, tl.reduce(x, 1, max_combine))
    elif OP == "cumsum":
        tl.store(out_ptr + rows[:, None] * N + cols[None, :], tl.cumsum(x, axis=1))
    else:
        tl.static_assert(OP == "cumprod", "unknown OP")
        tl.store(out_ptr + rows[:, None] * N + cols[None, :], tl.cumprod(x, axis=1))


@tilec.jit
def or_combine(a, b):
    return a | b


@tilec.jit
def max_combine(a, b):
    return tl.maximum(a, b)


@tilec.jit
def shape_kernel(x_ptr, out_ptr, OP: tl.constexpr, M: tl.constexpr, N: tl.constexpr):
    """Shape ops on an [M, N] tile; every result is stored as a flat [M * N] row-major tile."""
    rows = tl.arange(0, M)
    cols = tl.arange(0, N)
    flat = tl.arange(0, M * N)
    x = tl.load(x_ptr + rows[:, None] * N + cols[None, :])
    if OP == "trans":
        tl.store(out_ptr + cols[:, None] * M + rows[None, :], tl.trans(x))
    elif OP == "reshape":
        tl.store(out_ptr + flat, tl.reshape(x, (M * N,)))
    elif OP == "broadcast_to":
        first_row = tl.load(x_ptr + cols)
        wide = tl.broadcast_to(tl.expand_dims(first_row, 0), (M, N))
        tl.store(out_ptr + rows[:, None] * N + cols[None, :], wide)
    elif OP == "expand_dims":
        column = tl.load(x_ptr + rows * N)
        tl.store(out_ptr + rows[:, None] * N + cols[None, :], tl.expand_dims(column, 1) + x * 0)
    elif OP == "zeros":
        tl.store(out_ptr + flat, tl.zeros((M * N,), dtype=x.dtype) + tl.reshape(x, (M * N,)))
    else:
        tl.static_assert(OP == "full", "unknown OP")
        tl.store(out_ptr + flat, tl.full((M * N,), 3, dtype=x.dtype))


@tilec.jit
def dot_kernel(a_ptr, b_ptr, c_ptr, M: tl.constexpr, N: tl.constexpr, K: tl.constexpr,
               WITH_ACC: tl.constexpr):  # fmt: skip
    rm = tl.arange(0, M)
    rn = tl.arange(0, N)
    rk = tl.arange(0, K)
    a = tl.load(a_ptr + rm[:, None] * K + rk[None, :])
    b = tl.load(b_ptr + rk[:, None] * N + rn[None, :])
    c_ptrs = c_ptr + rm[:, None] * N + rn[None, :]
    if WITH_ACC:
        c = tl.dot(a, b, tl.load(c_ptrs))
    else:
        c = tl.dot(a, b)
    tl.store(c_ptrs, c)


@tilec.jit
def atomic_kernel(target_ptr, value_ptr, old_ptr, OP: tl.constexpr, N: tl.constexpr,
                  SLOTS: tl.constexpr):  # fmt: skip
    """Every program's N lanes update target[lane % SLOTS] and record the old values."""
    lanes = tl.arange(0, N)
    index = tl.program_id(0) * N + lanes
    value = tl.load(value_ptr + index)
    where = target_ptr + lanes % SLOTS
    if OP == "add":
        old = tl.atomic_add(where, value)
    elif OP == "max":
        old = tl.atomic_max(where, value)
    elif OP == "min":
        old = tl.atomic_min(where, value)
    elif OP == "xchg":
        old = tl.atomic_xchg(where, value)
    else:
        tl.static_assert(OP == "cas", "unknown OP")
        old = tl.atomic_cas(where, tl.load(where), value)
    tl.store(old_ptr + index, old)


@tilec.jit
def grid_kernel(out_ptr, n, BLOCK: tl.constexpr):
    """Programs of a 2-D grid write pid_x, pid_y, num_programs and a loop-computed value."""
    pid_x = tl.program_id(0)
    pid_y = tl.program_id(1)
    program = pid_y * tl.num_programs(0) + pid_x
    offs = tl.arange(0, BLOCK)
    offs = tl.multiple_of(offs, BLOCK)
    offs = tl.max_contiguous(offs, BLOCK)
    total = tl.zeros((BLOCK,), dtype=tl.int32)
    for i in range(0, n):  # runtime bound
        total += i
    for j in tl.static_range(3):  # unrolled at compile time
        total += j
    for _k in tl.range(0, n, 2):
        total += 1
    tl.debug_barrier()
    base = out_ptr + program * 4 * BLOCK
    tl.store(base + offs, total * 0 + pid_x)
    tl.store(base + BLOCK + offs, total * 0 + pid_y)
    tl.store(base + 2 * BLOCK + offs, total * 0 + tl.num_programs(0) * tl.num_programs(1))
    tl.store(base + 3 * BLOCK + offs, total)


@tilec.jit
def masked_copy_kernel(x_ptr, out_ptr, n, OTHER: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < n, other=OTHER)
    tl.store(out_ptr + offs, x, mask=offs < tl.cdiv(n, 8) * 8 + 8)


@tilec.jit
def print_kernel(x_ptr, N: tl.constexpr):
    x = tl.load(x_ptr + tl.arange(0, N))
    tl.device_print("x=", x)


@tilec.jit
def xor_sum_of_floats(x_ptr, N: tl.constexpr):
    x = tl.load(x_ptr + tl.arange(0, N))
    tl.store(x_ptr, tl.xor_sum(x, axis=0))


@tilec.jit
def bad_propagate_nan(x_ptr, N: tl.constexpr):
    x = tl.load(x_ptr + tl.arange(0, N))
    tl.store(x_ptr + tl.arange(0, N), tl.maximum(x, x, propagate_nan=3))


@tilec.jit
def failing_static_assert(x_ptr, N: tl.constexpr):
    tl.static_assert(N % 3 == 0, "N must be a multiple of 3")
    tl.store(x_ptr, 1.0)
