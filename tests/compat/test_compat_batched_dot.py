"""Batched 3-D `tl.dot` (issue 11): [B, M, K] x [B, K, N] (+ [B, M, N]) as Triton 3.6 takes it,
each batch computed by the backend's own two-dimensional dot, with tl.dot's keywords
(input_precision, out_dtype) honoured per batch; checked on interp against NumPy and against
the same batches run one at a time through 2-D tl.dot, and compiled for nvidia (mma.sync)."""

import numpy as np
import pytest
from compat_helpers import compile_error
from compat_names_helpers import run

import tilec
import tilec.language as tl


@tilec.jit
def batched(a_ptr, b_ptr, c_ptr, B: tl.constexpr, M: tl.constexpr, N: tl.constexpr,
            K: tl.constexpr, ACC: tl.constexpr, PRECISION: tl.constexpr,
            OUT: tl.constexpr):  # fmt: skip
    i = tl.arange(0, B)[:, None, None]
    m = tl.arange(0, M)[None, :, None]
    n = tl.arange(0, N)[None, None, :]
    k_cols = tl.arange(0, K)[None, None, :]
    k_rows = tl.arange(0, K)[None, :, None]
    a = tl.load(a_ptr + i * M * K + m * K + k_cols)
    b = tl.load(b_ptr + i * K * N + k_rows * N + n)
    if ACC:
        acc = tl.load(c_ptr + i * M * N + m * N + n).to(OUT)
        c = tl.dot(a, b, acc, input_precision=PRECISION, out_dtype=OUT)
    else:
        c = tl.dot(a, b, input_precision=PRECISION, out_dtype=OUT)
    tl.static_assert(c.shape[0] == B and c.shape[1] == M and c.shape[2] == N)
    tl.store(c_ptr + i * M * N + m * N + n, c)


@tilec.jit
def one_batch(a_ptr, b_ptr, c_ptr, M: tl.constexpr, N: tl.constexpr, K: tl.constexpr,
              PRECISION: tl.constexpr):  # fmt: skip
    m = tl.arange(0, M)[:, None]
    n = tl.arange(0, N)[None, :]
    k = tl.arange(0, K)
    a = tl.load(a_ptr + m * K + k[None, :])
    b = tl.load(b_ptr + k[:, None] * N + n)
    tl.store(c_ptr + m * N + n, tl.dot(a, b, input_precision=PRECISION))


def signature(a: str, c: str) -> dict[str, str]:
    return {"a_ptr": f"*{a}", "b_ptr": f"*{a}", "c_ptr": f"*{c}"}


@pytest.mark.parametrize("precision", ["ieee", "tf32"])
def test_batched_dot_equals_each_batch_through_2d_dot(rng, precision):
    B, M, N, K = 4, 16, 32, 16
    a = rng.standard_normal((B, M, K)).astype(np.float32)
    b = rng.standard_normal((B, K, N)).astype(np.float32)
    c = np.zeros((B, M, N), np.float32)
    run(batched, signature("fp32", "fp32"), [a, b, c], B=B, M=M, N=N, K=K, ACC=False,
        PRECISION=precision, OUT=tl.float32)  # fmt: skip
    for i in range(B):
        one = np.zeros((M, N), np.float32)
        run(one_batch, signature("fp32", "fp32"), [a[i].copy(), b[i].copy(), one], M=M, N=N,
            K=K, PRECISION=precision)  # fmt: skip
        np.testing.assert_array_equal(c[i], one)
    if precision == "ieee":
        np.testing.assert_allclose(c, a @ b, rtol=1e-5, atol=1e-5)


def test_batched_dot_accumulates_and_rounds_to_out_dtype(rng):
    B, M, N, K = 2, 16, 16, 32
    a = rng.standard_normal((B, M, K)).astype(np.float16)
    b = rng.standard_normal((B, K, N)).astype(np.float16)
    c = rng.standard_normal((B, M, N)).astype(np.float16)
    expected = a.astype(np.float32) @ b.astype(np.float32) + c.astype(np.float32)
    run(batched, signature("fp16", "fp16"), [a, b, c], B=B, M=M, N=N, K=K, ACC=True,
        PRECISION="ieee", OUT=tl.float16)  # fmt: skip
    np.testing.assert_allclose(c.astype(np.float32), expected, rtol=2e-3, atol=2e-3)


def test_batched_int8_dot_is_exact(rng):
    B, M, N, K = 2, 16, 16, 32
    a = rng.integers(-128, 128, (B, M, K), dtype=np.int8)
    b = rng.integers(-128, 128, (B, K, N), dtype=np.int8)
    c = np.zeros((B, M, N), np.int32)
    run(batched, signature("i8", "i32"), [a, b, c], B=B, M=M, N=N, K=K, ACC=False,
        PRECISION=None, OUT=tl.int32)  # fmt: skip
    np.testing.assert_array_equal(c, a.astype(np.int32) @ b.astype(np.int32))


@tilec.jit
def bad_batched(a_ptr, WHICH: tl.constexpr):
    x = tl.load(a_ptr + tl.arange(0, 16))
    cube = tl.reshape(x, (1, 4, 4)) + tl.zeros((2, 4, 4), tl.float32)
    if WHICH == "batches":
        y = tl.dot(cube, tl.zeros((4, 4, 4), tl.float32))
    elif WHICH == "rank":
        y = tl.dot(cube, tl.zeros((4, 4), tl.float32))
    else:
        y = tl.dot(cube, cube, tl.zeros((2, 4, 8), tl.float32))
    tl.store(a_ptr + tl.arange(0, 16), tl.reshape(tl.sum(y, 0), (16,)))


@pytest.mark.parametrize(
    ("which", "message"),
    [
        ("batches", "equal batch dimensions, got [2, 4, 4] x [4, 4, 4]"),
        ("rank", "operands of one rank and equal batch dimensions, got [2, 4, 4] x [4, 4]"),
        ("acc", "tl.dot accumulator must be [2, 4, 4], got [2, 4, 8]"),
    ],
)
def test_batched_dot_shape_mistakes_are_located_errors(which, message):
    error = compile_error(bad_batched, {"a_ptr": "*fp32"}, WHICH=which)
    assert message in error.message, error.message


def test_batched_dot_compiles_to_tensor_cores_for_nvidia():
    compiled = tilec.compile(
        batched, signature("fp16", "fp32"),
        dict(B=2, M=16, N=16, K=16, ACC=False, PRECISION=None, OUT=tl.float32),
        backend="nvidia", target="sm_80",
    )  # fmt: skip
    assert compiled.asm["ptx"].count("mma.sync") >= 2  # one 2-D dot a batch at least


@tilec.jit
def many_batches(a_ptr, b_ptr, c_ptr, RANK: tl.constexpr, TRANS_A: tl.constexpr,
                 TRANS_B: tl.constexpr, ACC: tl.constexpr):  # fmt: skip
    """Triton's test_dot_multidim: [2] * (RANK - 2) + [16, 16] blocks; tl.trans with no dims
    swaps the last two axes (a batched transpose)."""
    offs = tl.arange(0, 64 << RANK)
    x = tl.load(a_ptr + offs).reshape([2] * (RANK - 2) + [16, 16])
    y = tl.load(b_ptr + offs).reshape([2] * (RANK - 2) + [16, 16])
    if TRANS_A:
        x = tl.trans(x)
    if TRANS_B:
        y = tl.trans(y)
    if ACC:
        z = tl.dot(x, y, tl.full([2] * (RANK - 2) + [16, 16], 1.0, tl.float32))
    else:
        z = tl.dot(x, y)
    tl.store(c_ptr + offs, z.reshape([64 << RANK]))


@pytest.mark.parametrize("rank", [3, 4, 5])
@pytest.mark.parametrize(("trans_a", "trans_b", "acc"), [(False, False, False), (True, False, True),
                                                         (False, True, False)])  # fmt: skip
def test_dots_of_many_batch_dimensions(rank, trans_a, trans_b, acc):
    rng = np.random.default_rng(rank)
    shape = (2,) * (rank - 2) + (16, 16)
    a = rng.integers(-4, 5, shape).astype(np.float32)
    b = rng.integers(-4, 5, shape).astype(np.float32)
    c = np.zeros(shape, np.float32)
    sig = {"a_ptr": "*fp32", "b_ptr": "*fp32", "c_ptr": "*fp32"}
    run(many_batches, sig, [a, b, c], RANK=rank, TRANS_A=trans_a, TRANS_B=trans_b, ACC=acc)
    x = np.swapaxes(a, -1, -2) if trans_a else a
    y = np.swapaxes(b, -1, -2) if trans_b else b
    np.testing.assert_array_equal(c, x @ y + (1.0 if acc else 0.0))
