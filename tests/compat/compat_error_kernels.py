"""Kernels that Triton rejects, and their neighbours that it accepts
(tests/compat/test_compat_triton_errors.py)."""

import tilec
import tilec.language as tl


@tilec.jit
def binary_op(x_ptr, y_ptr, out_ptr, OP: tl.constexpr):
    offs = tl.arange(0, 8)
    x = tl.load(x_ptr + offs)
    y = tl.load(y_ptr + offs)
    if OP == "&":
        z = x & y
    elif OP == "|":
        z = x | y
    elif OP == "^":
        z = x ^ y
    elif OP == "<<":
        z = x << y
    elif OP == ">>":
        z = x >> y
    elif OP == "~":
        z = ~x
    elif OP == "/":
        z = x / y
    elif OP == "//":
        z = x // y
    elif OP == "%":
        z = x % y
    elif OP == "% 3":
        z = x % 3
    elif OP == "+ -1":
        z = x + -1
    elif OP == "-1 *":
        z = -1 * x
    elif OP == "< -1":
        z = (x < -1).to(x.dtype)
    elif OP == "& -1":
        z = x & -1
    tl.store(out_ptr + offs, z)


@tilec.jit
def atomic_op(x_ptr, out_ptr, OP: tl.constexpr, DTYPE: tl.constexpr):
    offs = tl.arange(0, 8)
    ptrs = x_ptr + offs
    one = tl.full((8,), 1, DTYPE)
    if OP == "add":
        old = tl.atomic_add(ptrs, one)
    elif OP == "xchg":
        old = tl.atomic_xchg(ptrs, one)
    elif OP == "max":
        old = tl.atomic_max(ptrs, one)
    elif OP == "min":
        old = tl.atomic_min(ptrs, one)
    elif OP == "and":
        old = tl.atomic_and(ptrs, one)
    elif OP == "or":
        old = tl.atomic_or(ptrs, one)
    elif OP == "xor":
        old = tl.atomic_xor(ptrs, one)
    elif OP == "cas":
        old = tl.atomic_cas(ptrs, one - one, one)
    tl.store(out_ptr + offs, old)


@tilec.jit
def mistake_variants(x_ptr, n, WHICH: tl.constexpr):
    offs = tl.arange(0, 4)
    x = tl.load(x_ptr + offs)
    if WHICH == "program_id_negative":
        x += tl.program_id(-1)
    elif WHICH == "big_constant_on_a_scalar":
        x += n + 1099511627776
    elif WHICH == "big_constant_in_a_compare":
        x = tl.where(x < 1099511627776, x, 0)
    elif WHICH == "expand_dims_negative":
        x = tl.sum(tl.expand_dims(x, -5), axis=None)
    elif WHICH == "expand_dims_repeated":
        x = tl.sum(tl.expand_dims(x, (0, 0)), axis=None)
    elif WHICH == "zeros_rank0":
        x += tl.zeros((), tl.int32) + 1
    elif WHICH == "full_rank0_list":
        x += tl.full([], 2, tl.int32)
    elif WHICH == "expand_dims_of_a_scalar":
        x += tl.sum(tl.expand_dims(n, 0))
    tl.store(x_ptr + offs, x)
