"""The `tl` functions added after the first frontend: clamp, argmax/argmin, cumsum/cumprod,
reduce/associative_scan with user combine functions, the remaining atomics, tl.range options and
while loops. Each kernel is compiled to tir, verified, run through the default tir passes and the
interpreter, and compared with NumPy on fresh random inputs (never all zeros).
"""

from __future__ import annotations

import numpy as np
import pytest

import tilec
import tilec.dialects
import tilec.language as tl
from tilec.frontend import compile_to_tir
from tilec.frontend.errors import CompilationError
from tilec.ir import parse_module, print_module, verify
from tilec.pipeline import plugin_pass_manager
from tilec_interp import interpreter

PASSES = ["inline", "canonicalize", "licm", "cse", "dce"]
NP_TYPES = {"fp32": np.float32, "fp16": np.float16, "i32": np.int32, "i8": np.int8}
NP_TYPES |= {"u32": np.uint32, "i64": np.int64, "fp64": np.float64}


def run(kernel, signature, constexprs, grid, args):
    module = compile_to_tir(kernel, signature, constexprs)
    verify(module)
    text = print_module(module)
    assert print_module(parse_module(text)) == text  # combiner regions round-trip
    plugin_pass_manager().run(module, PASSES)
    verify(module)
    interpreter.execute(module, kernel.__name__, grid, args)
    return module


# clamp ---------------------------------------------------------------------------------------


@tilec.jit
def clamp_kernel(x_ptr, out_ptr, n, LO: tl.constexpr, HI: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    tl.store(out_ptr + offs, tl.clamp(x, LO, HI), mask=mask)


@tilec.jit
def clamp_tensor_kernel(x_ptr, lo_ptr, hi_ptr, out_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x, lo, hi = tl.load(x_ptr + offs), tl.load(lo_ptr + offs), tl.load(hi_ptr + offs)
    tl.store(out_ptr + offs, tl.clamp(x, lo, hi))


@pytest.mark.parametrize(
    ("dtype", "lo", "hi"), [("fp32", -0.5, 0.75), ("fp16", -1.0, 0.25), ("i32", -20, 30)]
)
def test_clamp_constant_bounds(rng, dtype, lo, hi):
    n = 1000
    x = (rng.standard_normal(n) * 40).astype(NP_TYPES[dtype])
    out = np.zeros_like(x)
    signature = {"x_ptr": f"*{dtype}", "out_ptr": f"*{dtype}", "n": "i32"}
    run(clamp_kernel, signature, {"LO": lo, "HI": hi, "BLOCK": 256}, (4,), [x, out, n])
    np.testing.assert_array_equal(out, np.clip(x, lo, hi).astype(x.dtype))


def test_clamp_tensor_bounds(rng):
    n = 128
    x = rng.standard_normal(n, dtype=np.float32)
    lo = rng.uniform(-1.0, 0.0, n).astype(np.float32)
    hi = rng.uniform(0.0, 1.0, n).astype(np.float32)
    out = np.zeros_like(x)
    signature = {name: "*fp32" for name in ("x_ptr", "lo_ptr", "hi_ptr", "out_ptr")}
    run(clamp_tensor_kernel, signature, {"BLOCK": n}, (1,), [x, lo, hi, out])
    np.testing.assert_array_equal(out, np.minimum(np.maximum(x, lo), hi))


# argmax / argmin -----------------------------------------------------------------------------


@tilec.jit
def arg_kernel(
    x_ptr, out_ptr, R: tl.constexpr, C: tl.constexpr, AXIS: tl.constexpr, MAX: tl.constexpr
):
    rows = tl.arange(0, R)[:, None]
    cols = tl.arange(0, C)[None, :]
    x = tl.load(x_ptr + rows * C + cols)
    if MAX:
        idx = tl.argmax(x, axis=AXIS)
    else:
        idx = tl.argmin(x, AXIS)
    if AXIS == 0:
        tl.store(out_ptr + tl.arange(0, C), idx)
    elif AXIS == 1:
        tl.store(out_ptr + tl.arange(0, R), idx)
    else:
        tl.store(out_ptr, idx)


@tilec.jit
def arg_keepdims_kernel(x_ptr, out_ptr, R: tl.constexpr, C: tl.constexpr):
    rows = tl.arange(0, R)[:, None]
    x = tl.load(x_ptr + rows * C + tl.arange(0, C)[None, :])
    idx = tl.argmax(x, 1, keep_dims=True)  # [R, 1]
    tl.store(out_ptr + rows, idx)


@pytest.mark.parametrize("dtype", ["fp32", "fp16", "i32", "i8", "u32"])
@pytest.mark.parametrize("axis", [0, 1, None])
@pytest.mark.parametrize("is_max", [True, False])
def test_argmax_argmin_break_ties_to_the_smallest_index(rng, dtype, axis, is_max):
    r, c = 16, 32
    gen = rng
    # Few distinct values: every row and column has ties for the max and the min.
    x = gen.integers(1, 5, (r, c)).astype(NP_TYPES[dtype])
    if dtype in ("fp32", "fp16", "i32", "i8"):
        x = (x - 3).astype(x.dtype) * gen.choice([1, 1, 1, 2], (r, c)).astype(x.dtype)
    x[x == 0] = 1
    length = 1 if axis is None else (c if axis == 0 else r)
    out = np.full(length, -7, np.int32)
    constexprs = {"R": r, "C": c, "AXIS": axis, "MAX": is_max}
    signature = {"x_ptr": f"*{dtype}", "out_ptr": "*i32"}
    run(arg_kernel, signature, constexprs, (1,), [x, out])
    ref = (np.argmax if is_max else np.argmin)(x, axis=axis)
    np.testing.assert_array_equal(out, np.atleast_1d(ref))


def test_argmax_keep_dims(rng):
    r, c = 8, 16
    x = rng.integers(-2, 3, (r, c)).astype(np.float32) + 0.5
    out = np.full(r, -7, np.int32)
    run(
        arg_keepdims_kernel, {"x_ptr": "*fp32", "out_ptr": "*i32"}, {"R": r, "C": c}, (1,), [x, out]
    )
    np.testing.assert_array_equal(out, np.argmax(x, axis=1))


@tilec.jit
def keep_dims_kernel(x_ptr, out_ptr, R: tl.constexpr, C: tl.constexpr):
    rows = tl.arange(0, R)[:, None]
    cols = tl.arange(0, C)[None, :]
    x = tl.load(x_ptr + rows * C + cols)
    tl.static_assert(tl.sum(x, 1, keep_dims=True).shape == (R, 1))
    y = x - tl.max(x, axis=1, keep_dims=True) + tl.min(x, axis=0, keep_dims=True)
    y = y + tl.sum(x, axis=None, keep_dims=True)  # [1, 1]
    y = y + tl.argmax(x, None, keep_dims=True).to(tl.float32)
    tl.store(out_ptr + rows * C + cols, y)
    big = tl.sum(x.to(tl.int8), 1, dtype=tl.int64)  # the dtype applies before the sum
    tl.store(out_ptr + R * C + tl.arange(0, R), big.to(tl.float32))


def test_keep_dims_and_sum_dtype(rng):
    r, c = 8, 16
    x = rng.uniform(-50, 50, (r, c)).astype(np.float32)
    x[x == 0] = 1
    out = np.zeros(r * c + r, np.float32)
    run(keep_dims_kernel, {"x_ptr": "*fp32", "out_ptr": "*fp32"}, {"R": r, "C": c}, (1,), [x, out])
    ref = x - x.max(axis=1, keepdims=True) + x.min(axis=0, keepdims=True)
    ref = ref + x.sum(dtype=np.float32) + np.float32(np.argmax(x))
    np.testing.assert_allclose(out[: r * c].reshape(r, c), ref, rtol=1e-5, atol=1e-3)
    ints = x.astype(np.int8).astype(np.int64).sum(axis=1)
    np.testing.assert_array_equal(out[r * c :], ints.astype(np.float32))


@tilec.jit
def return_indices_kernel(x_ptr, out_ptr, R: tl.constexpr, C: tl.constexpr, LEFT: tl.constexpr):
    rows = tl.arange(0, R)
    x = tl.load(x_ptr + rows[:, None] * C + tl.arange(0, C)[None, :])
    vmax, imax = tl.max(x, 1, return_indices=True, return_indices_tie_break_left=LEFT)
    vmin, imin = tl.min(x, axis=1, return_indices=True)
    tl.store(out_ptr + rows, vmax)
    tl.store(out_ptr + R + rows, imax.to(tl.float32))
    tl.store(out_ptr + 2 * R + rows, vmin)
    tl.store(out_ptr + 3 * R + rows, imin.to(tl.float32))


@pytest.mark.parametrize("left", [True, False])
def test_max_min_return_indices(rng, left):
    r, c = 16, 32
    x = rng.integers(-3, 4, (r, c)).astype(np.float32) + 0.5  # ties in every row
    out = np.zeros(4 * r, np.float32)
    constexprs = {"R": r, "C": c, "LEFT": left}
    run(return_indices_kernel, {"x_ptr": "*fp32", "out_ptr": "*fp32"}, constexprs, (1,), [x, out])
    imax, imin = out[r : 2 * r].astype(int), out[3 * r :].astype(int)
    np.testing.assert_array_equal(out[:r], x.max(axis=1))
    np.testing.assert_array_equal(out[2 * r : 3 * r], x.min(axis=1))
    np.testing.assert_array_equal(imin, np.argmin(x, axis=1))
    if left:
        np.testing.assert_array_equal(imax, np.argmax(x, axis=1))
    else:  # Triton leaves the index among ties unspecified; it must still point at a max
        np.testing.assert_array_equal(x[np.arange(r), imax], x.max(axis=1))


# cumsum / cumprod ----------------------------------------------------------------------------


@tilec.jit
def cum_kernel(
    x_ptr,
    out_ptr,
    R: tl.constexpr,
    C: tl.constexpr,
    AXIS: tl.constexpr,
    PROD: tl.constexpr,
    REVERSE: tl.constexpr,
):
    offs = tl.arange(0, R)[:, None] * C + tl.arange(0, C)[None, :]
    x = tl.load(x_ptr + offs)
    if PROD:
        y = tl.cumprod(x, axis=AXIS, reverse=REVERSE)
    else:
        y = tl.cumsum(x, AXIS, REVERSE)
    tl.store(out_ptr + offs, y)


def _cum_reference(x, axis, prod, reverse, dtype):
    fn = np.cumprod if prod else np.cumsum
    if reverse:
        return np.flip(fn(np.flip(x, axis), axis=axis, dtype=dtype), axis)
    return fn(x, axis=axis, dtype=dtype)


@pytest.mark.parametrize("axis", [0, 1])
@pytest.mark.parametrize("reverse", [False, True])
@pytest.mark.parametrize("prod", [False, True])
def test_cumsum_cumprod_float(rng, axis, reverse, prod):
    r, c = 8, 16
    x = rng.uniform(0.5, 1.5, (r, c)).astype(np.float32)
    out = np.zeros_like(x)
    constexprs = {"R": r, "C": c, "AXIS": axis, "PROD": prod, "REVERSE": reverse}
    run(cum_kernel, {"x_ptr": "*fp32", "out_ptr": "*fp32"}, constexprs, (1,), [x, out])
    ref = _cum_reference(x, axis, prod, reverse, np.float32)
    np.testing.assert_allclose(out, ref, rtol=1e-5)


@pytest.mark.parametrize(("src", "dst"), [("i32", "i32"), ("i8", "i32"), ("i64", "i64")])
@pytest.mark.parametrize("reverse", [False, True])
def test_cumsum_int_wraps_and_promotes_small_ints(rng, src, dst, reverse):
    r, c = 4, 64
    x = rng.integers(-120, 120, (r, c)).astype(NP_TYPES[src])
    x[x == 0] = 3
    if src == "i32":
        x *= 40_000_000  # the running sums overflow and wrap
    out = np.zeros((r, c), NP_TYPES[dst])
    constexprs = {"R": r, "C": c, "AXIS": 1, "PROD": False, "REVERSE": reverse}
    run(cum_kernel, {"x_ptr": f"*{src}", "out_ptr": f"*{dst}"}, constexprs, (1,), [x, out])
    with np.errstate(over="ignore"):
        ref = _cum_reference(x, 1, False, reverse, NP_TYPES[dst])
    np.testing.assert_array_equal(out, ref)


# tl.reduce / tl.associative_scan with user combine functions ---------------------------------


@tilec.jit
def _mul(a, b):
    return a * b


@tilec.jit
def _max_abs(a, b):
    return tl.maximum(tl.abs(a), tl.abs(b)) + 0.0  # the constant lives in the combiner region


@tilec.jit
def _sum_and_max(s1, m1, s2, m2):
    return s1 + s2, _max(m1, m2)


@tilec.jit
def _max(a, b):
    return tl.where(a > b, a, b)


@tilec.jit
def _affine(a1, b1, a2, b2):
    # Composition of x -> a1 * x + b1 then x -> a2 * x + b2: a linear recurrence.
    return a1 * a2, b1 * a2 + b2


@tilec.jit
def user_reduce_kernel(x_ptr, out_ptr, R: tl.constexpr, C: tl.constexpr):
    rows = tl.arange(0, R)
    x = tl.load(x_ptr + rows[:, None] * C + tl.arange(0, C)[None, :])
    tl.store(out_ptr + rows, tl.reduce(x, 1, _mul))
    tl.store(out_ptr + R + tl.arange(0, C), tl.reduce(x, axis=0, combine_fn=_max_abs))
    s, m = tl.reduce((x, x), None, _sum_and_max)
    tl.store(out_ptr + R + C, s)
    tl.store(out_ptr + R + C + 1, m)
    kept = tl.reduce(x, 1, _max, keep_dims=True)  # [R, 1]
    tl.store(out_ptr + R + C + 2 + rows[:, None], kept)


def test_reduce_with_user_combine_functions(rng):
    r, c = 8, 4
    x = (rng.uniform(0.5, 1.5, (r, c)) * rng.choice([-1, 1], (r, c))).astype(np.float32)
    out = np.zeros(r + c + 2 + r, np.float32)
    run(
        user_reduce_kernel, {"x_ptr": "*fp32", "out_ptr": "*fp32"}, {"R": r, "C": c}, (1,), [x, out]
    )
    np.testing.assert_allclose(out[:r], np.prod(x, axis=1), rtol=1e-5)
    np.testing.assert_array_equal(out[r : r + c], np.abs(x).max(axis=0))
    np.testing.assert_allclose(out[r + c], x.sum(), rtol=1e-5, atol=1e-6 * np.abs(x).sum())
    np.testing.assert_array_equal(out[r + c + 1], x.max())
    np.testing.assert_array_equal(out[r + c + 2 :], x.max(axis=1))


@tilec.jit
def user_scan_kernel(a_ptr, b_ptr, out_ptr, N: tl.constexpr, REVERSE: tl.constexpr):
    offs = tl.arange(0, N)
    a, b = tl.load(a_ptr + offs), tl.load(b_ptr + offs)
    tl.store(out_ptr + offs, tl.associative_scan(a, 0, _max, reverse=REVERSE))
    _, y = tl.associative_scan((a, b), axis=0, combine_fn=_affine, reverse=REVERSE)
    tl.store(out_ptr + N + offs, y)


@pytest.mark.parametrize("reverse", [False, True])
def test_associative_scan_with_user_combine_functions(rng, reverse):
    n = 64
    a = rng.uniform(0.5, 1.0, n).astype(np.float32)
    b = rng.standard_normal(n, dtype=np.float32)
    out = np.zeros(2 * n, np.float32)
    signature = {"a_ptr": "*fp32", "b_ptr": "*fp32", "out_ptr": "*fp32"}
    run(user_scan_kernel, signature, {"N": n, "REVERSE": reverse}, (1,), [a, b, out])
    order = np.arange(n)[::-1] if reverse else np.arange(n)
    running_max = np.maximum.accumulate(a[order])
    y, state = np.zeros(n, np.float64), 0.0
    for k, i in enumerate(order):
        state = (state * a[i] if k else 0.0) + b[i]
        y[k] = state
    np.testing.assert_array_equal(out[:n][order], running_max)
    np.testing.assert_allclose(out[n:][order], y, rtol=1e-4, atol=1e-5)


def test_reduce_combine_must_be_jit_function():
    with pytest.raises(CompilationError, match=r"combine_fn must be a @tilec\.jit function"):
        compile_to_tir(bad_combine_kernel, {"x_ptr": "*fp32"}, {})


def _plain(a, b):
    return a + b


@tilec.jit
def bad_combine_kernel(x_ptr):
    x = tl.load(x_ptr + tl.arange(0, 8))
    tl.store(x_ptr, tl.reduce(x, 0, _plain))


# Atomics -------------------------------------------------------------------------------------


@tilec.jit
def atomic_kernel(
    mem_ptr, idx_ptr, val_ptr, mask_ptr, old_ptr, KIND: tl.constexpr, BLOCK: tl.constexpr
):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    ptrs = mem_ptr + tl.load(idx_ptr + offs)
    val = tl.load(val_ptr + offs)
    mask = tl.load(mask_ptr + offs) != 0
    if KIND == "max":
        old = tl.atomic_max(ptrs, val, mask=mask)
    elif KIND == "min":
        old = tl.atomic_min(ptrs, val, mask, sem="relaxed", scope="cta")
    elif KIND == "xchg":
        old = tl.atomic_xchg(ptrs, val, mask=mask, sem="release")
    elif KIND == "and":
        old = tl.atomic_and(ptrs, val, mask=mask)
    elif KIND == "or":
        old = tl.atomic_or(ptrs, val, mask=mask, scope="sys")
    elif KIND == "xor":
        old = tl.atomic_xor(ptrs, val, mask=mask, sem="acquire")
    else:
        old = tl.atomic_add(ptrs, val, mask=mask)
    tl.store(old_ptr + offs, old, mask=mask)


def _sequential(kind, mem, idx, val, mask):
    """Apply the atomics one at a time in program-major, element order (the interp's order)."""
    mem = mem.copy()
    old = np.zeros_like(val)
    ops = {
        "max": lambda m, v: max(m, v) if not np.isnan(m) else v,
        "min": lambda m, v: min(m, v) if not np.isnan(m) else v,
        "xchg": lambda m, v: v,
        "and": lambda m, v: m & v,
        "or": lambda m, v: m | v,
        "xor": lambda m, v: m ^ v,
        "add": lambda m, v: m + v,
    }
    with np.errstate(over="ignore"):  # integer adds wrap, as in the kernel
        for k in np.flatnonzero(mask):
            old[k] = mem[idx[k]]
            mem[idx[k]] = ops[kind](mem[idx[k]], val[k])
    return mem, old


@pytest.mark.parametrize(
    ("kind", "dtype"),
    [
        ("max", "fp32"),
        ("max", "i32"),
        ("max", "u32"),
        ("min", "fp32"),
        ("min", "i64"),
        ("min", "u32"),
        ("xchg", "fp32"),
        ("xchg", "i32"),
        ("and", "i32"),
        ("or", "u32"),
        ("xor", "i64"),
        ("add", "i32"),
    ],
)
def test_atomics_with_collisions_and_mask(rng, kind, dtype):
    gen = rng
    block, programs, slots = 64, 4, 8
    n = block * programs
    np_type = NP_TYPES[dtype]
    if np.issubdtype(np_type, np.floating):
        val = gen.standard_normal(n).astype(np_type)
        mem = gen.standard_normal(slots).astype(np_type)
    elif np.issubdtype(np_type, np.unsignedinteger):
        val = gen.integers(1, 2**32 - 1, n, dtype=np.uint64).astype(np_type)
        mem = gen.integers(1, 2**32 - 1, slots, dtype=np.uint64).astype(np_type)
    else:
        info = np.iinfo(np_type)
        val = gen.integers(info.min, info.max, n, dtype=np_type, endpoint=True)
        mem = gen.integers(info.min, info.max, slots, dtype=np_type, endpoint=True)
    if kind == "add":
        val //= 4
    val[val == 0] = 1
    idx = gen.integers(0, slots, n).astype(np.int32)  # many collisions per slot
    mask = gen.integers(0, 4, n).astype(np.int32)  # about a quarter masked off
    old = np.zeros_like(val)
    ref_mem, ref_old = _sequential(kind, mem, idx, val, mask != 0)
    signature = {"mem_ptr": f"*{dtype}", "idx_ptr": "*i32", "val_ptr": f"*{dtype}"}
    signature |= {"mask_ptr": "*i32", "old_ptr": f"*{dtype}"}
    constexprs = {"KIND": kind, "BLOCK": block}
    module = run(atomic_kernel, signature, constexprs, (programs,), [mem, idx, val, mask, old])
    text = str(module)
    unsigned_kind = "u" + kind if dtype == "u32" and kind in ("max", "min") else kind
    assert f'kind = "{unsigned_kind}"' in text
    np.testing.assert_array_equal(mem, ref_mem)
    # The interp applies atomics in a defined order, so even the old values are reproducible.
    np.testing.assert_array_equal(old[mask != 0], ref_old[mask != 0])


def test_atomic_sem_and_scope_reach_the_ir():
    signature = {"mem_ptr": "*fp32", "idx_ptr": "*i32", "val_ptr": "*fp32"}
    signature |= {"mask_ptr": "*i32", "old_ptr": "*fp32"}
    text = str(compile_to_tir(atomic_kernel, signature, {"KIND": "min", "BLOCK": 16}))
    assert 'sem = "relaxed"' in text and 'scope = "cta"' in text
    text = str(compile_to_tir(atomic_kernel, signature, {"KIND": "max", "BLOCK": 16}))
    assert 'sem = "acq_rel"' in text and 'scope = "gpu"' in text


@tilec.jit
def bad_sem_kernel(x_ptr):
    tl.atomic_max(x_ptr, 1.0, sem="sequential")


@tilec.jit
def float_and_kernel(x_ptr):
    tl.atomic_and(x_ptr, 1.0)


def test_atomic_errors():
    with pytest.raises(CompilationError, match="unknown atomic sem 'sequential'"):
        compile_to_tir(bad_sem_kernel, {"x_ptr": "*fp32"}, {})
    with pytest.raises(CompilationError, match=r"tl\.atomic_and needs an integer pointer"):
        compile_to_tir(float_and_kernel, {"x_ptr": "*fp32"}, {})


@tilec.jit
def cas_lock_kernel(lock_ptr, count_ptr, old_ptr, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    # Every element of every program tries to take lock slot (offs % 4) from 0 to pid + 1.
    old = tl.atomic_cas(lock_ptr + offs % 4, 0, pid + 1, sem="acquire", scope="gpu")
    tl.store(old_ptr + pid * BLOCK + offs, old)
    tl.atomic_add(count_ptr + offs % 4, tl.where(old == 0, 1, 0))


def test_atomic_cas_in_program_order():
    block, programs = 16, 5
    lock = np.zeros(4, np.int32)
    count = np.zeros(4, np.int32)
    old = np.full(programs * block, -1, np.int32)
    signature = {"lock_ptr": "*i32", "count_ptr": "*i32", "old_ptr": "*i32"}
    run(cas_lock_kernel, signature, {"BLOCK": block}, (programs,), [lock, count, old])
    # Program 0's first element per slot wins; everyone after sees 1.
    np.testing.assert_array_equal(lock, np.ones(4, np.int32))
    np.testing.assert_array_equal(count, np.ones(4, np.int32))
    expected = np.ones(programs * block, np.int32)
    expected[:4] = 0
    np.testing.assert_array_equal(old, expected)


@tilec.jit
def cas_tensor_kernel(x_ptr, cmp_ptr, new_ptr, old_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    cmp = tl.load(cmp_ptr + offs)
    old = tl.atomic_cas(x_ptr + offs, cmp, tl.load(new_ptr + offs))
    tl.store(old_ptr + offs, old)


def test_atomic_cas_elementwise_float(rng):
    n = 64
    gen = rng
    x = gen.standard_normal(n).astype(np.float32)
    cmp = np.where(gen.integers(0, 2, n) == 1, x, x + 1).astype(np.float32)
    new = gen.standard_normal(n).astype(np.float32)
    before, old = x.copy(), np.zeros(n, np.float32)
    signature = {"x_ptr": "*fp32", "cmp_ptr": "*fp32", "new_ptr": "*fp32", "old_ptr": "*fp32"}
    run(cas_tensor_kernel, signature, {"BLOCK": n}, (1,), [x, cmp, new, old])
    np.testing.assert_array_equal(old, before)
    np.testing.assert_array_equal(x, np.where(before == cmp, new, before))


# tl.range options, while ---------------------------------------------------------------------


@tilec.jit
def range_options_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    acc = tl.zeros([BLOCK], dtype=tl.float32)
    for i in tl.range(0, n, 1, num_stages=1, loop_unroll_factor=1, flatten=False):
        acc += tl.load(x_ptr + i * BLOCK + offs)
    for j in tl.range(n, warp_specialize=False):
        acc += j
    tl.store(out_ptr + offs, acc)


def test_range_accepts_the_hints_it_honours(rng):
    n, block = 5, 32
    x = rng.standard_normal((n, block), dtype=np.float32)
    out = np.zeros(block, np.float32)
    signature = {"x_ptr": "*fp32", "out_ptr": "*fp32", "n": "i32"}
    run(range_options_kernel, signature, {"BLOCK": block}, (1,), [x, out, n])
    expected = np.zeros(block, np.float32)
    for row in x:
        expected += row
    np.testing.assert_allclose(out, expected + sum(range(n)), rtol=1e-6)


@tilec.jit
def while_kernel(x_ptr, out_ptr, limit, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + pid * BLOCK + offs)
    total = 0.0
    steps = 0
    while total < limit:
        total += tl.sum(x, axis=0)
        steps += 1
    tl.store(out_ptr + pid * 2, total)
    tl.store(out_ptr + pid * 2 + 1, steps.to(tl.float32))


def test_while_with_divergent_trip_counts(rng):
    programs, block = 6, 16
    x = rng.uniform(0.1, 1.0, (programs, block)).astype(np.float32)
    out = np.zeros(programs * 2, np.float32)
    limit = 30.0
    signature = {"x_ptr": "*fp32", "out_ptr": "*fp32", "limit": "fp32"}
    run(while_kernel, signature, {"BLOCK": block}, (programs,), [x, out, limit])
    for p in range(programs):
        total, steps, s = np.float32(0), 0, x[p].sum(dtype=np.float32)
        while total < limit:
            total, steps = np.float32(total + s), steps + 1
        np.testing.assert_allclose(out[2 * p], total, rtol=1e-5)
        assert out[2 * p + 1] == steps
