"""Tensor descriptors (issue 11, Triton 3.6's fused-attention tutorial): `tl.make_tensor_descriptor`
with `desc.load` / `desc.store` and `tl.load_tensor_descriptor` / `tl.store_tensor_descriptor`,
blocks partly outside the shape padded (0 or NaN) and not written; checked on interp against
NumPy (on a GPU backend through `TILEC_TEST_BACKEND`, against interp), and compiled for nvidia."""

import numpy as np
import pytest
from compat_helpers import compile_error
from compat_names_helpers import run

import tilec
import tilec.language as tl


@tilec.jit
def _maybe_make_tensor_desc(desc_or_ptr, shape, strides, block_shape):
    if isinstance(desc_or_ptr, tl.tensor_descriptor):
        return desc_or_ptr
    else:
        return tl.make_tensor_descriptor(desc_or_ptr, shape, strides, block_shape)


@tilec.jit
def copy_blocks(x_ptr, y_ptr, M, N, BM: tl.constexpr, BN: tl.constexpr, PAD: tl.constexpr):
    """Program (i, j) copies block (i, j) of x (M x N) into y, transposed within the block
    through `.T` and back, doubled; y's blocks are written through a descriptor too."""
    x_desc = tl.make_tensor_descriptor(x_ptr, shape=[M, N], strides=[N, 1], block_shape=[BM, BN],
                                       padding_option=PAD)  # fmt: skip
    tl.static_assert(isinstance(x_desc, tl.tensor_descriptor))
    tl.static_assert(x_desc.block_shape[0] == BM and x_desc.dtype == tl.float32)
    y_desc = _maybe_make_tensor_desc(y_ptr, [M, N], [N, 1], [BM, BN])
    y_desc = _maybe_make_tensor_desc(y_desc, [M, N], [N, 1], [BM, BN])  # a descriptor as it is
    i, j = tl.program_id(0), tl.program_id(1)
    block = x_desc.load([i * BM, j * BN]).T
    tl.store_tensor_descriptor(y_desc, [i * BM, j * BN], block.T * 2)


@pytest.mark.parametrize(("M", "N"), [(64, 32), (50, 37), (8, 100)])
def test_descriptor_blocks_are_loaded_and_stored_within_the_shape(M, N, rng):
    x = rng.standard_normal((M, N)).astype(np.float32)
    y = np.full((M + 1, N), -7.0, np.float32)  # a row past the shape, never written
    grid = (tilec.cdiv(M, 16), tilec.cdiv(N, 32))
    run(copy_blocks, {"x_ptr": "*fp32", "y_ptr": "*fp32", "M": "i32", "N": "i32"},
        [x, y, M, N], grid=grid, BM=16, BN=32, PAD="zero")  # fmt: skip
    np.testing.assert_array_equal(y[:M], x * 2)
    assert (y[M] == -7.0).all()


@tilec.jit
def padded_sums(x_ptr, out_ptr, M, N, R0, C0, BM: tl.constexpr, BN: tl.constexpr,
                PAD: tl.constexpr):  # fmt: skip
    desc = tl.make_tensor_descriptor(x_ptr, [M, N], [N, 1], [BM, BN], padding_option=PAD)
    acc = tl.zeros((BM, BN), tl.float32)
    for k in range(0, 3):
        acc += tl.load_tensor_descriptor(desc, [R0 + k * BM, C0])  # the descriptor in a loop
    tl.store(out_ptr + tl.arange(0, BM)[:, None] * BN + tl.arange(0, BN)[None, :], acc)


@pytest.mark.parametrize("pad", ["zero", "nan"])
def test_padding_fills_what_lies_outside(pad, rng):
    M, N, BM, BN = 20, 12, 8, 16
    x = rng.standard_normal((M, N)).astype(np.float32)
    out = np.zeros((BM, BN), np.float32)
    r0, c0 = -3, 2  # rows above the tensor and columns past its end
    run(padded_sums, {"x_ptr": "*fp32", "out_ptr": "*fp32", "M": "i32", "N": "i32",
                      "R0": "i32", "C0": "i32"},
        [x, out, M, N, r0, c0], BM=BM, BN=BN, PAD=pad)  # fmt: skip
    fill = 0.0 if pad == "zero" else np.nan
    padded = np.full((M + 2 * 3 * BM, N + 2 * BN), fill, np.float32)
    padded[3 * BM : 3 * BM + M, BN : BN + N] = x
    expected = sum(
        padded[3 * BM + r0 + k * BM : 3 * BM + r0 + (k + 1) * BM, BN + c0 : BN + c0 + BN]
        for k in range(3)
    )
    np.testing.assert_allclose(out, expected, rtol=1e-6, equal_nan=True)
    assert np.isnan(out).any() == (pad == "nan")


@tilec.jit
def bad_descriptor(x_ptr, n, WHICH: tl.constexpr):
    if WHICH == "stride":
        d = tl.make_tensor_descriptor(x_ptr, [n, n], [1, n], [16, 16])
    elif WHICH == "rank":
        d = tl.make_tensor_descriptor(x_ptr, [n, n], [n, 1], [16])
    elif WHICH == "block":
        d = tl.make_tensor_descriptor(x_ptr, [n, n], [n, 1], [16, 12])
    elif WHICH == "padding":
        d = tl.make_tensor_descriptor(x_ptr, [n, n], [n, 1], [16, 16], padding_option="inf")
    else:
        d = tl.make_tensor_descriptor(x_ptr, [n, n], [n, 1], [16, 16])
    if WHICH == "store":
        d.store([0, 0], tl.zeros((16, 8), tl.float32))
    elif WHICH == "offsets":
        d.store([0], tl.zeros((16, 16), tl.float32))
    else:
        d.store([0, 0], d.load([0, 0]))


@pytest.mark.parametrize(
    ("which", "message"),
    [
        ("stride", "needs a last stride of 1 (the last dimension contiguous), got a runtime value"),
        ("rank", "needs shape, strides and block_shape of one rank, got 2, 2 and 1"),
        ("block", "block_shape [16, 12] must be compile-time powers of two"),
        ("padding", "padding_option must be 'zero' or 'nan', got 'inf'"),
        ("store", "the descriptor's block is [16, 16], the value stored is [16, 8]"),
        ("offsets", "the descriptor has 2 dimensions, got 1 offsets"),
    ],
)
def test_descriptor_mistakes_are_located_errors(which, message):
    error = compile_error(bad_descriptor, {"x_ptr": "*fp32", "n": "i32"}, WHICH=which)
    assert message in error.message, error.message


def test_descriptor_blocks_compile_for_nvidia():
    compiled = tilec.compile(
        copy_blocks, {"x_ptr": "*fp32", "y_ptr": "*fp32", "M": "i32", "N": "i32"},
        {"BM": 16, "BN": 32, "PAD": "zero"}, backend="nvidia", target="sm_80",
    )  # fmt: skip
    assert "ld.global" in compiled.asm["ptx"] and "st.global" in compiled.asm["ptx"]


def test_set_allocator_takes_a_function():
    tilec.set_allocator(lambda size, alignment, stream: None)
    tilec.set_allocator(None)
    with pytest.raises(TypeError, match="set_allocator takes a function"):
        tilec.set_allocator(16)
