"""TMA on the GPU (docs/tma.md): tensor maps encoded by `tilec_nvidia.tensor_map` through the
process's driver (ctypes or cuda-bindings) and read by the kernel of `tma_kernels` (built with
`tilec_nvidia.tma`): boxes of fp16, bf16, fp32, int8 and fp64 rows, swizzled 0/32/64/128
bytes, partly out of bounds (TMA's zero or NaN fill), rows with a stride wider than the shape,
one mbarrier reused over several boxes; then kernels compiled with `TILEC_NVIDIA_TMA=1` whose
host-descriptor loads go through TMA, against interp and torch. Needs an sm_90 device:
`pytest -m gpu tests/nvidia/test_tma_gpu.py`."""

from __future__ import annotations

import math

import numpy as np
import pytest
from test_tma_compile import load_at
from tma_kernels import (
    LDMATRIX_RINGS,
    NAME,
    PIPELINED,
    THREADS,
    matmul_descriptors,
    matmul_tiles,
    signature,
    tensor_maps,
    tma_copy_llir,
)

import tilec
import tilec.language as tl
from tilec import TensorDescriptor
from tilec.interop.device_array import to_device
from tilec_nvidia import driver as cuda
from tilec_nvidia import tensor_map, tma_launch, tma_lowering
from tilec_nvidia.codegen import llir_to_ptx, ptx_to_cubin

torch = pytest.importorskip("torch", reason="needs PyTorch")
pytestmark = pytest.mark.gpu


@pytest.fixture(scope="module")
def gpu():
    cuda.reset_driver(None)
    driver = cuda.get_driver()
    if driver.properties.compute_capability < (9, 0):
        pytest.skip("TMA needs an sm_90 device")
    return driver


CASES = [
    # element, numpy dtype (bits), shape, row stride, block, padding, steps
    ("fp16", np.float16, (100, 72), 72, (64, 64), "zero", 1),
    ("bf16", np.uint16, (50, 96), 96, (32, 32), "zero", 2),
    ("fp32", np.float32, (40, 20), 24, (16, 8), "nan", 1),
    ("fp32", np.float32, (70, 90), 92, (32, 64), "zero", 3),  # box cut to 32 columns
    ("i8", np.int8, (70, 48), 48, (32, 64), "zero", 1),
    ("i8", np.int8, (33, 300), 304, (16, 128), "zero", 2),
    ("fp64", np.float64, (9, 30), 30, (8, 16), "zero", 1),
    ("fp16", np.float16, (256, 256), 256, (128, 64), "zero", 2),  # in bounds
]


@pytest.mark.parametrize(("element", "dtype", "shape", "stride", "block", "padding", "steps"),
                         CASES)  # fmt: skip
def test_tma_copies_boxes_as_descriptor_loads_read_them(gpu, element, dtype, shape, stride, block,
                                                        padding, steps):  # fmt: skip
    rng = np.random.default_rng(23)
    rows, columns = shape
    full = (rng.standard_normal((rows, stride)) * 50).astype(dtype)
    source = to_device(gpu, full)
    element_bytes = full.itemsize
    swizzle = tensor_map.swizzle_bytes(block[-1] * element_bytes)
    req = tensor_map.request(element, source.ptr, shape, (stride, 1), block, padding, swizzle)
    box = tuple(reversed(req.box))
    cache = tensor_map.TensorMapCache()
    assert cache.get(gpu, req) == cache.get(gpu, req)  # encoded once

    target = gpu.properties.target
    ptx = llir_to_ptx(tma_copy_llir(target, box, element_bytes, swizzle, steps), target)
    binary = ptx_to_cubin(ptx, target)
    kernel = gpu.load(binary or ptx, NAME, is_ptx=binary is None, signature=signature(element))
    metadata = {"params": list(signature(element)),
                "tensor_maps": tensor_maps(element, block, padding, swizzle)}  # fmt: skip
    tma_launch.install(gpu, kernel, metadata)
    grid = (math.ceil(columns / (box[1] * steps)), math.ceil(rows / box[0]))
    out_shape = (grid[1] * box[0], grid[0] * steps * box[1])
    initial = np.zeros(out_shape, dtype)
    initial.view(np.uint8)[...] = 0x5A  # what no box wrote would show
    out = to_device(gpu, initial)
    values = [source.ptr, rows, columns, stride, out.ptr, out_shape[1]]
    gpu.launch(kernel, grid, THREADS // 32, 32, values)
    gpu.synchronize()
    got = out.numpy()

    if padding == "nan":
        assert np.isnan(got[rows:, :]).all() and np.isnan(got[:, columns:]).all()
        np.testing.assert_array_equal(got[:rows, :columns], full[:, :columns])
        return
    expected = np.zeros(out_shape, dtype)
    expected[:rows, :columns] = full[:, :columns]
    np.testing.assert_array_equal(got.view(np.uint8), expected.view(np.uint8))


# Compiled kernels (`TILEC_NVIDIA_TMA=1`): host-descriptor loads through TMA, against interp -----


@tilec.jit
def copy_block(x_desc, y_ptr, ld, SHIFT: tl.constexpr, BM: tl.constexpr, BN: tl.constexpr):
    i, j = tl.program_id(0), tl.program_id(1)
    block = x_desc.load([i * BM - SHIFT, j * BN])
    rows = i * BM + tl.arange(0, BM)
    cols = j * BN + tl.arange(0, BN)
    tl.store(y_ptr + rows[:, None] * ld + cols[None, :], block)


DTYPES = {"fp16": torch.float16, "bf16": torch.bfloat16, "fp32": torch.float32, "i8": torch.int8}
LOADS = [
    ("fp16", (100, 72), (64, 64), "zero", 0),
    ("fp16", (256, 128), (128, 64), "zero", 0),
    ("bf16", (50, 96), (32, 32), "zero", 3),  # negative rows: filled
    ("fp32", (70, 90), (32, 64), "zero", 0),  # two boxes of 32 columns
    ("fp32", (40, 20), (16, 8), "nan", 5),
    ("i8", (70, 48), (32, 64), "zero", 0),
    ("i8", (33, 300), (16, 128), "zero", 1),
]


def _copy(x, block, padding, shift, backend, device):
    rows, columns = x.shape
    grid = (tilec.cdiv(rows + shift, block[0]), tilec.cdiv(columns, block[1]))
    y = torch.full((grid[0] * block[0], grid[1] * block[1]), 7, dtype=x.dtype, device=device)
    desc = TensorDescriptor(x, list(x.shape), [x.stride(0), 1], list(block), padding)
    copy_block[grid](desc, y, y.shape[1], SHIFT=shift, BM=block[0], BN=block[1], backend=backend)
    return y.cpu()


@pytest.mark.parametrize(("element", "shape", "block", "padding", "shift"), LOADS)
def test_descriptor_loads_through_tma_match_interp(gpu, tma_on, element, shape, block, padding,
                                                   shift):  # fmt: skip
    torch.manual_seed(0)
    dtype = DTYPES[element]
    rows, columns = shape
    stride = (columns * dtype.itemsize + 15) // 16 * 16 // dtype.itemsize + 16 // dtype.itemsize
    wide = (torch.randn((rows, stride)) * 50).to(dtype)
    signature = {"x_desc": f"tensordesc<{element}[{block[0]}, {block[1]}]>",
                 "y_ptr": f"*{element}", "ld": "i32"}  # fmt: skip
    compiled = tilec.compile(copy_block, signature, backend="nvidia",
                             constexprs={"SHIFT": shift, "BM": block[0], "BN": block[1]})  # fmt: skip
    assert compiled.metadata.get("tensor_maps"), "the load did not go through TMA"
    got = _copy(wide.cuda()[:, :columns], block, padding, shift, "nvidia", "cuda")
    expected = _copy(wide[:, :columns], block, padding, shift, "interp", "cpu")
    if padding == "nan":
        assert torch.equal(got.isnan(), expected.isnan())
        got, expected = got.nan_to_num(0), expected.nan_to_num(0)
    assert torch.equal(got.view(torch.uint8), expected.view(torch.uint8))


@pytest.mark.parametrize(("M", "N", "K"), [(128, 128, 64), (200, 72, 104), (512, 256, 512)])
@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
@pytest.mark.parametrize("stages", [1, 3])
def test_a_matmul_through_tma_descriptors_matches_torch(gpu, tma_on, M, N, K, dtype, stages):
    """num_stages=1: a and b's loads are TMA copies; 3: TMA fills the loop's ring (the
    pipeline, tma_ring); c's store through TMA where tma_lowering.STORES claims it."""
    torch.manual_seed(0)
    a = torch.randn((M, K), device="cuda", dtype=dtype)
    b = torch.randn((K, N), device="cuda", dtype=dtype)
    wide = torch.full((M, N + 8), -1.0, device="cuda", dtype=dtype)
    c = wide[:, :N]
    BM, BN, BK = 64, 64, 32
    grid = (tilec.cdiv(M, BM), tilec.cdiv(N, BN))
    for _ in range(2):  # the second launch from the map cache
        matmul_descriptors[grid](
            TensorDescriptor.from_tensor(a, [BM, BK]), TensorDescriptor.from_tensor(b, [BK, BN]),
            TensorDescriptor(c, [M, N], [N + 8, 1], [BM, BN]), K, BM=BM, BN=BN, BK=BK,
            backend="nvidia", num_stages=stages,
        )  # fmt: skip
    torch.cuda.synchronize()
    torch.testing.assert_close(c.float(), a.float() @ b.float(), atol=2e-2 * K**0.5, rtol=1e-2)
    assert (wide[:, N:] == -1).all()
    name = "bf16" if dtype == torch.bfloat16 else "fp16"
    signature = {"a_desc": f"tensordesc<{name}[64, 32]>", "b_desc": f"tensordesc<{name}[32, 64]>",
                 "c_desc": f"tensordesc<{name}[64, 64]>", "K": "i32"}  # fmt: skip
    compiled = tilec.compile(matmul_descriptors, signature, backend="nvidia", num_stages=stages,
                             constexprs={"BM": BM, "BN": BN, "BK": BK})  # fmt: skip
    # a and b through TMA, pipelined or not; c where tma_lowering.STORES claims its store
    maps = 2 + int(tma_lowering.STORES)
    assert len(compiled.metadata.get("tensor_maps", [])) == maps


TORCH_DTYPES = {"fp16": torch.float16, "bf16": torch.bfloat16,
                "fp8e4nv": getattr(torch, "float8_e4m3fn", None)}  # fmt: skip


@pytest.mark.parametrize(("element", "shape", "block", "stages", "warps", "b_t"),
                         PIPELINED + LDMATRIX_RINGS)  # fmt: skip
@pytest.mark.parametrize("programs", ["a tile each", "3 programs"])
def test_a_pipelined_matmul_through_tma_matches_torch(gpu, tma_on, element, shape, block, stages,
                                                      warps, b_t, programs):  # fmt: skip
    """TMA fills the K loop's ring (tma_ring): S - 1 stages ahead, one mbarrier a stage and its
    phase carried by the loop; with 3 programs each runs the pipelined loop for several tiles
    (its barriers initialized and invalidated each time)."""
    dtype = TORCH_DTYPES[element]
    if dtype is None:
        pytest.skip(f"this torch has no {element}")
    (M, N, K), (BM, BN, BK) = shape, block
    torch.manual_seed(2)
    a = torch.randn((M, K), device="cuda").to(dtype)
    b = torch.randn((N, K) if b_t else (K, N), device="cuda").to(dtype)
    c = torch.full((M, N), -1.0, device="cuda")
    tiles = tilec.cdiv(M, BM) * tilec.cdiv(N, BN)
    count = tiles if programs == "a tile each" else min(3, tiles)
    b_block = [BN, BK] if b_t else [BK, BN]
    matmul_tiles[(count,)](
        TensorDescriptor.from_tensor(a, [BM, BK]), TensorDescriptor.from_tensor(b, b_block), c,
        M, N, K, BM=BM, BN=BN, BK=BK, PROGRAMS=count, B_T=b_t, backend="nvidia",
        num_stages=stages, num_warps=warps,
    )  # fmt: skip
    torch.cuda.synchronize()
    expected = a.float() @ (b.float().T if b_t else b.float())
    torch.testing.assert_close(c, expected, atol=1e-2 * K**0.5, rtol=1e-2)


@tilec.jit
def store_block(x_ptr, y_desc, ld, SHIFT: tl.constexpr, CSHIFT: tl.constexpr, BM: tl.constexpr,
                BN: tl.constexpr):  # fmt: skip
    i, j = tl.program_id(0), tl.program_id(1)
    rows = i * BM + tl.arange(0, BM)
    cols = j * BN + tl.arange(0, BN)
    block = tl.load(x_ptr + rows[:, None] * ld + cols[None, :])
    y_desc.store([i * BM - SHIFT, j * BN - CSHIFT], block)


STORES = [
    # element, shape, block, shift of the blocks' rows and columns (before the tensor). Each
    # tensor is a column slice (its rows padded): a write past its columns shows.
    ("fp16", (100, 72), (64, 64), 0, 0),  # 144-byte rows: TMA everywhere, rows clipped
    ("bf16", (50, 96), (32, 32), 3, 0),  # the first blocks start before the tensor: masked
    ("fp32", (70, 90), (32, 64), 0, 0),  # two 32-column boxes a row; 360-byte rows: the
    # blocks crossing column 90 masked (a TMA store wrote columns 90 and 91 on the H200)
    ("fp32", (64, 96), (32, 64), 0, 0),  # the second box of the last blocks wholly past
    ("fp32", (64, 128), (32, 64), 0, 0),  # two boxes a row, all inside
    ("i8", (33, 300), (16, 128), 1, 0),  # a row before the tensor (the H200's illegal
    # instruction), 300-byte rows: those blocks masked
    ("i8", (40, 320), (16, 128), 0, 0),
    ("fp16", (64, 200), (64, 64), 0, 4),  # columns 8 bytes into a 16-byte chunk: masked
    ("fp64", (9, 30), (8, 16), 0, 0),
]
STORE_DTYPES = {**DTYPES, "fp64": torch.float64}


def _store(shape, block, shifts, dtype, backend, device, source):
    rows, columns = shape
    grid = (tilec.cdiv(rows + shifts[0], block[0]), tilec.cdiv(columns + shifts[1], block[1]))
    itemsize = torch.empty((), dtype=dtype).element_size()
    stride = (columns * itemsize + 15) // 16 * 16 // itemsize + 16 // itemsize
    wide = torch.full((rows, stride), 7, dtype=dtype, device=device)
    desc = TensorDescriptor(wide[:, :columns], [rows, columns], [stride, 1], list(block))
    x = source.to(device)
    store_block[grid](x, desc, x.shape[1], SHIFT=shifts[0], CSHIFT=shifts[1], BM=block[0],
                      BN=block[1], backend=backend)  # fmt: skip
    return wide.cpu()


def _differences(got, expected, columns):
    """Where `got` differs from `expected` (rows, columns), the columns past the tensor apart."""
    wrong = (got.view(torch.uint8) != expected.view(torch.uint8)).nonzero().tolist()
    past = sorted({c for _, c in wrong if c >= columns})
    return f"{len(wrong)} bytes differ, first {wrong[:8]}; byte columns past the tensor: {past}"


@pytest.mark.parametrize(("element", "shape", "block", "shift", "column_shift"), STORES)
@pytest.mark.parametrize("stores", ["tma", "masked"])
def test_descriptor_stores_match_interp(gpu, tma_on, monkeypatch, element, shape, block, shift,
                                        column_shift, stores):  # fmt: skip
    """With `tma_lowering.STORES` forced on ("tma", whatever its default) a claimed store goes
    through TMA where that writes exactly the masked elements (`tma_store`), else the masked
    store; forced off, the masked store: both against interp, byte for byte."""
    monkeypatch.setattr(tma_lowering, "STORES", stores == "tma")
    torch.manual_seed(1)
    dtype = STORE_DTYPES[element]
    rows, columns = shape
    grid_rows = tilec.cdiv(rows + shift, block[0]) * block[0]
    grid_columns = tilec.cdiv(columns + column_shift, block[1]) * block[1]
    source = (torch.randn((grid_rows, grid_columns)) * 50).to(dtype)
    signature = {"x_ptr": f"*{element}", "y_desc": f"tensordesc<{element}[{block[0]}, {block[1]}]>",
                 "ld": "i32"}  # fmt: skip
    constexprs = {"SHIFT": shift, "CSHIFT": column_shift, "BM": block[0], "BN": block[1]}
    compiled = tilec.compile(store_block, signature, backend="nvidia", constexprs=constexprs)
    assert bool(compiled.metadata.get("tensor_maps")) == (stores == "tma")
    got = _store(shape, block, (shift, column_shift), dtype, "nvidia", "cuda", source)
    expected = _store(shape, block, (shift, column_shift), dtype, "interp", "cpu", source)
    same = torch.equal(got.view(torch.uint8), expected.view(torch.uint8))
    assert same, _differences(got, expected, columns * got.element_size())


@pytest.mark.parametrize(("M", "N", "K"), [(128, 128, 64), (200, 72, 104), (200, 60, 104)])
def test_a_matmuls_epilogue_stored_through_tma_matches_torch(gpu, tma_stores_on, M, N, K):
    """c's store through TMA (`tma_lowering.STORES` forced on): 72 columns of halves are
    144-byte rows (TMA everywhere), 60 are 120 (the last column block masked)."""
    torch.manual_seed(0)
    stride = (N + 7) // 8 * 8 + 8  # rows of whole 16-byte chunks, padded (b's and c's)
    a = torch.randn((M, K), device="cuda", dtype=torch.float16)
    b = torch.randn((K, stride), device="cuda", dtype=torch.float16)[:, :N]
    wide = torch.full((M, stride), -1.0, device="cuda", dtype=torch.float16)
    c = wide[:, :N]
    BM, BN, BK = 64, 64, 32
    matmul_descriptors[(tilec.cdiv(M, BM), tilec.cdiv(N, BN))](
        TensorDescriptor.from_tensor(a, [BM, BK]),
        TensorDescriptor(b, [K, N], [stride, 1], [BK, BN]),
        TensorDescriptor(c, [M, N], [stride, 1], [BM, BN]), K, BM=BM, BN=BN, BK=BK,
        backend="nvidia", num_stages=1,
    )  # fmt: skip
    torch.cuda.synchronize()
    torch.testing.assert_close(c.float(), a.float() @ b.float(), atol=2e-2 * K**0.5, rtol=1e-2)
    assert (wide[:, N:] == -1).all()
    signature = {"a_desc": "tensordesc<fp16[64, 32]>", "b_desc": "tensordesc<fp16[32, 64]>",
                 "c_desc": "tensordesc<fp16[64, 64]>", "K": "i32"}  # fmt: skip
    compiled = tilec.compile(matmul_descriptors, signature, backend="nvidia", num_stages=1,
                             constexprs={"BM": BM, "BN": BN, "BK": BK})  # fmt: skip
    assert len(compiled.metadata["tensor_maps"]) == 3  # a's, b's and c's


def _load_at(wide, columns, column, block, backend):
    rows = wide.shape[0]
    grid = (tilec.cdiv(rows, block[0]), tilec.cdiv(columns, block[1]))
    y = torch.full((grid[0] * block[0], grid[1] * block[1]), 7, dtype=wide.dtype,
                   device=wide.device)  # fmt: skip
    desc = TensorDescriptor(wide[:, :columns], [rows, columns], [wide.shape[1], 1], list(block))
    load_at[grid](desc, y, y.shape[1], column, BM=block[0], BN=block[1], backend=backend)
    return y.cpu()


@pytest.mark.parametrize("column", [0, 4, 8, 36, 64])
def test_descriptor_loads_at_any_column_match_interp(gpu, tma_on, column):
    """fp16 blocks at a run-time column offset: on a 16-byte boundary (0, 8, 64) through TMA,
    8 bytes into one (4, 36: TMA would raise an illegal instruction) the masked load."""
    torch.manual_seed(3)
    wide = (torch.randn((100, 208)) * 50).to(torch.float16)
    got = _load_at(wide.cuda(), 200, column, (64, 64), "nvidia")
    expected = _load_at(wide, 200, column, (64, 64), "interp")
    assert torch.equal(got.view(torch.uint8), expected.view(torch.uint8))
