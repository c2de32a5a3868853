"""Kernels for test_compat_language_values.py, written here: `x.item()`, Triton's tensor
indexing, `tl.map_elementwise`, `tl.condition`, `tl.tuple`, `tl.slice` and `tl.const`."""

import tilec
import tilec.language as tl
from tilec.language.target_info import is_hip


@tilec.jit
def item_kernel(x_ptr, out_ptr, SHAPE: tl.constexpr, NUMEL: tl.constexpr = 1):
    one = tl.reshape(tl.load(x_ptr + tl.arange(0, NUMEL)), SHAPE)
    value = one.item()
    tl.static_assert(value.shape == [])
    tl.store(out_ptr, value * 2)


@tilec.jit
def index_shapes(out_ptr, N: tl.constexpr, NONE: tl.constexpr):
    data = tl.arange(0, N)
    t = data[None, :, None]
    tl.static_assert(t.shape == [1, N, 1])
    u = data[NONE, tl.slice(None, None, None)]
    tl.static_assert(u.shape == [1, N])
    scalar = tl.full([], 1, tl.int32)
    tl.static_assert(scalar[None, None].shape == [1, 1])
    tl.store(out_ptr + tl.arange(0, N)[:, None], data[:, None])


@tilec.jit
def bad_index(x_ptr, out_ptr, N: tl.constexpr, WHICH: tl.constexpr):
    x = tl.load(x_ptr + tl.arange(0, N))
    if WHICH == "int":
        y = x[0]
    elif WHICH == "bounded":
        y = x[1:]
    elif WHICH == "mixed":
        y = x[None, :, 2]
    else:
        y = out_ptr[10:]
    tl.store(out_ptr, y)


@tilec.jit
def selu_scalar(x, alpha):
    if x > 0:
        return x
    else:
        return alpha * (tl.exp(x) - 1)


@tilec.jit
def classify(x, y):
    if x < y:
        return -1
    elif x == y:
        return 0
    return 1


@tilec.jit
def safe_div(a, b):
    q = 0
    if b != 0:
        q = a // b
    return q, a - q


@tilec.jit
def divmod_pack2(a0, a1, b0, b1):
    return a0 // b0, a1 // b1, a0 % b0, a1 % b1


@tilec.jit
def map_kernel(x_ptr, y_ptr, out_ptr, N: tl.constexpr, WHICH: tl.constexpr):
    offs = tl.arange(0, N)
    x = tl.load(x_ptr + offs)
    y = tl.load(y_ptr + offs)
    if WHICH == "selu":
        tl.store(out_ptr + offs, tl.map_elementwise(selu_scalar, x, tl.full((), 2.0, tl.float32)))
    elif WHICH == "classify":
        tl.store(out_ptr + offs, tl.map_elementwise(classify, x, y).to(tl.float32))
    elif WHICH == "safe_div":
        q, r = tl.map_elementwise(safe_div, x.to(tl.int32), y.to(tl.int32))
        tl.store(out_ptr + offs, (q * 1000 + r).to(tl.float32))
    else:
        q, r = tl.map_elementwise(divmod_pack2, x.to(tl.int32), y.to(tl.int32), pack=2)
        tl.store(out_ptr + offs, (q * 1000 + r).to(tl.float32))


@tilec.jit
def store_in_branch(x, p):
    if x > 0:
        tl.store(p, x)
    return x


@tilec.jit
def store_in_loop(x, p):
    while x > 1:
        tl.store(p, x)
        x = x // 2
    return x


@tilec.jit
def collatz_steps(x):
    steps = 0
    while x != 1:
        if x % 2 == 0:
            x = x // 2
        else:
            x = 3 * x + 1
        steps += 1
    return steps


@tilec.jit
def odd_sum(n):
    acc = 0
    for i in range(1, n + 1, 2):
        acc += i
    return acc


@tilec.jit
def loop_kernel(x_ptr, out_ptr, N: tl.constexpr, WHICH: tl.constexpr):
    x = tl.load(x_ptr + tl.arange(0, N))
    if WHICH == "collatz":
        tl.store(out_ptr + tl.arange(0, N), tl.map_elementwise(collatz_steps, x))
    else:
        tl.store(out_ptr + tl.arange(0, N), tl.map_elementwise(odd_sum, x))


@tilec.jit
def bad_map(x_ptr, N: tl.constexpr, WHICH: tl.constexpr):
    x = tl.load(x_ptr + tl.arange(0, N))
    if WHICH == "store":
        y = tl.map_elementwise(store_in_branch, x, x_ptr)
    elif WHICH == "while":
        y = tl.map_elementwise(store_in_loop, x.to(tl.int32), x_ptr).to(tl.float32)
    else:
        y = tl.map_elementwise(divmod_pack2, x, x, pack=3)[0]
    tl.store(x_ptr + tl.arange(0, N), y)


@tilec.jit
def values_kernel(x_ptr: tl.const, out_ptr, n, STORE_CONST: tl.constexpr):
    t = tl.tuple([1, 2, 3])
    tl.static_assert(isinstance(t, tl.tuple) and isinstance((4, 5), tl.tuple))
    tl.static_assert(t[tl.slice(1, 3, None)] == (2, 3) and t[1:] == (2, 3))
    tl.static_assert(tl.void.is_void() and not tl.float32.is_void())
    i = 0
    acc = tl.load(x_ptr)
    while tl.condition(i < n, disable_licm=True):
        acc += tl.load(x_ptr + i)
        i += 1
    if STORE_CONST:
        tl.store(x_ptr + 1, acc)
    tl.store(out_ptr, acc + t[2])


@tilec.jit
def licm_kernel(x_ptr, out_ptr, n, k, DISABLE: tl.constexpr):
    acc = 0
    for i in tl.range(0, n, disable_licm=DISABLE):
        acc += k * 3 + i
    tl.store(out_ptr, acc)


@tilec.jit
def target_kernel(out_ptr):
    if tl.target_info.is_cuda():
        v = 1
    elif is_hip():
        v = 2
    else:
        v = 3
    if tl.target_info.cuda_capability_geq(9, 0) or tl.target_info.is_hip_cdna3():
        v += 10
    tl.store(out_ptr, v)


@tilec.jit
def unroll_kernel(out_ptr, start, n, STEP: tl.constexpr, UNROLL: tl.constexpr):
    acc = 0
    x = tl.zeros([4], tl.int32)
    for i in tl.range(start, n, STEP, loop_unroll_factor=UNROLL):
        acc += i * i
        x += i
    tl.store(out_ptr, acc)
    tl.store(out_ptr + 1 + tl.arange(0, 4), x)


@tilec.jit
def sort_defaults(x_ptr, out_ptr, M: tl.constexpr, N: tl.constexpr, DESCENDING: tl.constexpr):
    offs = tl.arange(0, M)[:, None] * N + tl.arange(0, N)[None, :]
    x = tl.load(x_ptr + offs)
    tl.store(out_ptr + offs, tl.sort(x, dim=None, descending=DESCENDING))


@tilec.jit
def tuple_argument(ptrs, scale, out_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.static_assert(isinstance(ptrs, tl.tuple) and len(ptrs) == 2 and ptrs[1][1] is None)
    a = tl.load(ptrs[0] + offs)
    b = tl.load(ptrs[1][0] + offs)
    x, y = scale
    tl.store(out_ptr + offs, a + b * x + y)


@tilec.jit
def bad_python_index(x_ptr, i, WHICH: tl.constexpr):
    t = (1, 2)
    if WHICH == "runtime":
        v = t[i]
    elif WHICH == "range":
        v = t[5]
    else:
        v = tl.load(x_ptr + tl.arange(0, 4))[i]
    tl.store(x_ptr, v)


@tilec.jit
def count_down_kernel(out_ptr, a, b, STEP: tl.constexpr, UNROLL: tl.constexpr):
    acc = 0
    j = 0
    for i in tl.range(a, b, STEP, loop_unroll_factor=UNROLL):
        acc += i * (j + 1)
        j += 1  # noqa: SIM113 - kernels loop over range only
    tl.store(out_ptr, acc)


@tilec.jit
def unsplat_condition(x_ptr, EXPLICIT: tl.constexpr, N: tl.constexpr):
    condition = tl.load(x_ptr + tl.arange(0, N)) > 42
    if EXPLICIT:
        condition = condition.item()
    if condition:
        tl.store(x_ptr, 42)


@tilec.jit
def namedtuple_argument(p, out_ptr):
    offs = tl.arange(0, 4)
    tl.store(out_ptr + offs, tl.load(p.data + offs) * p.scale + len(p))
