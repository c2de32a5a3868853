"""Warp-specialized TMA matmuls on the GPU (docs/tma.md step 5): `tl.range(...,
warp_specialize=True)` with `TILEC_NVIDIA_WARP_SPECIALIZE=1`, against the same kernel without
the hint (the consumers run the same wgmmas in the same order: equal bit for bit) and against
torch; several stage counts, warps, ragged and empty K, waves of blocks, and persistent kernels
(the hint on the tile loop: the tile-loop form) against torch. Needs an sm_90 device:
`pytest -m gpu tests/nvidia/test_warp_specialize_gpu.py`."""

from __future__ import annotations

import pytest
from test_tma_gpu import gpu  # noqa: F401  (the sm_90 device fixture)
from test_warp_specialize import ws_matmul, ws_persistent

import tilec
from tilec import TensorDescriptor

torch = pytest.importorskip("torch", reason="needs PyTorch")
pytestmark = [pytest.mark.gpu, pytest.mark.usefixtures("gpu")]


@pytest.fixture
def ws_on(tma_on, monkeypatch):
    monkeypatch.setenv("TILEC_NVIDIA_WARP_SPECIALIZE", "1")


CASES = [
    # (M, N, K), (BM, BN, BK), num_warps, num_stages, dtype
    ((256, 192, 1000), (64, 64, 64), 4, 2, "float16"),  # K not a multiple of BK
    ((200, 72, 520), (64, 64, 64), 4, 3, "bfloat16"),  # ragged M and N
    ((128, 64, 4096), (64, 64, 64), 4, 4, "float16"),  # a long K: the phases wrap often
    ((300, 260, 16), (64, 64, 64), 4, 3, "float16"),  # one iteration
    ((128, 128, 0), (64, 64, 64), 4, 3, "float16"),  # no iteration: the producer issues none
    ((384, 256, 520), (128, 128, 64), 8, 4, "float16"),  # the benchmark's, setmaxnreg
    ((256, 512, 1064), (128, 256, 64), 8, 3, "float16"),  # wgmma N = 256, a 32 KB B box
    ((512, 384, 520), (128, 128, 64), 4, 3, "bfloat16"),  # 128x128 on 4 consumer warps
    ((2048, 2048, 520), (128, 128, 64), 8, 4, "float16"),  # waves of blocks
]


def _run(a, b, block, warps, stages, ws, K=None):
    (M, columns), N = a.shape, b.shape[0]
    K = columns if K is None else K
    BM, BN, BK = block
    c = torch.full((M, N), -1.0, device="cuda")
    grid = (tilec.cdiv(M, BM), tilec.cdiv(N, BN))
    ws_matmul[grid](
        TensorDescriptor.from_tensor(a, [BM, BK]), TensorDescriptor.from_tensor(b, [BN, BK]), c,
        M, N, K, BM=BM, BN=BN, BK=BK, WS=ws, backend="nvidia", num_warps=warps,
        num_stages=stages,
    )  # fmt: skip
    torch.cuda.synchronize()
    return c


@pytest.mark.parametrize(("shape", "block", "warps", "stages", "dtype"), CASES)
def test_a_warp_specialized_matmul_equals_the_pipelined_one(ws_on, shape, block, warps,
                                                            stages, dtype):  # fmt: skip
    M, N, K = shape
    torch.manual_seed(3)
    columns = max(K, 64)  # K = 0: a zero-trip loop over tensors of 64 columns (a map's minimum)
    a = torch.randn((M, columns), device="cuda").to(getattr(torch, dtype))
    b = torch.randn((N, columns), device="cuda").to(getattr(torch, dtype))
    a[:, K:], b[:, K:] = 0, 0  # the loop's one block reads the tensor's 64 columns past K
    specialized = _run(a, b, block, warps, stages, True, K)
    plain = _run(a, b, block, warps, stages, False, K)
    assert torch.equal(specialized, plain)
    expected = a[:, :K].float() @ b[:, :K].float().T
    torch.testing.assert_close(specialized, expected, atol=1e-2 * max(K, 1) ** 0.5, rtol=1e-2)


def test_the_compiled_kernel_is_specialized(ws_on):
    """The cases above run the specialized form (the PTX test's facts, on the device's arch)."""
    a = torch.randn((128, 128), device="cuda").half()
    b = torch.randn((128, 128), device="cuda").half()
    c = _run(a, b, (128, 128, 64), 8, 4, True)
    torch.testing.assert_close(c, a.float() @ b.float().T, atol=0.2, rtol=1e-2)
    compiled = tilec.compile(
        ws_matmul,
        {"a_desc": "tensordesc<fp16[128, 64]>", "b_desc": "tensordesc<fp16[128, 64]>",
         "c_ptr": "*fp32", "M": "i32", "N": "i32", "K": "i32"},
        constexprs={"BM": 128, "BN": 128, "BK": 64, "WS": True}, backend="nvidia",
        target="sm_90a", num_warps=8, num_stages=4,
    )  # fmt: skip
    assert compiled.metadata["num_warps"] == 12
    assert "setmaxnreg" in compiled.asm["ptx"]


PERSISTENT = [
    # (M, N, K), (BM, BN, BK), num_warps, num_stages, programs
    ((640, 384, 520), (128, 128, 64), 8, 3, 3),  # several tiles a program, setmaxnreg
    ((640, 384, 520), (128, 128, 64), 8, 4, 132),  # a tile a program, some none
    ((1000, 700, 1000), (64, 64, 64), 4, 2, 7),  # the K loop synchronous: no guard
    ((1000, 700, 1000), (64, 64, 64), 4, 4, 16),  # the phases wrap across tiles
    ((256, 256, 16), (64, 64, 64), 4, 3, 5),  # one K iteration a tile
    ((256, 256, 0), (64, 64, 64), 4, 3, 5),  # none: the last slot is never released
]


@pytest.mark.parametrize(("shape", "block", "warps", "stages", "programs"), PERSISTENT)
def test_a_persistent_warp_specialized_matmul_matches_torch(ws_on, shape, block, warps,
                                                           stages, programs):  # fmt: skip
    """The hint on the tile loop (Triton's persistent tutorial): the producer runs ahead across
    tiles while the consumers store the previous tile."""
    (M, N, K), (BM, BN, BK) = shape, block
    torch.manual_seed(4)
    columns = max(K, 64)
    a = torch.randn((M, columns), device="cuda").half()
    b = torch.randn((N, columns), device="cuda").half()
    a[:, K:], b[:, K:] = 0, 0  # a tile's one block reads the tensor's 64 columns past K
    c = torch.full((M, N), -1.0, device="cuda")
    ws_persistent[(programs,)](
        TensorDescriptor.from_tensor(a, [BM, BK]), TensorDescriptor.from_tensor(b, [BN, BK]),
        c, M, N, K, BM=BM, BN=BN, BK=BK, PROGRAMS=programs, backend="nvidia", num_warps=warps,
        num_stages=stages,
    )  # fmt: skip
    torch.cuda.synchronize()
    expected = a[:, :K].float() @ b[:, :K].float().T
    torch.testing.assert_close(c, expected, atol=1e-2 * max(K, 1) ** 0.5, rtol=1e-2)
