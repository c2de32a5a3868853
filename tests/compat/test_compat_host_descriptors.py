"""Host-side tensor descriptors as kernel arguments (issue 20, Triton 3.6's
`triton.tools.tensor_descriptor.TensorDescriptor`, tutorial 06): a descriptor made on the host is
one argument whose base pointer, shape and strides are runtime values and whose dtype, block
shape and padding are compiled in; in the kernel it is the descriptor `tl.make_tensor_descriptor`
gives. Checked on interp with NumPy and CPU torch bases (on a GPU backend through
`TILEC_TEST_BACKEND`), and compiled for nvidia and amd."""

import re

import numpy as np
import pytest

import tilec
import tilec.language as tl
from tilec import settings
from tilec.tools.tensor_descriptor import TensorDescriptor

BACKEND = settings.TEST_BACKEND.get() or "interp"


@tilec.jit
def scale_blocks(x_desc, y_desc, factor, BM: tl.constexpr, BN: tl.constexpr):
    """Program (i, j) writes factor * block (i, j) of x into y, through two descriptors."""
    i, j = tl.program_id(0), tl.program_id(1)
    block = x_desc.load([i * BM, j * BN])
    y_desc.store([i * BM, j * BN], block * factor)


@pytest.mark.parametrize(("M", "N"), [(64, 32), (50, 36), (8, 100)])
def test_blocks_are_loaded_and_stored_within_the_shape(M, N, rng):
    x = rng.standard_normal((M, N)).astype(np.float32)
    y = np.full((M + 1, N), -7.0, np.float32)  # a row past the descriptor's shape
    x_desc = TensorDescriptor.from_tensor(x, [16, 32])
    y_desc = TensorDescriptor(y, [M, N], [N, 1], [16, 32])
    grid = (tilec.cdiv(M, 16), tilec.cdiv(N, 32))
    scale_blocks[grid](x_desc, y_desc, 3.0, BM=16, BN=32, backend=BACKEND)
    np.testing.assert_allclose(y[:M], x * 3, rtol=1e-6)
    assert (y[M] == -7.0).all()


def test_torch_cpu_tensors_as_bases():
    """CPU torch tensors as bases, on the interpreter (a GPU backend takes device tensors:
    tests/nvidia/test_nvidia_host_descriptors.py)."""
    torch = pytest.importorskip("torch")
    x = torch.arange(48 * 32, dtype=torch.float16).reshape(48, 32) / 64
    y = torch.zeros_like(x)
    scale_blocks[(3, 1)](
        TensorDescriptor.from_tensor(x, [16, 32]), TensorDescriptor.from_tensor(y, [16, 32]),
        2.0, BM=16, BN=32, backend="interp",
    )  # fmt: skip
    assert torch.equal(y, x * 2)


@tilec.jit
def descriptor_facts(desc, out_ptr, BM: tl.constexpr, BN: tl.constexpr):
    tl.static_assert(desc.block_shape[0] == BM and desc.block_shape[1] == BN)
    tl.static_assert(desc.dtype == tl.float32)
    tl.static_assert(isinstance(desc, tl.tensor_descriptor))
    rows, cols = desc.shape
    tl.store(out_ptr + 0, rows)
    tl.store(out_ptr + 1, cols)
    tl.store(out_ptr + 2, desc.strides[0])
    tl.store(out_ptr + 3, desc.strides[1])
    tl.store(out_ptr + 4, (desc.strides[0] * 3).to(tl.int64).dtype.primitive_bitwidth)


def test_shape_and_strides_read_in_the_kernel():
    x = np.zeros((40, 24), np.float32)
    out = np.zeros(5, np.int64)
    desc = TensorDescriptor(x[:, :20], [40, 20], [24, 1], [8, 16])
    descriptor_facts[(1,)](desc, out, BM=8, BN=16, backend=BACKEND)
    assert out.tolist() == [40, 20, 24, 1, 64]


@tilec.jit
def padded_sum(desc, out_ptr, R0, C0, BM: tl.constexpr, BN: tl.constexpr):
    acc = tl.zeros((BM, BN), tl.float32)
    for k in range(0, 3):
        acc += desc.load([R0 + k * BM, C0])
    tl.store(out_ptr + tl.arange(0, BM)[:, None] * BN + tl.arange(0, BN)[None, :], acc)


@pytest.mark.parametrize("pad", ["zero", "nan"])
def test_padding_fills_what_lies_outside(pad, rng):
    M, N, BM, BN = 20, 12, 8, 16
    x = rng.standard_normal((M, N)).astype(np.float32)
    out = np.zeros((BM, BN), np.float32)
    r0, c0 = -3, 2
    desc = TensorDescriptor(x, [M, N], [N, 1], [BM, BN], padding=pad)
    padded_sum[(1,)](desc, out, r0, c0, BM=BM, BN=BN, backend=BACKEND)
    fill = 0.0 if pad == "zero" else np.nan
    padded = np.full((M + 6 * BM, N + 2 * BN), fill, np.float32)
    padded[3 * BM : 3 * BM + M, BN : BN + N] = x
    expected = sum(
        padded[3 * BM + r0 + k * BM : 3 * BM + r0 + (k + 1) * BM, BN + c0 : 2 * BN + c0]
        for k in range(3)
    )
    np.testing.assert_allclose(out, expected, rtol=1e-6, equal_nan=True)
    assert np.isnan(out).any() == (pad == "nan")


@tilec.jit
def _as_descriptor(desc_or_ptr, shape, strides, block_shape):
    if isinstance(desc_or_ptr, tl.tensor_descriptor):
        return desc_or_ptr
    else:
        return tl.make_tensor_descriptor(desc_or_ptr, shape, strides, block_shape)


@tilec.jit
def double_rows(x, y_ptr, M, N: tl.constexpr, BM: tl.constexpr):
    """x is a host descriptor or a pointer (tutorial 06's pattern): two specializations."""
    x_desc = _as_descriptor(x, [M, N], [N, 1], [BM, N])
    i = tl.program_id(0)
    rows = i * BM + tl.arange(0, BM)
    block = x_desc.load([i * BM, 0])
    tl.store(y_ptr + rows[:, None] * N + tl.arange(0, N)[None, :], block * 2,
             mask=rows[:, None] < M)  # fmt: skip


def test_a_descriptor_and_a_pointer_for_one_parameter(general, rng):
    M, N, BM = 40, 16, 16
    x = rng.standard_normal((M, N)).astype(np.float32)
    desc = TensorDescriptor.from_tensor(x, [BM, N])
    results = []
    for arg in [x, x, desc, desc, x, desc]:  # pointer launches take a fast launch
        y = np.zeros_like(x)
        compiled = double_rows[(tilec.cdiv(M, BM),)](arg, y, M, N=N, BM=BM, backend=BACKEND)
        np.testing.assert_array_equal(y, x * 2)
        results.append(compiled)
    assert "x" in results[0].signature and "x.0" in results[2].signature
    assert results[0] is results[4] and results[2] is results[3] is results[5]
    assert results[0] is not results[2]
    assert len(general) == 2  # the first pointer launch and the first descriptor launch


def test_fast_launches_read_each_descriptors_parts(general, rng):
    """A fast launch takes a descriptor like the first one's; it reads that launch's base,
    shape and strides."""
    BM, N = 16, 16
    for M in (40, 24, 48, 20):
        x = rng.standard_normal((M, 2 * N)).astype(np.float32)
        y = np.full((M, N), -1.0, np.float32)
        desc = TensorDescriptor(x[:, N:], [M, N], [2 * N, 1], [BM, N])  # the right half
        double_rows[(tilec.cdiv(M, BM),)](desc, y, M, N=N, BM=BM, backend=BACKEND)
        np.testing.assert_array_equal(y, x[:, N:] * 2)
    assert len(general) == 2  # 40 and 24 differ in their multiple-of-16 fact


def test_block_shape_and_padding_are_compiled_in():
    x = np.zeros((32, 32), np.float32)
    out = np.zeros((16, 16), np.float32)
    desc = TensorDescriptor(x, [32, 32], [32, 1], [16, 16])
    first = padded_sum[(1,)](desc, out, 0, 0, BM=16, BN=16, backend=BACKEND)
    desc.padding = "nan"
    nan = padded_sum[(1,)](desc, out, 0, 0, BM=16, BN=16, backend=BACKEND)
    desc.block_shape = [8, 16]  # as tutorial 06's pre_hook sets it
    smaller = padded_sum[(1,)](desc, out[:8], 0, 0, BM=8, BN=16, backend=BACKEND)
    assert len({first.key, nan.key, smaller.key}) == 3
    assert smaller.constexprs["desc.3"].block_shape == (8, 16)


@pytest.mark.parametrize(
    ("make", "error", "message"),
    [
        (lambda x: TensorDescriptor(x, [8, 8], [8], [8, 8]), AssertionError, "rank mismatch"),
        (lambda x: TensorDescriptor(x, [], [], []), AssertionError, "rank must not be zero"),
        (
            lambda x: TensorDescriptor(
                x.reshape(1, 1, 1, 1, 4, 16), [1] * 5 + [64], [64] * 5 + [1], [1] * 6
            ),
            AssertionError,
            "rank cannot be more than 5",
        ),
        (
            lambda x: TensorDescriptor(x[1:], [63], [1], [16]),
            AssertionError,
            "base must be 16-byte aligned",
        ),
        (
            lambda x: TensorDescriptor(x, [8, 3], [3, 1], [8, 4]),
            AssertionError,
            "strides must be 16-byte aligned",
        ),
        (
            lambda x: TensorDescriptor(x, [8, 0], [8, 1], [8, 8]),
            AssertionError,
            "shape must be positive",
        ),
        (
            lambda x: TensorDescriptor(x, [8, 4], [4, 2], [8, 4]),
            AssertionError,
            "Last dimension must be contiguous",
        ),
        (
            lambda x: TensorDescriptor(x, [8, 8], [8, 1], [8, 8], "inf"),
            AssertionError,
            "Illegal value for padding",
        ),
        (
            lambda x: TensorDescriptor(x.view(np.int32), [8, 8], [8, 1], [8, 8], "nan"),
            AssertionError,
            "Padding option `nan` is only supported for floating point tensors",
        ),
        (
            lambda x: TensorDescriptor(x, [8, 8], [8, 1], [8, 6]),
            ValueError,
            "Shape element 1 must be a power of 2",
        ),
        (
            lambda x: TensorDescriptor(x, [8, 8], [8, 1], [8, 8.0]),
            TypeError,
            "Shape element 1 must have type `constexpr[int]`",
        ),
        (
            lambda x: TensorDescriptor([1.0] * 64, [64], [1], [16]),
            TypeError,
            "a TensorDescriptor's base is a torch tensor, a NumPy array or a device array",
        ),
    ],
)
def test_bad_descriptors_raise_tritons_errors(make, error, message):
    x = np.zeros(64, np.float32)
    with pytest.raises(error, match=re.escape(message)) as info:
        make(x.reshape(8, 8) if message != "base must be 16-byte aligned" else x)
    assert isinstance(info.value, tilec.TilecError)


def test_a_descriptor_changed_after_it_was_made_is_refused_at_launch():
    x = np.zeros((32, 32), np.float32)
    desc = TensorDescriptor(x, [32, 32], [32, 1], [16, 16])
    desc.block_shape = [16, 12]
    with pytest.raises(ValueError, match="argument 'desc' of padded_sum: Shape element 1 must"):
        padded_sum[(1,)](desc, np.zeros((16, 16), np.float32), 0, 0, BM=16, BN=16,
                         backend=BACKEND)  # fmt: skip
    desc.block_shape, desc.strides = [16, 16], [32, 2]
    with pytest.raises(AssertionError, match="padded_sum: Last dimension must be contiguous"):
        padded_sum[(1,)](desc, np.zeros((16, 16), np.float32), 0, 0, BM=16, BN=16,
                         backend=BACKEND)  # fmt: skip


def test_the_alias_gives_tilecs_descriptor():
    from tilec.as_triton import tools

    assert tools.TensorDescriptor is TensorDescriptor is tilec.TensorDescriptor


@pytest.mark.parametrize(
    ("backend", "target"), [("nvidia", "sm_90a"), ("nvidia", "sm_80"), ("amd", "gfx942")]
)
def test_descriptor_kernels_compile_for_gpus(backend, target, monkeypatch):
    monkeypatch.setenv("TILEC_NVIDIA_TMA", "0")  # the masked accesses (docs/tma.md)
    compiled = tilec.compile(
        scale_blocks, {"x_desc": "tensordesc<fp16[64, 64]>", "y_desc": "tensordesc<fp16[64, 64]>",
                       "factor": "fp32"},
        {"BM": 64, "BN": 64}, backend=backend, target=target,
        divisibility=[f"{d}.{e}" for d in ("x_desc", "y_desc") for e in ("0", "1.1", "2.0")],
    )  # fmt: skip
    assert list(compiled.signature) == [
        "x_desc.0", "x_desc.1.0", "x_desc.1.1", "x_desc.2.0",
        "y_desc.0", "y_desc.1.0", "y_desc.1.1", "y_desc.2.0", "factor",
    ]  # fmt: skip
    assert compiled.signature["x_desc.2.0"] == "i64" and compiled.signature["x_desc.1.0"] == "i32"
    binary = compiled.asm["cubin" if backend == "nvidia" else "hsaco"]
    assert isinstance(binary, bytes) and binary
    # aligned base, strides and width: 16-byte accesses, as a launch's facts give them
    if backend == "nvidia":
        assert "ld.global.v4.b32" in compiled.asm["ptx"]
        assert "st.global.v4.b32" in compiled.asm["ptx"]
    else:
        assert "global_load_dwordx4" in compiled.asm["amdgcn"]


def test_a_compiled_kernel_takes_descriptors_again(rng):
    x = rng.standard_normal((32, 32)).astype(np.float32)
    y = np.zeros_like(x)
    x_desc, y_desc = (TensorDescriptor.from_tensor(a, [16, 32]) for a in (x, y))
    compiled = scale_blocks[(2, 1)](x_desc, y_desc, 2.0, BM=16, BN=32, backend=BACKEND)
    compiled[(2, 1)](x_desc, y_desc, 5.0, 16, 32)
    np.testing.assert_allclose(y, x * 5, rtol=1e-6)
    with pytest.raises(ValueError, match=r"scale_blocks was compiled with x_desc\.3="):
        compiled[(2, 1)](TensorDescriptor.from_tensor(x, [8, 32]), y_desc, 5.0, 16, 32)


def test_check_runs_descriptor_launches_on_the_interpreter_too(rng):
    x = rng.standard_normal((32, 32)).astype(np.float32)
    y = np.zeros_like(x)
    x_desc, y_desc = (TensorDescriptor.from_tensor(a, [16, 32]) for a in (x, y))
    scale_blocks[(2, 1)](x_desc, y_desc, 2.0, BM=16, BN=32, backend=BACKEND, check=True)
    np.testing.assert_allclose(y, x * 2, rtol=1e-6)


@tilec.jit
def add_one_rank1(d, e, B: tl.constexpr):
    i = tl.program_id(0)
    e.store([i * B], d.load([i * B]) + 1)


@tilec.jit
def double_rank3(d, e):
    i = tl.program_id(0)
    e.store([i, 0, 0], d.load([i, 0, 0]) * 2)


def test_descriptors_of_rank_1_and_3():
    x = np.arange(100, dtype=np.float32)
    y = np.zeros_like(x)
    add_one_rank1[(4,)](TensorDescriptor.from_tensor(x, [32]), TensorDescriptor.from_tensor(y, [32]),
                        B=32, backend=BACKEND)  # fmt: skip
    np.testing.assert_array_equal(y, x + 1)
    x = np.arange(3 * 4 * 8, dtype=np.float32).reshape(3, 4, 8)
    y = np.zeros_like(x)
    compiled = double_rank3[(3,)](TensorDescriptor.from_tensor(x, [1, 4, 8]),
                                  TensorDescriptor.from_tensor(y, [1, 4, 8]), backend=BACKEND)  # fmt: skip
    np.testing.assert_array_equal(y, x * 2)
    assert [p for p in compiled.signature if p.startswith("d.")] == [
        "d.0", "d.1.0", "d.1.1", "d.1.2", "d.2.0", "d.2.1"
    ]  # fmt: skip
