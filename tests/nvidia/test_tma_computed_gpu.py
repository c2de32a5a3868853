"""Descriptors made in the kernel from values it computes, read and written through tensor
maps the kernel builds (docs/tma.md, step 4; `tilec_nvidia.tma_made`), on the GPU against
interp, bit for bit: a base offset by the program id with computed sizes (rows cut, rows before
the tensor, NaN padding, strides and bases off 16 bytes: the masked branch), a computed stride
with a store, a descriptor made in a loop, stores whose base the program offsets; global scratch
from `tilec.set_allocator`'s allocator and without one. Needs an sm_90 device:
`pytest -m gpu tests/nvidia/test_tma_computed_gpu.py`."""

from __future__ import annotations

import pytest
import tma_computed_kernels as kernels
from test_tma_gpu import gpu  # noqa: F401  (the fixture: an sm_90 device)

import tilec

torch = pytest.importorskip("torch", reason="needs PyTorch")
pytestmark = [pytest.mark.gpu, pytest.mark.usefixtures("gpu")]

DTYPES = {"fp16": torch.float16, "bf16": torch.bfloat16, "fp32": torch.float32, "i8": torch.int8}


@pytest.fixture(params=["allocator", "own scratch"])
def scratch(request):
    """Global scratch from a torch allocator given to `tilec.set_allocator`, or the kernel's
    own (no allocator)."""
    asked = []
    if request.param == "allocator":

        def allocate(size, alignment, stream):
            asked.append(size)
            return torch.empty(size, dtype=torch.int8, device="cuda")

        tilec.set_allocator(allocate)
    yield asked
    tilec.set_allocator(None)


def _random(shape, dtype):
    if dtype == torch.int8:
        return torch.randint(-100, 100, shape, dtype=torch.int8)
    return (torch.randn(shape) * 50).to(dtype)


def _on_both(run):
    """`run(backend, device)`'s result on the GPU, the same bit for bit as on interp."""
    got, expected = (run(b, d).cpu() for b, d in (("nvidia", "cuda"), ("interp", "cpu")))
    _same(got, expected)
    return got


def _same(got, expected):
    if got.dtype.is_floating_point:
        assert torch.equal(got.isnan(), expected.isnan())
        got, expected = got.nan_to_num(0), expected.nan_to_num(0)
    assert torch.equal(got.cpu().view(torch.uint8), expected.cpu().view(torch.uint8))


COPIES = [
    # element, (M, N), row stride ld, block, padding, rows cut, rows before
    ("fp16", (200, 72), 80, (64, 64), "zero", 0, 0),
    ("fp16", (200, 72), 80, (64, 64), "zero", 5, 3),
    ("bf16", (130, 96), 96, (32, 32), "nan", 7, 0),
    ("fp32", (70, 90), 96, (32, 64), "zero", 1, 2),  # two boxes of 32 columns
    ("fp32", (40, 20), 32, (16, 8), "nan", 0, 5),
    ("i8", (70, 48), 64, (32, 64), "zero", 3, 0),
    ("i8", (33, 300), 304, (16, 128), "zero", 0, 1),
    ("fp16", (100, 72), 76, (64, 64), "zero", 0, 0),  # stride off 16 bytes: masked
]


def _copy(x, rows, columns, ld, block, padding, cut, shift, backend, device):
    grid = (tilec.cdiv(rows, block[0]), tilec.cdiv(columns, block[1]))
    y = torch.full((grid[0] * block[0], grid[1] * block[1]), 7, dtype=x.dtype, device=device)
    kernels.copy_offset_base[grid](x, y, rows, columns, ld, CUT=cut, SHIFT=shift,
                                   BM=block[0], BN=block[1], PADDING=padding,
                                   backend=backend)  # fmt: skip
    return y.cpu()


@pytest.mark.parametrize(("element", "shape", "ld", "block", "padding", "cut", "shift"), COPIES)
def test_a_descriptor_offset_by_the_program_id_matches_interp(tma_on, scratch, element, shape,
                                                              ld, block, padding, cut,
                                                              shift):  # fmt: skip
    torch.manual_seed(0)
    rows, columns = shape
    x = _random((rows, ld), DTYPES[element])
    got = _copy(x.cuda(), rows, columns, ld, block, padding, cut, shift, "nvidia", "cuda")
    expected = _copy(x, rows, columns, ld, block, padding, cut, shift, "interp", "cpu")
    _same(got, expected)
    if tilec._allocator is not None:
        programs = tilec.cdiv(rows, block[0]) * tilec.cdiv(columns, block[1])
        assert scratch == [programs * 128]  # one map a program


@pytest.mark.parametrize("skip", [4, 8])
def test_a_base_off_16_bytes_is_the_masked_load(tma_on, scratch, skip):
    """x's data starts `skip` halves into its storage: 8 or 16 bytes off (4: masked)."""
    torch.manual_seed(5)
    rows, columns, ld, block = 100, 72, 80, (32, 64)
    storage = _random((rows * ld + skip,), torch.float16)
    x = storage[skip:].view(rows, ld)
    got = _copy(storage.cuda()[skip:].view(rows, ld), rows, columns, ld, block, "zero", 0, 0,
                "nvidia", "cuda")  # fmt: skip
    _same(got, _copy(x, rows, columns, ld, block, "zero", 0, 0, "interp", "cpu"))


@pytest.mark.parametrize(("element", "shape", "half_ld", "block"), [
    ("fp16", (100, 120), 64, (32, 64)),
    ("fp32", (65, 33), 20, (32, 32)),
    ("bf16", (64, 64), 35, (16, 32)),  # a stride of 140 bytes: masked load
])  # fmt: skip
def test_a_computed_stride_and_a_made_store_match_interp(tma_stores_on, scratch, element, shape,
                                                         half_ld, block):  # fmt: skip
    torch.manual_seed(1)
    rows, columns = shape
    x = _random((rows, 2 * half_ld), DTYPES[element])
    grid = (tilec.cdiv(rows, block[0]), tilec.cdiv(columns, block[1]))

    def run(backend, device):
        y = torch.full((rows * columns + 64,), 3, dtype=x.dtype, device=device)
        kernels.copy_computed_stride[grid](x.to(device), y, rows, columns, half_ld,
                                           BM=block[0], BN=block[1], backend=backend)  # fmt: skip
        return y

    got = _on_both(run)
    assert (got[rows * columns :].float() == 3).all()  # nothing written past y


@pytest.mark.parametrize("kernel", [kernels.row_sums_in_loop, kernels.row_sums_invariant])
@pytest.mark.parametrize(("shape", "block"), [((100, 200), (32, 32)), ((64, 64), (64, 16)),
                                              ((70, 36), (16, 32))])  # fmt: skip
def test_a_descriptor_made_in_or_before_a_loop_matches_interp(tma_on, scratch, kernel, shape,
                                                              block):  # fmt: skip
    """Made in the loop: a map each iteration; before it: one map for every iteration (N = 36
    floats: rows of 144 bytes, a multiple of 16)."""
    torch.manual_seed(2)
    rows, columns = shape
    x = torch.randint(-8, 8, shape).float()  # integers: every order of the sums is exact

    def run(backend, device):
        y = torch.zeros(rows, device=device)
        kernel[(tilec.cdiv(rows, block[0]),)](x.to(device), y, rows, columns, BM=block[0],
                                              BN=block[1], backend=backend)  # fmt: skip
        return y

    assert torch.equal(_on_both(run), x.sum(dim=1))


@pytest.mark.parametrize(("element", "shape", "block"), [
    ("bf16", (100, 128), (32, 64)),
    ("fp32", (70, 90), (32, 32)),  # rows of 360 bytes: the last column blocks masked
    ("i8", (33, 300), (16, 128)),
])  # fmt: skip
def test_a_store_whose_base_the_program_offsets_matches_interp(tma_stores_on, scratch, element,
                                                               shape, block):  # fmt: skip
    torch.manual_seed(3)
    rows, columns = shape
    x = _random(shape, DTYPES[element])
    grid = (tilec.cdiv(rows, block[0]), tilec.cdiv(columns, block[1]))

    def run(backend, device):
        y = torch.full((rows * columns + 256,), 5, dtype=x.dtype, device=device)
        kernels.store_offset_base[grid](x.to(device), y, rows, columns, BM=block[0],
                                        BN=block[1], backend=backend)  # fmt: skip
        return y

    assert torch.equal(_on_both(run)[: rows * columns].view(shape), x)


@pytest.mark.parametrize(("element", "shape", "block"), [
    ("fp16", (100, 128), (32, 64)), ("bf16", (64, 40), (16, 32)), ("fp32", (33, 24), (16, 16)),
])  # fmt: skip
def test_a_load_and_a_store_sharing_a_map_match_interp(tma_stores_on, scratch, element, shape,
                                                       block):  # fmt: skip
    """`scale_in_place`: one map, built where the descriptor is made, read and written (bf16
    rows of 80 bytes: the last column block stored masked)."""
    torch.manual_seed(6)
    rows, columns = shape
    x = _random(shape, DTYPES[element])
    grid = (tilec.cdiv(rows, block[0]), tilec.cdiv(columns, block[1]))

    def run(backend, device):
        y = x.to(device).clone()
        kernels.scale_in_place[grid](
            y, rows, columns, 3.0, BM=block[0], BN=block[1], backend=backend
        )
        return y

    _on_both(run)


@pytest.mark.parametrize(("n", "block"), [(1000, 32), (100, 16), (4, 32), (300, 256)])
def test_a_one_dimensional_descriptor_matches_interp(tma_on, scratch, n, block):
    torch.manual_seed(7)
    x = torch.randn(n)

    def run(backend, device):
        y = torch.full((n,), 9.0, device=device)
        kernels.copy_tail_1d[(tilec.cdiv(n, block),)](
            x.to(device), y, n, BLOCK=block, backend=backend
        )
        return y

    assert torch.equal(_on_both(run), x)
