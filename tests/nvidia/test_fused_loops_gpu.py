"""`tl.range(..., flatten=True)` on the GPU: the benchmark's persistent matmuls
(benchmarks/persistent_vs_triton.py) with their tile loop and K loop fused (`fuse-nested-loops`)
and pipelined across tiles, against torch: pointer loads through cp.async rings, and
descriptors made in the kernel through TMA rings with the tile stored through its descriptor
(the fused loop's epilogue). Needs an sm_90 device: `pytest -m gpu
tests/nvidia/test_fused_loops_gpu.py`."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from test_tma_gpu import gpu  # noqa: F401  (the fixture: an sm_90 device)

import tilec
import tilec.language as tl
from tilec.dialects.scf import ForOp
from tilec.ir.parser import parse_module

sys.path.insert(0, str(Path(__file__).parent.parent / "lowering"))
from fused_loops_kernels import persistent_matmul as pointers
from fused_loops_kernels import tile_of

torch = pytest.importorskip("torch", reason="needs PyTorch")
pytestmark = [pytest.mark.gpu, pytest.mark.usefixtures("gpu")]


@tilec.jit
def made(a_ptr, b_ptr, c_ptr, M, N, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr,
         PROGRAMS: tl.constexpr):  # fmt: skip
    a_desc = tl.make_tensor_descriptor(a_ptr, shape=[M, K], strides=[K, 1], block_shape=[BM, BK])
    b_desc = tl.make_tensor_descriptor(b_ptr, shape=[N, K], strides=[K, 1], block_shape=[BN, BK])
    c_desc = tl.make_tensor_descriptor(c_ptr, shape=[M, N], strides=[N, 1], block_shape=[BM, BN])
    num_m = tl.cdiv(M, BM)
    num_n = tl.cdiv(N, BN)
    for tile in tl.range(tl.program_id(0), num_m * num_n, PROGRAMS, flatten=True):
        pid_m, pid_n = tile_of(tile, num_m, num_n, 8)
        acc = tl.zeros((BM, BN), dtype=tl.float32)
        for k in range(0, tl.cdiv(K, BK)):
            a = a_desc.load([pid_m * BM, k * BK])
            b = b_desc.load([pid_n * BN, k * BK])
            acc = tl.dot(a, b.T, acc)
        c_desc.store([pid_m * BM, pid_n * BN], acc.to(tl.float16))


CASES = [  # (M, N, K), (BM, BN, BK), warps, stages, programs
    ((512, 768, 640), (64, 64, 32), 4, 3, 5),
    ((1024, 1024, 1024), (128, 256, 64), 8, 3, 7),  # the benchmark's widest config
    ((768, 512, 528), (128, 128, 64), 8, 4, 3),  # K ragged
    ((2048, 2048, 512), (128, 128, 64), 4, 3, 132),  # 2 blocks an SM, one program an SM
    ((256, 384, 0), (128, 128, 64), 8, 3, 2),  # K = 0: the nest without its K loop
]


@pytest.mark.parametrize("kernel", [pointers, made], ids=["pointers", "made descriptors"])
@pytest.mark.parametrize(("shape", "block", "warps", "stages", "programs"), CASES)
def test_fused_persistent_matmul_matches_torch(kernel, shape, block, warps, stages, programs):
    (M, N, K), (BM, BN, BK) = shape, block
    if K == 0 and kernel is made:
        pytest.skip("a tensor map takes no dimension of size 0")
    torch.manual_seed(23)
    a = torch.randn((M, K), device="cuda").half()
    b = torch.randn((N, K), device="cuda").half()  # N x K, as the benchmark's
    c = torch.full((M, N), float("nan"), device="cuda", dtype=torch.float16)
    meta = dict(BM=BM, BN=BN, BK=BK, PROGRAMS=programs, num_warps=warps, num_stages=stages)
    for _ in range(2):
        kernel[(programs,)](a, b, c, M, N, K, backend="nvidia", **meta)
    torch.cuda.synchronize()
    expected = (a.float() @ b.float().T).half()
    torch.testing.assert_close(c.float(), expected.float(), atol=2e-2 * max(K, 1) ** 0.5, rtol=1e-2)
    signature = {"a_ptr": "*fp16", "b_ptr": "*fp16", "c_ptr": "*fp16", "M": "i32", "N": "i32",
                 "K": "i32"}  # fmt: skip
    compiled = tilec.compile(kernel, signature, {k: v for k, v in meta.items() if k.isupper()},
                             backend="nvidia", divisibility=list(signature), num_warps=warps,
                             num_stages=stages)  # fmt: skip
    loops = [op for op in parse_module(compiled.asm["gir"], "k.gir").walk()
             if isinstance(op, ForOp)]  # fmt: skip
    assert not any(o is not p and p.is_ancestor_of(o) for p in loops for o in loops)  # fused
