"""Host-side tensor descriptors (`tilec.TensorDescriptor`, Triton's
`triton.tools.tensor_descriptor`) on an NVIDIA GPU: CUDA torch tensors, `tilec.to_device` arrays
and NumPy arrays as bases, checked against torch; a parameter given a pointer and a descriptor
on alternate launches."""

from __future__ import annotations

import numpy as np
import pytest
from tma_kernels import matmul_descriptors

import tilec
import tilec.language as tl
from tilec import TensorDescriptor

torch = pytest.importorskip("torch", reason="needs PyTorch")
pytestmark = pytest.mark.gpu


@pytest.mark.parametrize(("M", "N", "K"), [(128, 128, 64), (200, 72, 104)])
def test_matmul_through_descriptors_matches_torch(M, N, K):
    torch.manual_seed(0)
    a = torch.randn((M, K), device="cuda", dtype=torch.float16)
    b = torch.randn((K, N), device="cuda", dtype=torch.float16)
    wide = torch.full((M, N + 8), -1.0, device="cuda", dtype=torch.float16)
    c = wide[:, :N]  # a strided view: its rows are N + 8 apart
    BM, BN, BK = 64, 64, 32
    grid = (tilec.cdiv(M, BM), tilec.cdiv(N, BN))
    for _ in range(2):
        matmul_descriptors[grid](
            TensorDescriptor.from_tensor(a, [BM, BK]), TensorDescriptor.from_tensor(b, [BK, BN]),
            TensorDescriptor(c, [M, N], [N + 8, 1], [BM, BN]), K, BM=BM, BN=BN, BK=BK,
            backend="nvidia",
        )  # fmt: skip
    torch.cuda.synchronize()
    torch.testing.assert_close(c, (a.float() @ b.float()).half(), atol=1e-2, rtol=1e-2)
    assert (wide[:, N:] == -1).all()


@tilec.jit
def add_one(x, y_ptr, M, N: tl.constexpr, BM: tl.constexpr):
    if isinstance(x, tl.tensor_descriptor):
        desc = x
    else:
        desc = tl.make_tensor_descriptor(x, [M, N], [N, 1], [BM, N])
    rows = tl.program_id(0) * BM + tl.arange(0, BM)
    block = desc.load([tl.program_id(0) * BM, 0])
    tl.store(y_ptr + rows[:, None] * N + tl.arange(0, N)[None, :], block + 1,
             mask=rows[:, None] < M)  # fmt: skip


def test_pointer_and_descriptor_launches_alternate():
    M, N, BM = 100, 32, 32
    x = torch.randn((M, N), device="cuda")
    desc = TensorDescriptor.from_tensor(x, [BM, N])
    for arg in [x, x, desc, x, desc, desc, x]:
        y = torch.zeros_like(x)
        add_one[(tilec.cdiv(M, BM),)](arg, y, M, N=N, BM=BM, backend="nvidia")
        torch.cuda.synchronize()
        torch.testing.assert_close(y, x + 1)


@pytest.mark.parametrize("kind", ["device", "numpy"])
def test_device_and_numpy_arrays_as_bases(kind):
    M, N, BM = 64, 32, 32
    x_host = np.random.default_rng(0).standard_normal((M, N)).astype(np.float32)
    y_host = np.zeros((M, N), np.float32)
    x = tilec.to_device(x_host, "nvidia") if kind == "device" else x_host
    add_one[(M // BM,)](TensorDescriptor.from_tensor(x, [BM, N]), y_host, M, N=N, BM=BM,
                        backend="nvidia")  # fmt: skip
    np.testing.assert_allclose(y_host, x_host + 1, rtol=1e-6)
