"""tl.load / tl.store with masks and `other`, tl.cdiv, shape ops, tl.zeros / tl.full, tl.dot,
atomics, the grid (program_id, num_programs), loops (range, tl.range, tl.static_range) and the
hint functions, for the dtypes each accepts, against NumPy."""

import numpy as np
import pytest
from lang_helpers import (
    FLOATS,
    GPU,
    INTS,
    UINTS,
    as_float64,
    bf16_values,
    random_values,
    run,
    storage,
)
from language_kernels import (
    atomic_kernel,
    dot_kernel,
    grid_kernel,
    masked_copy_kernel,
    shape_kernel,
)

from tilec_interp.dtypes import tf32_truncate

M, N = 8, 16
DTYPES = INTS + UINTS + FLOATS


@pytest.mark.parametrize("dtype", DTYPES)
def test_masked_load_other_and_store(rng, dtype):
    n, block = 1000, 256
    x = random_values(rng, dtype, n)
    sentinel = random_values(rng, dtype, 1)[0]
    out = np.full(1024, sentinel, storage(dtype))
    run(masked_copy_kernel, [("*" + dtype, x), ("*" + dtype, out), ("int32", n)], grid=(4,),
        OTHER=3, BLOCK=block)  # fmt: skip
    np.testing.assert_array_equal(out[:n], x)
    three = 0x4040 if dtype == "bfloat16" else 3  # bf16 3.0
    np.testing.assert_array_equal(out[n : n + 8], np.full(8, three, storage(dtype)))
    np.testing.assert_array_equal(out[n + 8 :], np.full(1024 - n - 8, sentinel, storage(dtype)))


SHAPE_OPS = {
    "trans": lambda x: x.T.reshape(-1),
    "reshape": lambda x: x.reshape(-1),
    "broadcast_to": lambda x: np.broadcast_to(x[0], x.shape).reshape(-1),
    "zeros": lambda x: x.reshape(-1),
}


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("op", [*SHAPE_OPS, "full"])
def test_shape_ops(rng, op, dtype):
    x = random_values(rng, dtype, M * N).reshape(M, N)
    out = np.zeros(M * N, storage(dtype))
    run(shape_kernel, [("*" + dtype, x), ("*" + dtype, out)], OP=op, M=M, N=N)
    if op == "full":
        expected = np.full(M * N, 0x4040 if dtype == "bfloat16" else 3, storage(dtype))
    else:
        expected = SHAPE_OPS[op](x)
    np.testing.assert_array_equal(out, expected)


@pytest.mark.parametrize("dtype", ["int32", "float32"])
def test_expand_dims(rng, dtype):
    x = random_values(rng, dtype, M * N).reshape(M, N)
    out = np.zeros(M * N, dtype)
    run(shape_kernel, [("*" + dtype, x), ("*" + dtype, out)], OP="expand_dims", M=M, N=N)
    np.testing.assert_array_equal(out, np.broadcast_to(x[:, :1], (M, N)).reshape(-1))


DOTS = [  # (input dtype, accumulator dtype)
    ("float16", "float32"),
    ("bfloat16", "float32"),
    ("float32", "float32"),
    ("float64", "float64"),
    ("int8", "int32"),
]


@pytest.mark.parametrize("with_acc", [False, True])
@pytest.mark.parametrize(("dtype", "acc_dtype"), DOTS)
def test_dot(rng, dtype, acc_dtype, with_acc):
    """Without `acc`, the result's dtype is Triton's: f64 for f64 inputs (issue 22)."""
    m, n, k = 16, 16, 32
    a = random_values(rng, dtype, m * k, low=-4.0 if dtype in FLOATS else None,
                      high=4.0 if dtype in FLOATS else None).reshape(m, k)  # fmt: skip
    b = random_values(rng, dtype, k * n).reshape(k, n)
    c = random_values(rng, acc_dtype, m * n).reshape(m, n)
    c_in = c.copy()
    run(dot_kernel, [("*" + dtype, a), ("*" + dtype, b), ("*" + acc_dtype, c)],
        M=m, N=n, K=k, WITH_ACC=with_acc)  # fmt: skip
    if dtype == "int8":
        expected = a.astype(np.int64) @ b.astype(np.int64) + (c_in if with_acc else 0)
        np.testing.assert_array_equal(c, expected.astype(np.int32))
        return
    a64, b64 = as_float64(a, dtype), as_float64(b, dtype)
    if dtype == "float32":  # the default input_precision, "tf32", cuts the inputs
        a64, b64 = tf32_truncate(a).astype(np.float64), tf32_truncate(b).astype(np.float64)
    expected = a64 @ b64 + (c_in.astype(np.float64) if with_acc else 0)
    eps = 2.0**-52 if acc_dtype == "float64" else 2.0**-23
    bound = (k + 2) * eps * (np.abs(a64) @ np.abs(b64) + np.abs(c_in))
    assert (np.abs(c - expected) <= bound).all()


def sequential_atomics(op: str, target: np.ndarray, values: np.ndarray, compare, slots: int):
    """The interpreter's defined order: program-major, then lane order."""
    target = target.copy()
    olds = np.empty_like(values)
    for p in range(values.shape[0]):
        for lane in range(values.shape[1]):
            slot = lane % slots
            old = target[slot]
            olds[p, lane] = old
            v = values[p, lane]
            if op == "add":
                target[slot] = old + v
            elif op in ("max", "min"):
                target[slot] = max(old, v) if op == "max" else min(old, v)
            elif op == "xchg" or old == compare[slot]:
                target[slot] = v
    return target, olds


ATOMICS = [(op, t) for op in ("add", "max", "min") for t in
           ("int32", "uint32", "int64", "uint64", "float32", "float64")]  # fmt: skip
ATOMICS += [("add", "float16"), ("xchg", "int32"), ("xchg", "int64"), ("xchg", "float32")]
ATOMICS += [("cas", "int32"), ("cas", "int64")]


@pytest.mark.parametrize(("op", "dtype"), ATOMICS)
def test_atomics_apply_in_order_and_return_old_values(rng, op, dtype):
    programs, lanes, slots = 3, 32, 4
    small = op == "add" and dtype in FLOATS
    values = random_values(rng, dtype, programs * lanes, low=-4.0 if small else None,
                           high=4.0 if small else None)  # fmt: skip
    if op == "add" and dtype in INTS + UINTS:
        values //= 64  # fewer wraps, still some for the narrow types
    target = random_values(rng, dtype, slots)
    start = target.copy()
    olds = np.zeros(programs * lanes, dtype)
    run(atomic_kernel, [("*" + dtype, target), ("*" + dtype, values), ("*" + dtype, olds)],
        grid=(programs,), OP=op, N=lanes, SLOTS=slots, exact_order=not GPU)  # fmt: skip
    with np.errstate(over="ignore"):
        want_target, want_olds = sequential_atomics(
            op, start, values.reshape(programs, lanes), start, slots
        )
    if GPU:  # a GPU applies atomics in some order: check what holds for every order
        check_any_order(op, dtype, start, values.reshape(programs, lanes), target, olds, slots)
        return
    np.testing.assert_array_equal(target, want_target)
    np.testing.assert_array_equal(olds.reshape(programs, lanes), want_olds)


def check_any_order(op, dtype, start, values, target, olds, slots):
    """Atomics applied in an unknown order: the final values of order-independent ops, and for
    every slot, that the old values and the final value chain through all the updates."""
    olds = olds.reshape(values.shape)
    for slot in range(slots):
        updates = values[:, slot::slots].reshape(-1)
        seen = olds[:, slot::slots].reshape(-1)
        if op == "xchg":  # each value replaced exactly one earlier value
            chain = np.sort(np.r_[seen, target[slot]])
            np.testing.assert_array_equal(chain, np.sort(np.r_[start[slot], updates]))
        elif op in ("max", "min"):
            best = (np.max if op == "max" else np.min)(np.r_[start[slot], updates])
            assert target[slot] == best, (op, dtype, slot)
        elif op == "add" and dtype in INTS + UINTS:
            with np.errstate(over="ignore"):
                total = start[slot] + updates.sum(dtype=dtype)
            assert target[slot] == total, (slot, target[slot], total)
            assert start[slot] in seen  # the first update saw the initial value
        elif op == "add":
            exact = as_float64(start[slot : slot + 1], dtype)[0] + as_float64(updates, dtype).sum()
            tolerance = 1e-2 if dtype == "float16" else 1e-5
            assert abs(float(target[slot]) - exact) <= tolerance * (1 + abs(exact))
        else:  # cas with the value it just read: the slot ends with one of the candidates
            assert target[slot] in np.r_[start[slot], updates]


def test_grid_ids_loops_and_hints():
    grid, block, n = (3, 2), 16, 5
    out = np.zeros(6 * 4 * block, np.int32)
    run(grid_kernel, [("*int32", out), ("int32", n)], grid=grid, BLOCK=block)
    rows = out.reshape(6, 4, block)
    program = np.arange(6)
    np.testing.assert_array_equal(rows[:, 0, 0], program % 3)
    np.testing.assert_array_equal(rows[:, 1, 0], program // 3)
    np.testing.assert_array_equal(rows[:, 2, :], 6)
    # range(0, n): 0+1+2+3+4, static_range(3): 0+1+2, tl.range(0, n, 2): three iterations
    np.testing.assert_array_equal(rows[:, 3, :], 10 + 3 + 3)


def test_bf16_values_helper_is_not_trivial():
    """The bf16 helpers the tests rely on: 1.0 is 0x3F80."""
    np.testing.assert_array_equal(bf16_values(np.array([0x3F80], np.uint16)), [1.0])
