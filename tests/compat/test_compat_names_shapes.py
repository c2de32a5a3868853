"""Triton's shape and permutation functions (issue 11), on interp against NumPy: join, split,
interleave, cat, permute, broadcast, ravel, view, flip, gather, sort, topk, histogram."""

import numpy as np
import pytest
from compat_helpers import compile_error
from compat_names_helpers import run

import tilec
import tilec.language as tl
from tilec.ir.type_names import SIGNATURE_BY_TORCH

M, N = 4, 8


@tilec.jit
def shape_kernel(x_ptr, y_ptr, out_ptr, OP: tl.constexpr, M: tl.constexpr, N: tl.constexpr):
    rows = tl.arange(0, M)[:, None]
    cols = tl.arange(0, N)[None, :]
    x = tl.load(x_ptr + rows * N + cols)
    y = tl.load(y_ptr + rows * N + cols)
    if OP == "join":  # [M, N, 2]
        z = tl.join(x, y)
        tl.store(out_ptr + (rows * N + cols)[:, :, None] * 2 + tl.arange(0, 2)[None, None, :], z)
    elif OP == "split":  # the halves of join, stored side by side
        a, b = tl.split(tl.join(y, x))
        tl.store(out_ptr + rows * N + cols, a)
        tl.store(out_ptr + M * N + rows * N + cols, b)
    elif OP == "interleave":  # [M, 2N]
        tl.store(out_ptr + rows * 2 * N + tl.arange(0, 2 * N)[None, :], tl.interleave(x, y))
    elif OP == "cat":  # [2M, N]
        tl.store(out_ptr + tl.arange(0, 2 * M)[:, None] * N + cols, tl.cat(x, y, can_reorder=True))
    elif OP == "permute":  # [N, M]
        t = tl.permute(x, 1, 0)
        tl.store(out_ptr + tl.arange(0, N)[:, None] * M + tl.arange(0, M)[None, :], t)
    elif OP == "permute_method":
        t = x.permute((1, 0))
        tl.store(out_ptr + tl.arange(0, N)[:, None] * M + tl.arange(0, M)[None, :], t)
    elif OP == "broadcast":  # column 0 of x against row 0 of y
        a, b = tl.broadcast(tl.sum(x, axis=1)[:, None], tl.sum(y, axis=0)[None, :])
        tl.store(out_ptr + rows * N + cols, a - b)
    elif OP == "ravel":
        tl.store(out_ptr + tl.arange(0, M * N), tl.ravel(x))
    elif OP == "view":
        tl.store(out_ptr + tl.arange(0, M * N), x.view(M * N))
    elif OP == "flip_last":
        tl.store(out_ptr + rows * N + cols, tl.flip(x))
    elif OP == "flip_rows":
        tl.store(out_ptr + rows * N + cols, x.flip(0))
    elif OP == "zeros_like":
        tl.store(out_ptr + rows * N + cols, tl.zeros_like(x) + 1)


def _inputs(rng, dtype):
    if np.issubdtype(dtype, np.floating):
        x = rng.standard_normal((M, N)).astype(dtype)
        x[0, :3] = [np.nan, -0.0, np.inf]  # moved exactly, bit for bit
        return x, rng.standard_normal((M, N)).astype(dtype)
    info = np.iinfo(dtype)
    return (
        rng.integers(info.min, info.max, (M, N), dtype=dtype, endpoint=True),
        rng.integers(info.min, info.max, (M, N), dtype=dtype, endpoint=True),
    )


EXPECTED = {
    "join": lambda x, y: np.stack([x, y], axis=-1),
    "split": lambda x, y: np.concatenate([y, x]),
    "interleave": lambda x, y: np.stack([x, y], axis=-1).reshape(M, 2 * N),
    "cat": lambda x, y: np.concatenate([x, y]),
    "permute": lambda x, y: x.T,
    "permute_method": lambda x, y: x.T,
    "ravel": lambda x, y: x.ravel(),
    "view": lambda x, y: x.ravel(),
    "flip_last": lambda x, y: x[:, ::-1],
    "flip_rows": lambda x, y: x[::-1, :],
    "zeros_like": lambda x, y: np.ones_like(x),
}

SIGNATURES = {np.float32: "*fp32", np.float16: "*fp16", np.int8: "*i8", np.uint64: "*u64"}


def _sig(dtype) -> str:
    return "*" + SIGNATURE_BY_TORCH[np.dtype(dtype).name]


@pytest.mark.parametrize("dtype", list(SIGNATURES))
@pytest.mark.parametrize("op", list(EXPECTED))
def test_shape_functions_move_elements_exactly(op, dtype, rng):
    x, y = _inputs(rng, dtype)
    want = EXPECTED[op](x, y)
    out = np.zeros(want.size, dtype)
    sig = SIGNATURES[dtype]
    signature = {"x_ptr": sig, "y_ptr": sig, "out_ptr": sig}
    run(shape_kernel, signature, [x, y, out], OP=op, M=M, N=N)
    got = out.reshape(want.shape)
    width = np.dtype(dtype).itemsize
    as_bits = np.dtype(f"u{width}")
    np.testing.assert_array_equal(got.view(as_bits), want.view(as_bits))


def test_broadcast_returns_both_operands_broadcast(rng):
    x, y = _inputs(rng, np.int32)
    out = np.zeros(M * N, np.int32)
    signature = {"x_ptr": "*i32", "y_ptr": "*i32", "out_ptr": "*i32"}
    run(shape_kernel, signature, [x, y, out], OP="broadcast", M=M, N=N)
    want = x.sum(1, dtype=np.int32)[:, None] - y.sum(0, dtype=np.int32)[None, :]
    np.testing.assert_array_equal(out.reshape(M, N), want)


@tilec.jit
def gather_kernel(x_ptr, idx_ptr, out_ptr, AXIS: tl.constexpr, M: tl.constexpr, N: tl.constexpr):
    rows = tl.arange(0, M)[:, None]
    cols = tl.arange(0, N)[None, :]
    x = tl.load(x_ptr + rows * N + cols)
    idx = tl.load(idx_ptr + rows * N + cols)
    tl.store(out_ptr + rows * N + cols, tl.gather(x, idx, AXIS))


@pytest.mark.parametrize("axis", [0, 1, -1])
def test_gather_takes_along_an_axis(axis, rng):
    x = rng.standard_normal((M, N)).astype(np.float32)
    size = x.shape[axis]
    idx = rng.integers(0, size, (M, N)).astype(np.int32)
    out = np.zeros((M, N), np.float32)
    sig = {"x_ptr": "*fp32", "idx_ptr": "*i32", "out_ptr": "*fp32"}
    run(gather_kernel, sig, [x, idx, out], AXIS=axis, M=M, N=N)
    np.testing.assert_array_equal(out, np.take_along_axis(x, idx, axis=axis))


@tilec.jit
def sort_kernel(
    x_ptr, out_ptr, OP: tl.constexpr, DESC: tl.constexpr, K: tl.constexpr, M: tl.constexpr,
    N: tl.constexpr,
):  # fmt: skip
    rows = tl.arange(0, M)[:, None]
    x = tl.load(x_ptr + rows * N + tl.arange(0, N)[None, :])
    if OP == "sort":
        tl.store(out_ptr + rows * N + tl.arange(0, N)[None, :], tl.sort(x, descending=DESC))
    elif OP == "sort_method":
        tl.store(out_ptr + rows * N + tl.arange(0, N)[None, :], x.sort(1, DESC))
    else:
        tl.store(out_ptr + rows * K + tl.arange(0, K)[None, :], tl.topk(x, K))


@pytest.mark.parametrize("dtype", [np.float32, np.int16, np.uint8])
@pytest.mark.parametrize("descending", [False, True])
def test_sort_orders_each_row(dtype, descending, rng):
    if dtype is np.float32:
        x = rng.standard_normal((M, 16)).astype(dtype)
        x[0, :4] = [np.inf, -np.inf, 0.0, 2.0]
        x[1, :4] = x[1, 4:8]  # duplicates
    else:
        x = rng.integers(np.iinfo(dtype).min, np.iinfo(dtype).max, (M, 16), dtype=dtype)
    out = np.zeros_like(x)
    sig = {"x_ptr": _sig(dtype), "out_ptr": _sig(dtype)}
    for op in ("sort", "sort_method"):
        run(sort_kernel, sig, [x, out], OP=op, DESC=descending, K=1, M=M, N=16)
        want = np.sort(x, axis=1)
        np.testing.assert_array_equal(out, want[:, ::-1] if descending else want)


@pytest.mark.parametrize("k", [1, 4, 16])
def test_topk_gives_the_largest_first(k, rng):
    x = rng.standard_normal((M, 16)).astype(np.float32)
    out = np.zeros((M, k), np.float32)
    sig = {"x_ptr": "*fp32", "out_ptr": "*fp32"}
    run(sort_kernel, sig, [x, out], OP="topk", DESC=True, K=k, M=M, N=16)
    np.testing.assert_array_equal(out, -np.sort(-x, axis=1)[:, :k])


@tilec.jit
def histogram_kernel(x_ptr, out_ptr, n, N: tl.constexpr, BINS: tl.constexpr):
    offs = tl.arange(0, N)
    x = tl.load(x_ptr + offs)
    tl.store(out_ptr + tl.arange(0, BINS), tl.histogram(x, BINS, mask=offs < n))


def test_histogram_counts_values_in_range_under_the_mask(rng):
    x = rng.integers(-3, 20, 64).astype(np.int32)  # values outside [0, 16) are not counted
    out = np.zeros(16, np.int32)
    run(histogram_kernel, {"x_ptr": "*i32", "out_ptr": "*i32", "n": "i32"}, [x, out, 50],
               N=64, BINS=16)  # fmt: skip
    kept = x[:50]
    want = np.array([(kept == b).sum() for b in range(16)], np.int32)
    np.testing.assert_array_equal(out, want)


@tilec.jit
def bad_shape_kernel(x_ptr, OP: tl.constexpr):
    x = tl.load(x_ptr + tl.arange(0, 8))
    if OP == "split":
        tl.split(x)
    elif OP == "permute":
        tl.permute(x[:, None], 0, 0)
    elif OP == "sort_dim":
        tl.sort(x[:, None], dim=0)
    elif OP == "topk_k":
        tl.topk(x, 3)
    elif OP == "gather_shape":
        tl.gather(x[:, None], tl.arange(0, 8), 0)
    elif OP == "histogram_float":
        tl.histogram(x, 8)
    elif OP == "descending":
        tl.sort(x, descending=2)


@pytest.mark.parametrize(
    ("op", "message"),
    [
        ("split", "tl.split needs a last dimension of size 2"),
        ("permute", "not a permutation"),
        ("sort_dim", "sorts along the last dimension only"),
        ("topk_k", "tl.topk's k must be a power of two"),
        ("gather_shape", "must have the same rank|must equal the source shape"),
        ("histogram_float", "tl.histogram needs a 1-D integer tensor"),
        ("descending", "descending must be True or False"),
    ],
)
def test_shape_functions_reject_bad_arguments_with_located_errors(op, message):
    error = compile_error(bad_shape_kernel, {"x_ptr": "*fp32"}, OP=op)
    assert any(part in error.message for part in message.split("|")), error.message


@tilec.jit
def network_kernel(x_ptr, out_ptr, OP: tl.constexpr, M: tl.constexpr, N: tl.constexpr):
    offs = tl.arange(0, M)[:, None] * N + tl.arange(0, N)[None, :]
    x = tl.load(x_ptr + offs)
    if OP == "sort":
        tl.store(out_ptr + offs, tl.sort(x))
    elif OP == "merge":
        tl.store(out_ptr + offs, tl.bitonic_merge(x, descending=True))


def test_sort_scales_to_wide_rows(rng):
    x = rng.standard_normal((8, 256)).astype(np.float32)
    out = np.zeros_like(x)
    run(network_kernel, {"x_ptr": "*fp32", "out_ptr": "*fp32"}, [x, out], OP="sort", M=8, N=256)
    np.testing.assert_array_equal(out, np.sort(x, axis=1))


def test_bitonic_merge_sorts_bitonic_rows(rng):
    up = np.sort(rng.integers(-100, 100, (4, 16)), axis=1)
    down = -np.sort(-rng.integers(-100, 100, (4, 16)), axis=1)
    x = np.concatenate([up, down], axis=1).astype(np.int32)  # rises, then falls: bitonic
    out = np.zeros_like(x)
    run(network_kernel, {"x_ptr": "*i32", "out_ptr": "*i32"}, [x, out], OP="merge", M=4, N=32)
    np.testing.assert_array_equal(out, -np.sort(-x, axis=1))


def _triton_network_sort(row):
    """Triton's sort_impl network on one row, in NumPy: the same compare-and-swap steps."""
    row = row.copy()
    n = row.size
    log_n = n.bit_length() - 1
    index = np.arange(n)
    for stage in range(1, log_n + 1):
        flip = (index >> stage) & 1 if stage < log_n else 0
        for bit in range(stage - 1, -1, -1):
            partner = row[index ^ (1 << bit)]
            right = (index >> bit) & 1
            with np.errstate(invalid="ignore"):
                swap = (row > partner).astype(int) != (flip ^ right)
            row = np.where(swap, partner, row)
    return row


def test_sort_treats_nan_and_signed_zero_as_triton(rng):
    x = rng.standard_normal((2, 16)).astype(np.float32)
    x[0, [1, 5, 9]] = [np.nan, -0.0, 0.0]
    x[1, [0, 3]] = [-0.0, np.nan]
    out = np.zeros_like(x)
    run(network_kernel, {"x_ptr": "*fp32", "out_ptr": "*fp32"}, [x, out], OP="sort", M=2, N=16)
    want = np.stack([_triton_network_sort(r) for r in x])
    np.testing.assert_array_equal(out.view(np.uint32), want.view(np.uint32))
