"""Kernels for test_language_elementwise.py: `tl.map_elementwise` (branches, early returns,
guarded divisions, packs) and `x.item()`, on every backend against the interpreter."""

import tilec
import tilec.language as tl


@tilec.jit
def leaky_scalar(x, slope):
    if x >= 0:
        return x
    return x * slope


@tilec.jit
def sign_scalar(x, y):
    if x < y:
        return -1
    elif x == y:
        return 0
    else:
        return 1


@tilec.jit
def guarded_div(a, b):
    q = a
    r = 0
    if b != 0:
        q = a // b
        r = a % b
    return q, r


@tilec.jit
def collatz_steps(x, limit):
    steps = 0
    while x != 1 and steps < limit:
        if x % 2 == 0:
            x = x // 2
        else:
            x = 3 * x + 1
        steps += 1
    return steps


@tilec.jit
def swap_pack2(a0, a1):
    return a1, a0


@tilec.jit
def sum_diff_pack4(a0, a1, a2, a3, b0, b1, b2, b3):
    return a0 + b0, a1 + b1, a2 + b2, a3 + b3, a0 - b0, a1 - b1, a2 - b2, a3 - b3


@tilec.jit
def map_float_kernel(x_ptr, y_ptr, out_ptr, out2_ptr, M: tl.constexpr, N: tl.constexpr,
                     OP: tl.constexpr):  # fmt: skip
    offs = tl.arange(0, M)[:, None] * N + tl.arange(0, N)[None, :]
    x = tl.load(x_ptr + offs)
    y = tl.load(y_ptr + offs)
    if OP == "leaky":
        tl.store(out_ptr + offs, tl.map_elementwise(leaky_scalar, x, tl.full((), 0.125, x.dtype)))
        tl.store(out2_ptr + offs, x)
    elif OP == "swap":
        tl.store(out_ptr + offs, tl.map_elementwise(swap_pack2, x, pack=2)[0])
        tl.store(out2_ptr + offs, y)
    else:
        s, d = tl.map_elementwise(sum_diff_pack4, x, y, pack=4)
        tl.store(out_ptr + offs, s)
        tl.store(out2_ptr + offs, d)


@tilec.jit
def map_int_kernel(x_ptr, y_ptr, out_ptr, out2_ptr, N: tl.constexpr, OP: tl.constexpr):
    offs = tl.arange(0, N)
    x = tl.load(x_ptr + offs)
    y = tl.load(y_ptr + offs)
    if OP == "sign":
        tl.store(out_ptr + offs, tl.map_elementwise(sign_scalar, x, y).to(x.dtype))
        tl.store(out2_ptr + offs, y)
    elif OP == "collatz":
        tl.store(out_ptr + offs, tl.map_elementwise(collatz_steps, x, y).to(x.dtype))
        tl.store(out2_ptr + offs, y)
    else:
        q, r = tl.map_elementwise(guarded_div, x, y)
        tl.store(out_ptr + offs, q)
        tl.store(out2_ptr + offs, r)


@tilec.jit
def item_of_reduction(x_ptr, out_ptr, N: tl.constexpr):
    x = tl.load(x_ptr + tl.arange(0, N))
    biggest = tl.max(x[None, :], axis=1)
    tl.store(out_ptr, biggest.item())
