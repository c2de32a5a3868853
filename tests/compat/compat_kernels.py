"""Kernels for tests/compat: Triton programs' arguments that tilec must honour or reject."""

import tilec
import tilec.language as tl


@tilec.jit
def static_range_step(out_ptr, N: tl.constexpr, STEP: tl.constexpr):
    acc = 0
    for i in tl.static_range(0, N, step=STEP):
        acc += i
    tl.store(out_ptr, acc)


@tilec.jit
def range_keywords(out_ptr, n, STEP: tl.constexpr):
    acc = 0
    for i in tl.range(arg1=1, arg2=n, step=STEP):
        acc += i
    tl.store(out_ptr, acc)


@tilec.jit
def range_hints(out_ptr, n, HINT: tl.constexpr, VALUE: tl.constexpr):
    acc = 0
    if HINT == "num_stages":
        for i in tl.range(0, n, num_stages=VALUE):
            acc += i
    elif HINT == "loop_unroll_factor":
        for i in tl.range(0, n, loop_unroll_factor=VALUE):
            acc += i
    elif HINT == "flatten":
        for i in tl.range(0, n, flatten=VALUE):
            acc += i
    elif HINT == "warp_specialize":
        for i in tl.range(0, n, warp_specialize=VALUE):
            acc += i
    elif HINT == "disable_licm":
        for i in tl.range(0, n, disable_licm=VALUE):
            acc += i
    elif HINT == "disallow_acc_multi_buffer":
        for i in tl.range(0, n, disallow_acc_multi_buffer=VALUE):
            acc += i
    elif HINT == "bogus":
        for i in tl.range(0, n, bogus=VALUE):
            acc += i
    elif HINT == "static_hint":
        for i in tl.static_range(0, 4, num_stages=VALUE):
            acc += i
    elif HINT == "static_bogus":
        for i in tl.static_range(0, 4, bogus=VALUE):
            acc += i
    elif HINT == "python_range":
        for i in range(0, n, step=VALUE):
            acc += i
    tl.store(out_ptr, acc)


@tilec.jit
def bitcast_kernel(x_ptr, out_ptr, N: tl.constexpr, TO: tl.constexpr):
    offs = tl.arange(0, N)
    tl.store(out_ptr + offs, tl.load(x_ptr + offs).to(TO, bitcast=True))


@tilec.jit
def downcast_kernel(x_ptr, out_ptr, N: tl.constexpr, ROUNDING: tl.constexpr):
    offs = tl.arange(0, N)
    x = tl.load(x_ptr + offs)
    tl.store(out_ptr + offs, x.to(tl.float16, fp_downcast_rounding=ROUNDING))


@tilec.jit
def sum_dtype_kernel(x_ptr, out_ptr, N: tl.constexpr, DTYPE: tl.constexpr):
    x = tl.load(x_ptr + tl.arange(0, N))
    tl.store(out_ptr, tl.sum(x, axis=0, dtype=DTYPE))


@tilec.jit
def dot_kernel(a_ptr, b_ptr, c_ptr, N: tl.constexpr, OUT: tl.constexpr, PRECISION: tl.constexpr):
    rows = tl.arange(0, N)[:, None] * N + tl.arange(0, N)[None, :]
    a = tl.load(a_ptr + rows)
    b = tl.load(b_ptr + rows)
    c = tl.dot(a, b, input_precision=PRECISION, out_dtype=OUT)
    tl.static_assert(c.dtype == OUT)
    tl.store(c_ptr + rows, c)


@tilec.jit
def dot_keywords(a_ptr, b_ptr, c_ptr, N: tl.constexpr, WHICH: tl.constexpr):
    rows = tl.arange(0, N)[:, None] * N + tl.arange(0, N)[None, :]
    a = tl.load(a_ptr + rows)
    b = tl.load(b_ptr + rows)
    if WHICH == "allow_tf32":
        c = tl.dot(a, b, allow_tf32=True)
    elif WHICH == "allow_tf32_false":
        c = tl.dot(a, b, allow_tf32=False)
    elif WHICH == "imprecise":
        c = tl.dot(a, b, max_num_imprecise_acc=32)
    elif WHICH == "bad_precision":
        c = tl.dot(a, b, input_precision="fast")
    else:
        c = tl.dot(a, b, acc=tl.zeros((N, N), tl.float32), out_dtype=tl.float16)
    tl.store(c_ptr + rows, c)


@tilec.jit
def shift_kernel(x_ptr, s_ptr, out_ptr, N: tl.constexpr):
    offs = tl.arange(0, N)
    tl.store(out_ptr + offs, tl.load(x_ptr + offs) >> tl.load(s_ptr + offs))


@tilec.jit
def abs_kernel(x_ptr, out_ptr, N: tl.constexpr):
    offs = tl.arange(0, N)
    tl.store(out_ptr + offs, tl.abs(tl.load(x_ptr + offs)))


@tilec.jit
def memory_keywords(x_ptr, out_ptr, N: tl.constexpr, WHICH: tl.constexpr, VALUE: tl.constexpr):
    offs = tl.arange(0, N)
    if WHICH == "boundary_check":
        x = tl.load(x_ptr + offs, boundary_check=VALUE)
    elif WHICH == "padding_option":
        x = tl.load(x_ptr + offs, padding_option=VALUE)
    elif WHICH == "cache_modifier":
        x = tl.load(x_ptr + offs, cache_modifier=VALUE)
    elif WHICH == "eviction_policy":
        x = tl.load(x_ptr + offs, eviction_policy=VALUE)
    elif WHICH == "volatile":
        x = tl.load(x_ptr + offs, volatile=VALUE)
    else:
        x = tl.load(x_ptr + offs)
    if WHICH == "store_cache_modifier":
        tl.store(out_ptr + offs, x, cache_modifier=VALUE)
    elif WHICH == "store_eviction_policy":
        tl.store(out_ptr + offs, x, eviction_policy=VALUE)
    else:
        tl.store(out_ptr + offs, x)


@tilec.jit
def bogus_keyword(x_ptr, FN: tl.constexpr):
    FN(bogus=1)


@tilec.jit
def bogus_to_keyword(x_ptr):
    tl.load(x_ptr).to(tl.int32, bogus=True)


@tilec.jit
def internal_errors(x_ptr, WHICH: tl.constexpr):
    offs = tl.arange(0, 4)
    x = tl.load(x_ptr + offs)
    if WHICH == "program_id":
        x += tl.program_id(20)
    elif WHICH == "num_programs":
        x += tl.num_programs(3)
    elif WHICH == "big_constant":
        x += 1099511627776
    elif WHICH == "expand_dims":
        x = tl.sum(tl.expand_dims(x, 5), axis=None)
    elif WHICH == "expand_dims_type":
        x = tl.sum(tl.expand_dims(x, "a"), axis=None)
    tl.store(x_ptr + offs, x)


@tilec.jit
def full_rank0(out_ptr, V: tl.constexpr):
    tl.store(out_ptr, tl.full((), V, tl.int32) + 1)


@tilec.jit
def expand_dims_tuple(x_ptr, out_ptr):
    x = tl.load(x_ptr + tl.arange(0, 4))
    y = tl.expand_dims(x, (0, 2))
    tl.static_assert(y.shape[0] == 1 and y.shape[1] == 4 and y.shape[2] == 1)
    tl.store(out_ptr + tl.arange(0, 4), tl.reshape(y, (4,)))


@tilec.jit
def strided_double(x_ptr, stride0, stride1, R: tl.constexpr, C: tl.constexpr):
    rows = tl.arange(0, R)[:, None]
    cols = tl.arange(0, C)[None, :]
    ptrs = x_ptr + rows * stride0 + cols * stride1
    tl.store(ptrs, tl.load(ptrs) * 2)


@tilec.jit
def add_one(x_ptr, N: tl.constexpr):
    offs = tl.arange(0, N)
    tl.store(x_ptr + offs, tl.load(x_ptr + offs) + 1)


@tilec.jit
def with_defaults(x_ptr, value=3, N: tl.constexpr = 4):
    offs = tl.arange(0, N)
    tl.store(x_ptr + offs, tl.load(x_ptr + offs) + value)
