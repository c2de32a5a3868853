"""Descriptors made in the kernel (`tl.make_tensor_descriptor`) read through TMA on the GPU
(docs/tma.md, step 4): blocks of fp16, bf16, fp32 and int8 tensors, partly outside them (zero
and NaN padding, rows before the tensor, columns off a 16-byte boundary), against interp; then
tutorial 09's device-descriptor persistent matmul (`tma_made_kernels.matmul_made`), its K
loop's ring filled through TMA, against torch. Needs an sm_90 device:
`pytest -m gpu tests/nvidia/test_tma_made_gpu.py`."""

from __future__ import annotations

import pytest
from test_tma_gpu import gpu  # noqa: F401  (the fixture: an sm_90 device)
from tma_made_kernels import MATMULS, copy_made, copy_rows_of_heads, dot_shifted, matmul_made

import tilec
from tilec_nvidia import tma_lowering

torch = pytest.importorskip("torch", reason="needs PyTorch")
pytestmark = [pytest.mark.gpu, pytest.mark.usefixtures("gpu")]

DTYPES = {"fp16": torch.float16, "bf16": torch.bfloat16, "fp32": torch.float32, "i8": torch.int8,
          "fp8e4nv": getattr(torch, "float8_e4m3fn", None)}  # fmt: skip


COPIES = [
    # element, (M, N), row stride ld, block, padding, row shift, column shift, through TMA
    ("fp16", (100, 72), 80, (64, 64), "zero", 0, 0, True),
    ("fp16", (256, 128), 128, (128, 64), "zero", 0, 0, True),
    ("bf16", (50, 96), 96, (32, 32), "zero", 3, 0, True),  # rows before the tensor: filled
    ("fp32", (70, 90), 96, (32, 64), "zero", 0, 0, True),  # two boxes of 32 columns
    ("fp32", (40, 20), 32, (16, 8), "nan", 5, 0, True),
    ("i8", (70, 48), 64, (32, 64), "zero", 0, 0, True),
    ("i8", (33, 300), 304, (16, 128), "zero", 1, 0, True),
    ("fp16", (100, 72), 80, (64, 64), "zero", 0, 4, True),  # off 16 bytes: the masked branch
    ("fp16", (100, 72), 72, (64, 64), "zero", 0, 0, False),  # ld not known 16-divisible
]


def _copy(x, ld, block, padding, shift, column_shift, backend, device):
    rows, columns = x.shape
    grid = (tilec.cdiv(rows + shift, block[0]), tilec.cdiv(columns, block[1]))
    y = torch.full((grid[0] * block[0], grid[1] * block[1]), 7, dtype=x.dtype, device=device)
    copy_made[grid](x, y, rows, columns, ld, y.shape[1], SHIFT=shift, CSHIFT=column_shift,
                    BM=block[0], BN=block[1], PADDING=padding, backend=backend)  # fmt: skip
    return y.cpu()


@pytest.mark.parametrize(("element", "shape", "ld", "block", "padding", "shift", "column_shift",
                          "tma"), COPIES)  # fmt: skip
def test_made_descriptor_loads_match_interp(tma_on, element, shape, ld, block, padding,
                                            shift, column_shift, tma):  # fmt: skip
    torch.manual_seed(0)
    dtype = DTYPES[element]
    rows, columns = shape
    wide = (torch.randn((rows, ld)) * 50).to(dtype)
    signature = {"x_ptr": f"*{element}", "y_ptr": f"*{element}", "M": "i32", "N": "i32",
                 "ld": "i32", "out_ld": "i32"}  # fmt: skip
    out_ld = tilec.cdiv(columns, block[1]) * block[1]
    divisible = [n for n, v in (("M", rows), ("N", columns), ("ld", ld), ("out_ld", out_ld))
                 if v % 16 == 0]  # fmt: skip
    compiled = tilec.compile(copy_made, signature, backend="nvidia",
                             divisibility=["x_ptr", "y_ptr", *divisible],
                             constexprs={"SHIFT": shift, "CSHIFT": column_shift, "BM": block[0],
                                         "BN": block[1], "PADDING": padding})  # fmt: skip
    assert bool(compiled.metadata.get("tensor_maps")) == tma
    got = _copy(wide.cuda()[:, :columns], ld, block, padding, shift, column_shift, "nvidia",
                "cuda")  # fmt: skip
    expected = _copy(wide[:, :columns], ld, block, padding, shift, column_shift, "interp", "cpu")
    if padding == "nan":
        assert torch.equal(got.isnan(), expected.isnan())
        got, expected = got.nan_to_num(0), expected.nan_to_num(0)
    assert torch.equal(got.view(torch.uint8), expected.view(torch.uint8))


@pytest.mark.parametrize(("element", "shape", "block", "stages", "warps", "b_t"), [
    *MATMULS,
    ("fp16", (256, 192, 1000), (64, 64, 32), 3, 4, False),  # a's rows not known aligned: masked
    ("fp16", (384, 200, 520), (128, 128, 64), 4, 8, True),  # none known aligned: masked
])  # fmt: skip
@pytest.mark.parametrize("programs", ["a tile each", "3 programs"])
def test_a_made_descriptor_matmul_matches_torch(tma_on, element, shape, block, stages, warps,
                                               b_t, programs):  # fmt: skip
    """Tutorial 09's device-descriptor persistent matmul: a and b through TMA (the ring where
    pipelined), c through its made descriptor's store; with 3 programs each loops over
    several tiles (the ring's barriers initialized and invalidated each time)."""
    dtype = DTYPES[element]
    (M, N, K), (BM, BN, BK) = shape, block
    torch.manual_seed(3)
    a = torch.randn((M, K), device="cuda").to(dtype)
    b = torch.randn((N, K) if b_t else (K, N), device="cuda").to(dtype)
    c = torch.full((M, N), -1.0, device="cuda", dtype=dtype)
    tiles = tilec.cdiv(M, BM) * tilec.cdiv(N, BN)
    count = tiles if programs == "a tile each" else min(3, tiles)
    meta = dict(BM=BM, BN=BN, BK=BK, PROGRAMS=count, B_T=b_t, num_stages=stages,
                num_warps=warps)  # fmt: skip
    for _ in range(2):  # the second launch from the map cache
        matmul_made[(count,)](a, b, c, M, N, K, backend="nvidia", **meta)
    torch.cuda.synchronize()
    expected = a.float() @ (b.float().T if b_t else b.float())
    torch.testing.assert_close(c.float(), expected, atol=2e-2 * K**0.5, rtol=1e-2)
    signature = {"a_ptr": f"*{element}", "b_ptr": f"*{element}", "c_ptr": f"*{element}",
                 "M": "i32", "N": "i32", "K": "i32"}  # fmt: skip
    divisible = ["a_ptr", "b_ptr", "c_ptr", *(n for n, v in zip("MNK", shape, strict=True)
                                                if v % 16 == 0)]  # fmt: skip
    compiled = tilec.compile(matmul_made, signature, backend="nvidia", divisibility=divisible,
                             constexprs={k: v for k, v in meta.items() if k.isupper()},
                             num_stages=stages, num_warps=warps)  # fmt: skip
    # each operand through TMA where its row stride is known to be a multiple of 16
    claimed = [K % 16 == 0, (K if b_t else N) % 16 == 0, tma_lowering.STORES and N % 16 == 0]
    maps = compiled.metadata.get("tensor_maps", [])
    assert [m["base"] for m in maps] == [i for i, taken in enumerate(claimed) if taken]


@pytest.mark.parametrize("shift", [0, 4, 8, 12])
def test_a_pipelined_load_off_16_bytes_matches_torch(tma_on, shift):
    """a's blocks start `shift` columns past each multiple of BK: off a 16-byte boundary (4 and
    12 halves) its ring keeps cp.async (TMA would raise an illegal instruction), else TMA."""
    torch.manual_seed(4)
    M, N, K = 192, 128, 264
    a = torch.randn((M, K), device="cuda").half()
    b = torch.randn((K, N), device="cuda").half()
    c = torch.full((M, N), -1.0, device="cuda")
    grid = (tilec.cdiv(M, 64), tilec.cdiv(N, 64))
    dot_shifted[grid](a, b, c, M, N, K, SHIFT=shift, BM=64, BN=64, BK=32, num_stages=3,
                      backend="nvidia")  # fmt: skip
    torch.cuda.synchronize()
    expected = a[:, shift:].float() @ b[: K - shift].float()
    torch.testing.assert_close(c, expected, atol=1e-2 * K**0.5, rtol=1e-2)


@pytest.mark.parametrize(("Z", "H", "N"), [(2, 3, 100), (1, 4, 64)])
def test_a_size_made_as_a_product_matches_torch(tma_on, Z, H, N):
    """Rows Z * H * N of a (Z, H, N, 64) tensor (the fused-attention tutorial's y_dim) through
    a made descriptor, the last block partly past the product: its rows filled with zeros."""
    torch.manual_seed(5)
    x = torch.randn((Z, H, N, 64), device="cuda").half()
    y = torch.full_like(x, 7.0)
    rows = Z * H * N
    copy_rows_of_heads[(tilec.cdiv(rows, 64),)](x, y, Z, H, N, D=64, BM=64, backend="nvidia")
    torch.cuda.synchronize()
    assert torch.equal(y, x)
