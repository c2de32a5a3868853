"""Kernels with mistakes; the error tests assert the file, line and message the frontend reports."""

import math

import tilec
import tilec.language as tl

SCALE = 2


def helper(x):
    return x + 1


@tilec.jit
def uses_try(x_ptr):
    try:  # noqa: SIM105 - the mistake under test
        tl.load(x_ptr)
    except ValueError:
        pass


@tilec.jit
def uses_undefined(x_ptr):
    tl.store(x_ptr, undefined_value)  # noqa: F821 - the mistake under test


@tilec.jit
def bad_arange(x_ptr):
    offs = tl.arange(0, 100)
    tl.store(x_ptr + offs, 1.0)


@tilec.jit
def shape_mismatch(x_ptr):
    a = tl.arange(0, 16)
    b = tl.arange(0, 32)
    tl.store(x_ptr + a, a + b)


@tilec.jit
def calls_python(x_ptr):
    tl.store(x_ptr, helper(1.0) + math.pi)


@tilec.jit
def uses_lambda(x_ptr):
    f = lambda v: v  # noqa: E731 - the mistake under test
    tl.store(x_ptr, f(1.0))


@tilec.jit
def uses_with(x_ptr):
    with open("f"):
        tl.store(x_ptr, 1.0)


@tilec.jit
def mutates_global(x_ptr):
    global SCALE
    SCALE = 3


@tilec.jit
def wrong_dtype(x_ptr):
    tl.store(x_ptr, tl.load(x_ptr) << 2)


@tilec.jit
def load_from_int(n):
    tl.load(n)


@tilec.jit
def loop_changes_type(x_ptr, n):
    acc = 0
    for i in range(n):
        acc = acc + tl.load(x_ptr + i)
    tl.store(x_ptr, acc)


@tilec.jit
def returns_in_loop(x_ptr, n):
    for _step in range(n):
        return


@tilec.jit
def counts_by_zero(x_ptr, n):
    for i in range(n, 0, 0):
        tl.store(x_ptr + i, 1.0)


@tilec.jit
def needs_block(x_ptr, BLOCK: tl.constexpr):
    tl.store(x_ptr + tl.arange(0, BLOCK), 0.0)


@tilec.jit
def early_return(x_ptr, DONE: tl.constexpr = True):
    if DONE:
        return
    tl.store(x_ptr, 1.0)
