"""Block pointers (issue 11): `tl.make_block_ptr`, `tl.advance` (and `p.advance`), `tl.load` /
`tl.store` of a block pointer with `boundary_check` and `padding_option`, carried by `for`,
`while` and `if` as in Triton's tutorials; checked on interp against NumPy (on a GPU backend
through `TILEC_TEST_BACKEND`, against interp), compiled for nvidia sm_90a (still pipelined into
wgmma), and every mistake a located error."""

import functools
import re

import numpy as np
import pytest
from compat_helpers import compile_error
from compat_names_helpers import run

import tilec
import tilec.language as tl
from tilec import settings
from tilec.runtime import check


@tilec.jit
def matmul_kernel(a_ptr, b_ptr, c_ptr, M, N, K, stride_am, stride_ak, stride_bk, stride_bn,
                  stride_cm, stride_cn, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
                  BLOCK_K: tl.constexpr, A_ORDER: tl.constexpr):  # fmt: skip
    """Triton's block-pointer matmul: the pointers are made before the K loop, loaded with
    boundary checks, advanced in it and carried by it."""
    pid_m, pid_n = tl.program_id(0), tl.program_id(1)
    a_bp = tl.make_block_ptr(base=a_ptr, shape=(M, K), strides=(stride_am, stride_ak),
                             offsets=(pid_m * BLOCK_M, 0), block_shape=(BLOCK_M, BLOCK_K),
                             order=A_ORDER)  # fmt: skip
    b_bp = tl.make_block_ptr(base=b_ptr, shape=(K, N), strides=(stride_bk, stride_bn),
                             offsets=(0, pid_n * BLOCK_N), block_shape=(BLOCK_K, BLOCK_N),
                             order=(1, 0))  # fmt: skip
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for _ in range(0, tl.cdiv(K, BLOCK_K)):
        a = tl.load(a_bp, boundary_check=(0, 1), padding_option="zero")
        b = tl.load(b_bp, boundary_check=(0, 1), padding_option="zero")
        acc = tl.dot(a, b, acc)
        a_bp = tl.advance(a_bp, (0, BLOCK_K))
        b_bp = b_bp.advance([BLOCK_K, 0])
    c_bp = tl.make_block_ptr(base=c_ptr, shape=(M, N), strides=(stride_cm, stride_cn),
                             offsets=(pid_m * BLOCK_M, pid_n * BLOCK_N),
                             block_shape=(BLOCK_M, BLOCK_N), order=(1, 0))  # fmt: skip
    tl.store(c_bp, acc, boundary_check=(0, 1))


SIZES = ["M", "N", "K", "stride_am", "stride_ak", "stride_bk", "stride_bn", "stride_cm"]
MATMUL_SIGNATURE = {"a_ptr": "*fp16", "b_ptr": "*fp16", "c_ptr": "*fp32"}
MATMUL_SIGNATURE |= dict.fromkeys([*SIZES, "stride_cn"], "i32")


def _matmul_case(rng, m, n, k, column_major_a):
    a = rng.standard_normal((m, k)).astype(np.float16)
    b = rng.standard_normal((k, n)).astype(np.float16)
    c = np.full((m + 1, n), -7.0, np.float32)  # a row past the shape, never written
    a_memory = np.ascontiguousarray(a.T) if column_major_a else a
    strides_a = (1, m) if column_major_a else (k, 1)
    args = [a_memory.reshape(-1), b, c, m, n, k, *strides_a, n, 1, n, 1]
    expected = a.astype(np.float64) @ b.astype(np.float64)
    return args, c, expected


@pytest.mark.parametrize("column_major_a", [False, True], ids=["row-major", "column-major"])
@pytest.mark.parametrize(("m", "n", "k"), [(45, 37, 70), (32, 64, 48), (7, 20, 9)])
def test_tutorial_matmul_with_block_pointers(rng, m, n, k, column_major_a):
    args, c, expected = _matmul_case(rng, m, n, k, column_major_a)
    order = (0, 1) if column_major_a else (1, 0)
    run(matmul_kernel, MATMUL_SIGNATURE, args, grid=(tilec.cdiv(m, 16), tilec.cdiv(n, 32)),
        BLOCK_M=16, BLOCK_N=32, BLOCK_K=16, A_ORDER=order)  # fmt: skip
    np.testing.assert_allclose(c[:m], expected, rtol=1e-4, atol=1e-4)
    assert (c[m] == -7.0).all()


@tilec.jit
def chunk_sums(x_ptr, out_ptr, n, start, BLOCK: tl.constexpr, PAD: tl.constexpr):
    """out[i] = the sum of x's blocks from `start` on, element i of each (1-D block pointers,
    the first block partly before x's start when `start` is negative)."""
    x_bp = tl.make_block_ptr(x_ptr, (n,), (1,), (start,), (BLOCK,), (0,))
    acc = tl.zeros((BLOCK,), tl.float32)
    for _ in range(start, n, BLOCK):
        acc += tl.load(x_bp, boundary_check=(0,), padding_option=PAD)
        x_bp = tl.advance(x_bp, (BLOCK,))
    out_bp = tl.make_block_ptr(out_ptr, shape=[BLOCK], strides=[1], offsets=[0],
                               block_shape=[BLOCK], order=[0])  # fmt: skip
    tl.store(out_bp, acc)


def _chunks(x, start, block, fill):
    n = len(x)
    padded = np.full(n - start + 2 * block, fill, np.float64)
    padded[-start if start < 0 else 0 :][: n - max(start, 0)] = x[max(start, 0) :]
    count = -(-(n - start) // block)
    return padded[: count * block].reshape(count, block).sum(axis=0)


@pytest.mark.parametrize(("n", "start"), [(100, 0), (37, -5), (64, 3)])
def test_one_dimensional_block_pointers(rng, n, start):
    x = rng.standard_normal(n).astype(np.float32)
    out = np.zeros(16, np.float32)
    run(chunk_sums, {"x_ptr": "*fp32", "out_ptr": "*fp32", "n": "i32", "start": "i32"},
        [x, out, n, start], BLOCK=16, PAD="zero")  # fmt: skip
    np.testing.assert_allclose(out, _chunks(x, start, 16, 0.0), rtol=1e-5, atol=1e-5)


def test_padding_nan_fills_what_lies_outside(rng):
    x = rng.standard_normal(37).astype(np.float32)
    out = np.zeros(16, np.float32)
    run(chunk_sums, {"x_ptr": "*fp32", "out_ptr": "*fp32", "n": "i32", "start": "i32"},
        [x, out, 37, -5], BLOCK=16, PAD="nan")  # fmt: skip
    expected = _chunks(x, -5, 16, np.nan)
    np.testing.assert_allclose(out, expected, rtol=1e-5, equal_nan=True)
    # x[-5:0] lies before x (elements 0..4 of the first block), x[37:43] after it (10..15)
    assert np.isnan(out[:5]).all() and np.isnan(out[10:]).all() and not np.isnan(out[5:10]).any()


@tilec.jit
def block_copy(x_ptr, y_ptr, M, N, R0, C0, BM: tl.constexpr, BN: tl.constexpr,
               LOAD_CHECK: tl.constexpr, STORE_CHECK: tl.constexpr):  # fmt: skip
    """y's block at (R0, C0) = 2 * x's block there, through block pointers (y as x, M x N)."""
    x_bp = tl.make_block_ptr(x_ptr, (M, N), (N, 1), (R0, C0), (BM, BN), (1, 0))
    y_bp = tl.make_block_ptr(y_ptr, (M, N), (N, 1), (R0, C0), (BM, BN), (1, 0))
    block = tl.load(x_bp, boundary_check=LOAD_CHECK, padding_option="zero")
    tl.store(y_bp, block * 2, boundary_check=STORE_CHECK)


COPY_SIGNATURE = {"x_ptr": "*fp32", "y_ptr": "*fp32", "M": "i32", "N": "i32", "R0": "i32",
                  "C0": "i32"}  # fmt: skip


@pytest.mark.parametrize(("r0", "c0"), [(-3, 4), (10, -6), (12, 20)])
def test_store_with_boundary_check_writes_only_inside(rng, r0, c0):
    m, n = 20, 24
    x = rng.standard_normal((m, n)).astype(np.float32)
    y = np.full((m + 8, n), -7.0, np.float32)  # rows past the shape: no store lands there
    run(block_copy, COPY_SIGNATURE, [x, y, m, n, r0, c0], BM=16, BN=8, LOAD_CHECK=(0, 1),
        STORE_CHECK=(1, 0))  # fmt: skip
    expected = np.full_like(y, -7.0)
    rows = slice(max(r0, 0), min(r0 + 16, m))
    cols = slice(max(c0, 0), min(c0 + 8, n))
    expected[rows, cols] = 2 * x[rows, cols]
    np.testing.assert_array_equal(y, expected)


def test_boundary_check_of_one_dimension(rng):
    """Rows checked, columns not: the block is inside along the columns, and the checked rows
    past the shape are read as 0 and not written."""
    m, n = 10, 32
    x = rng.standard_normal((m + 8, n)).astype(np.float32)  # rows past m exist, not read
    y = np.full((m + 8, n), -7.0, np.float32)
    run(block_copy, COPY_SIGNATURE, [x, y, m, n, 0, 8], BM=16, BN=16, LOAD_CHECK=0,
        STORE_CHECK=(0,))  # fmt: skip
    expected = np.full_like(y, -7.0)
    expected[:m, 8:24] = 2 * x[:m, 8:24]
    np.testing.assert_array_equal(y, expected)


@tilec.jit
def while_and_if(x_ptr, out_ptr, n, skip, BLOCK: tl.constexpr):
    """Sums x's blocks in a while loop whose block pointer is advanced in an `if` (by two
    blocks past a block index `skip`, else by one) and in the loop."""
    x_bp = tl.make_block_ptr(x_ptr, (n,), (1,), (0,), (BLOCK,), (0,))
    acc = tl.zeros((BLOCK,), tl.float32)
    i = 0
    while i * BLOCK < n:
        acc += tl.load(x_bp, boundary_check=(0,), padding_option="zero")
        if i == skip:
            x_bp = tl.advance(x_bp, (2 * BLOCK,))
            i += 2
        else:
            x_bp = x_bp.advance((BLOCK,))
            i += 1
    tl.store(tl.make_block_ptr(out_ptr, (BLOCK,), (1,), (0,), (BLOCK,), (0,)), acc)


@pytest.mark.parametrize("skip", [1, -1])
def test_advance_in_while_loops_and_ifs(rng, skip):
    n = 70
    x = rng.standard_normal(n).astype(np.float32)
    out = np.zeros(16, np.float32)
    run(while_and_if, {"x_ptr": "*fp32", "out_ptr": "*fp32", "n": "i32", "skip": "i32"},
        [x, out, n, skip], BLOCK=16)  # fmt: skip
    padded = np.zeros(80, np.float64)
    padded[:n] = x
    blocks = padded.reshape(5, 16)
    expected = blocks.sum(axis=0) - (blocks[2] if skip == 1 else 0)
    np.testing.assert_allclose(out, expected, rtol=1e-5, atol=1e-5)


@tilec.jit
def if_chooses_pointer(x_ptr, y_ptr, out_ptr, use_y, BLOCK: tl.constexpr):
    """An `if` assigns the block pointer of x or of y (their bases differ, their offsets not)."""
    p = tl.make_block_ptr(x_ptr, (BLOCK,), (1,), (0,), (BLOCK,), (0,))
    if use_y != 0:
        p = tl.make_block_ptr(y_ptr, (BLOCK,), (1,), (0,), (BLOCK,), (0,))
    tl.store(out_ptr + tl.arange(0, BLOCK), tl.load(p))


@pytest.mark.parametrize("use_y", [0, 1])
def test_an_if_can_pick_the_base(rng, use_y):
    x, y = (rng.standard_normal(8).astype(np.float32) for _ in range(2))
    out = np.zeros(8, np.float32)
    run(if_chooses_pointer, {"x_ptr": "*fp32", "y_ptr": "*fp32", "out_ptr": "*fp32",
                             "use_y": "i32"}, [x, y, out, use_y], BLOCK=8)  # fmt: skip
    np.testing.assert_array_equal(out, y if use_y else x)


@tilec.jit
def _down(p, rows: tl.constexpr):
    return tl.advance(p, (rows, 0))


@tilec.jit
def nested_and_3d(x_ptr, y_ptr, M, N, WHICH: tl.constexpr):
    """ "nested": y = the sum of x's 8 x 8 blocks, through a block pointer an inner loop copies
    and advances and an outer one moves down by a @jit helper. "3d": y = a 2 x 8 x 8 block of x
    (2 x M x N), checked along its last two dimensions. "scalar": y's block = 3."""
    y_bp = tl.make_block_ptr(y_ptr, (8, 8), (8, 1), (0, 0), (8, 8), (1, 0))
    if WHICH == "nested":
        acc = tl.zeros((8, 8), tl.float32)
        p = tl.make_block_ptr(x_ptr, (M, N), (N, 1), (0, 0), (8, 8), (1, 0))
        for _ in range(0, M, 8):
            q = p
            for _ in tl.range(0, N, 8, num_stages=2):
                acc += tl.load(q, boundary_check=(0, 1), padding_option="zero")
                q = q.advance((0, 8))
            p = _down(p, 8)
        tl.store(y_bp, acc)
    elif WHICH == "3d":
        p = tl.make_block_ptr(x_ptr, (2, M, N), (M * N, N, 1), (0, 0, 0), (2, 8, 8), (2, 1, 0))
        q = tl.make_block_ptr(y_ptr, (2, 8, 8), (64, 8, 1), (0, 0, 0), (2, 8, 8), (2, 1, 0))
        tl.store(q, tl.load(p, boundary_check=(1, 2), padding_option="zero"))
    else:
        tl.store(y_bp, 3)  # a Python number takes the block's element type


@pytest.mark.parametrize("which", ["nested", "3d", "scalar"])
def test_nested_loops_helpers_3d_blocks_and_scalars(rng, which):
    m, n = 20, 13
    x = rng.standard_normal((2, m, n)).astype(np.float32)
    y = np.zeros((2, 8, 8), np.float32)
    run(nested_and_3d, {"x_ptr": "*fp32", "y_ptr": "*fp32", "M": "i32", "N": "i32"},
        [x, y, m, n], WHICH=which)  # fmt: skip
    if which == "nested":
        padded = np.zeros((24, 16))
        padded[:m, :n] = x[0]
        expected = padded.reshape(3, 8, 2, 8).sum(axis=(0, 2))
        np.testing.assert_allclose(y[0], expected, rtol=1e-5, atol=1e-5)
    elif which == "3d":
        np.testing.assert_array_equal(y, x[:, :8, :8])
    else:
        assert (y[0] == 3).all() and (y[1] == 0).all()


@tilec.jit
def bad_block_pointer(x_ptr, i_ptr, n, WHICH: tl.constexpr):
    offs = tl.arange(0, 16)
    p = tl.make_block_ptr(x_ptr, (n, n), (n, 1), (0, 0), (16, 16), (1, 0))
    if WHICH == "plain boundary_check":
        tl.store(x_ptr + offs, tl.load(x_ptr + offs, boundary_check=(0,)))
    elif WHICH == "plain padding":
        tl.store(x_ptr + offs, tl.load(x_ptr + offs, padding_option="zero"))
    elif WHICH == "plain store boundary_check":
        tl.store(x_ptr + offs, 1.0, boundary_check=(0,))
    elif WHICH == "padding":
        tl.store(p, tl.load(p, boundary_check=(0, 1), padding_option="inf"))
    elif WHICH == "nan on ints":
        q = tl.make_block_ptr(i_ptr, (n,), (1,), (0,), (16,), (0,))
        tl.store(q, tl.load(q, boundary_check=(0,), padding_option="nan"))
    elif WHICH == "ranks":
        tl.make_block_ptr(x_ptr, (n, n), (n, 1), (0,), (16, 16), (1, 0))
    elif WHICH == "order":
        tl.make_block_ptr(x_ptr, (n, n), (n, 1), (0, 0), (16, 16), (1, 1))
    elif WHICH == "block":
        tl.make_block_ptr(x_ptr, (n, n), (n, 1), (0, 0), (16, 12), (1, 0))
    elif WHICH == "base":
        tl.make_block_ptr(x_ptr + offs, (n,), (1,), (0,), (16,), (0,))
    elif WHICH == "i64 offset":
        tl.make_block_ptr(x_ptr, (n, n), (n, 1), (n.to(tl.int64), 0), (16, 16), (1, 0))
    elif WHICH == "tensor offset":
        tl.make_block_ptr(x_ptr, (n,), (1,), (offs,), (16,), (0,))
    elif WHICH == "arithmetic":
        tl.load(p + 1)
    elif WHICH == "arithmetic on values":
        tl.load(p * n)
    elif WHICH == "negation":
        tl.load(-p)
    elif WHICH == "truth":
        if p:
            tl.store(x_ptr, 1.0)
    elif WHICH == "stored as a value":
        tl.store(x_ptr, p)
    elif WHICH == "indexed":
        tl.static_print(p[0])
    elif WHICH == "in tl.where":
        tl.where(n > 0, p, p)
    elif WHICH == "mask":
        tl.load(p, mask=offs[:, None] < n)
    elif WHICH == "other":
        tl.load(p, other=0.0)
    elif WHICH == "store mask":
        tl.store(p, tl.zeros((16, 16), tl.float32), mask=offs[:, None] < n)
    elif WHICH == "boundary dimension":
        tl.load(p, boundary_check=(0, 2))
    elif WHICH == "boundary twice":
        tl.load(p, boundary_check=(1, 1))
    elif WHICH == "store shape":
        tl.store(p, tl.zeros((16, 8), tl.float32), boundary_check=(0, 1))
    elif WHICH == "store float in ints":
        tl.store(tl.make_block_ptr(i_ptr, (n,), (1,), (0,), (16,), (0,)), 1.5)
    elif WHICH == "store dtype":
        tl.store(p, tl.zeros((16, 16), tl.float16), boundary_check=(0, 1))
    elif WHICH == "advance count":
        p = tl.advance(p, (16,))
    elif WHICH == "advance plain":
        tl.advance(x_ptr, (16,))
    elif WHICH == "attribute":
        tl.static_print(p.shape)
    elif WHICH == "loop kind":
        for _ in range(0, n):
            p = tl.make_block_ptr(x_ptr, (n, n), (n, 1), (0, 0), (16, 32), (1, 0))
    elif WHICH == "loop value":
        for _ in range(0, n):
            p = tl.load(p)
    elif WHICH == "if kind":
        if n > 3:
            p = tl.make_block_ptr(x_ptr, (n, n), (n, 1), (0, 0), (16, 16), (0, 1))
    elif WHICH == "return":
        tl.load(_pick(p, n))


@tilec.jit
def _pick(p, n):
    if n > 0:
        return tl.advance(p, (16, 0))
    return p


@pytest.mark.parametrize(
    ("which", "message"),
    [
        ("plain boundary_check", "tl.load(boundary_check=(0,)) is not supported: it applies to "
         "block pointers (tl.make_block_ptr)"),
        ("plain padding", "tl.load(padding_option='zero') is not supported: it applies to block"),
        ("plain store boundary_check", "tl.store(boundary_check=(0,)) is not supported"),
        ("padding", "padding_option 'inf' is not supported"),
        ("nan on ints", "padding_option 'nan' is not supported for integer block pointers (i32)"),
        ("ranks", "needs shape, strides, offsets, block_shape and order of one rank (at least "
         "1), got shape 2, strides 2, offsets 1, block_shape 2, order 2"),
        ("order", "tl.make_block_ptr's order [1, 1] is not a permutation of [0, 1]"),
        ("block", "block_shape [16, 12] must be compile-time powers of two"),
        ("base", "tl.make_block_ptr's base must be a pointer scalar, got tensor<16x!tile.ptr<f32>>"),
        ("i64 offset", "block pointers take 32-bit offsets, offsets has a i64 value"),
        ("tensor offset", "offsets takes integer scalars, got tensor<16xi32>"),
        ("arithmetic", "operator + is not defined on block pointers"),
        ("arithmetic on values", "operator * is not defined on block pointers"),
        ("negation", "operator USub is not defined on block pointers"),
        ("in tl.where", "cannot be used as a kernel value"),
        ("truth", "has no truth value, number, length or elements"),
        ("stored as a value", "has no truth value, number, length or elements"),
        ("indexed", "has no truth value, number, length or elements"),
        ("mask", "mask and other cannot be given for loading through a block pointer"),
        ("other", "mask and other cannot be given for loading through a block pointer"),
        ("store mask", "mask cannot be given for storing through a block pointer"),
        ("boundary dimension", "boundary_check (0, 2) names a dimension that is not in 0..1"),
        ("boundary twice", "boundary_check (1, 1) names a dimension twice"),
        ("store shape", "the block pointer's block is [16, 16], the value stored is [16, 8]"),
        ("store dtype", "the block pointer's element type is f32, the value stored is f16"),
        ("store float in ints", "the block pointer's element type is i32, the value stored is f32"),
        ("advance count", "the block pointer has 2 dimensions, tl.advance got 1 offsets"),
        ("advance plain", "tl.advance takes a block pointer (tl.make_block_ptr), got !tile.ptr"),
        ("attribute", "block pointers have no attribute 'shape' in tilec"),
        ("loop kind", "loop-carried variable 'p' changes from block pointer<tl.float32, block "
         "[16, 16], order [1, 0]> to block pointer<tl.float32, block [16, 32], order [1, 0]> in "
         "the loop body"),
        ("loop value", "loop-carried variable 'p' changes from block pointer<tl.float32, block "
         "[16, 16], order [1, 0]> to tensor<16x16xf32> in the loop body"),
        ("if kind", "'p' is block pointer<tl.float32, block [16, 16], order [0, 1]> in the then "
         "branch and block pointer<tl.float32, block [16, 16], order [1, 0]> in the else branch"),
        ("return", "returning a block pointer from an 'if' on a runtime value is not supported"),
    ],
)  # fmt: skip
def test_block_pointer_mistakes_are_located_errors(which, message):
    signature = {"x_ptr": "*fp32", "i_ptr": "*i32", "n": "i32"}
    error = compile_error(bad_block_pointer, signature, WHICH=which)
    assert message in error.message, error.message


SIGNATURE_1D = {"x_ptr": "*fp32", "out_ptr": "*fp32", "n": "i32"}
COMPILED_FOR_GPUS = [
    (matmul_kernel, MATMUL_SIGNATURE, dict(BLOCK_M=16, BLOCK_N=32, BLOCK_K=16, A_ORDER=(0, 1))),
    (chunk_sums, {**SIGNATURE_1D, "start": "i32"}, dict(BLOCK=16, PAD="nan")),
    (block_copy, COPY_SIGNATURE, dict(BM=16, BN=8, LOAD_CHECK=(0, 1), STORE_CHECK=(1, 0))),
    (while_and_if, {**SIGNATURE_1D, "skip": "i32"}, dict(BLOCK=16)),
    (nested_and_3d, {"x_ptr": "*fp32", "y_ptr": "*fp32", "M": "i32", "N": "i32"},
     dict(WHICH="nested")),
]  # fmt: skip


@pytest.mark.parametrize(("kernel", "signature", "constants"), COMPILED_FOR_GPUS,
                         ids=lambda case: getattr(case, "__name__", ""))  # fmt: skip
def test_block_pointer_kernels_compile_for_nvidia(kernel, signature, constants):
    """Block pointers carried through for, while and if lower to PTX (sm_80)."""
    ptx = tilec.compile(kernel, signature, constants, backend="nvidia", target="sm_80").asm["ptx"]
    assert "ld.global" in ptx and "st.global" in ptx


def _compile_matmul(target, column_major_a=False):
    """The block-pointer matmul as a launch specializes it: pointers, sizes and leading strides
    divisible by 16, the unit strides compiled in."""
    a_strides = ("stride_ak", "stride_am") if column_major_a else ("stride_am", "stride_ak")
    return tilec.compile(
        matmul_kernel, MATMUL_SIGNATURE,
        dict(BLOCK_M=128, BLOCK_N=128, BLOCK_K=64, A_ORDER=(0, 1) if column_major_a else (1, 0)),
        divisibility=("a_ptr", "b_ptr", "c_ptr", "M", "N", "K", a_strides[0], "stride_bk",
                      "stride_cm"),
        equal_to_1=(a_strides[1], "stride_bn", "stride_cn"),
        backend="nvidia", target=target, num_warps=4, num_stages=3,
    )  # fmt: skip


@pytest.mark.parametrize("column_major_a", [False, True], ids=["row-major", "column-major"])
def test_block_pointer_matmul_is_pipelined_into_wgmma_on_sm90a(column_major_a):
    compiled = _compile_matmul("sm_90a", column_major_a)
    gir, ptx = compiled.asm["gir"], compiled.asm["ptx"]
    assert "gpu.warp_group_dot " in gir and "tile.dot" not in gir
    assert gir.count("gpu.local_alloc : !gpu.memdesc<3x") == 2  # a ring for A and one for B
    assert "gpu.async_copy_global_to_local" in gir and "{pendings = 1 : i32}" in gir
    body = gir[gir.index("scf.for") : gir.index("scf.yield")]
    assert body.index("gpu.warp_group_dot ") < body.index("gpu.async_copy_global_to_local")
    # the offsets are the only loop-carried parts (shape, strides and base are invariant)
    assert "a_bp_offset1" in gir and "a_bp_shape" not in gir and "a_bp_base" not in gir
    copies = re.findall(r"cp\.async\.cg\.shared\.global \[[^\]]*\], \[[^\]]*\], (\d+)", ptx)
    assert copies and set(copies) == {"16"}  # 16-byte copies: the contiguity is seen


@functools.cache
def _nvidia_availability():
    from tilec.plugin.manager import load_backends

    return load_backends()["nvidia"].is_available()


@pytest.mark.gpu
@pytest.mark.parametrize(("m", "n", "k"), [(208, 144, 336), (160, 80, 272)])
def test_block_pointer_matmul_on_nvidia_matches_interp(rng, m, n, k):
    if settings.TEST_BACKEND.get() not in (None, "", "nvidia") or not _nvidia_availability():
        pytest.skip(f"needs an nvidia GPU ({getattr(_nvidia_availability(), 'reason', '')})")
    args, c, expected = _matmul_case(rng, m, n, k, column_major_a=False)
    compiled = _compile_matmul(target=None)
    assert "gpu.async_copy_global_to_local" in compiled.asm["gir"]  # pipelined
    reference = tilec.compile(matmul_kernel, MATMUL_SIGNATURE,
                              dict(BLOCK_M=128, BLOCK_N=128, BLOCK_K=64, A_ORDER=(1, 0)),
                              backend="interp")  # fmt: skip
    check.run_checked(compiled, (tilec.cdiv(m, 128), tilec.cdiv(n, 128)), args, lambda: reference)
    np.testing.assert_allclose(c[:m], expected, rtol=1e-4, atol=1e-3)
    assert (c[m] == -7.0).all()
