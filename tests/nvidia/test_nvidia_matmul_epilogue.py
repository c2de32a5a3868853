"""On the GPU: the sweep's matmul (benchmarks/sweep_kernels.py, the source both compilers get)
at the shapes of issue 23's epilogue work, against the interpreter (`check.run_checked`) and
NumPy: short K, skinny M, a bias + ReLU epilogue with ragged N, an f32 C (no narrowing cast), and
an mma.sync tile. Their epilogues round the accumulator to f16/bf16 in the tensor-core layout,
then cross the swizzled scratch buffer, with stmatrix on sm_90 (tests/lowering/
test_scratch_swizzle.py runs the same epilogue on the CPU emulator)."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

from tilec.runtime import check

sys.path.insert(0, str(Path(__file__).parent.parent / "lowering"))
from sweep_matmul_case import case_arrays, compile_case

pytestmark = pytest.mark.gpu

CASES = [  # (M, N, K), dtype of A, B and C, (BLOCK_M, BLOCK_N, BLOCK_K), warps, stages, bias
    ((512, 512, 256), "fp16", (128, 256, 64), 8, 3, False),  # short K: four k-blocks
    ((64, 1024, 512), "bf16", (128, 128, 64), 8, 3, False),  # skinny M: half a tile of rows
    ((384, 320, 192), "fp16", (128, 256, 64), 8, 3, True),  # bias + ReLU, ragged N
    ((200, 136, 96), "fp16", (64, 64, 32), 4, 2, True),  # one warpgroup, ragged M and N
    ((100, 72, 80), "fp16", (32, 64, 32), 4, 2, True),  # M below 64: mma.sync
    ((256, 256, 128), "fp32-out", (128, 128, 64), 8, 3, False),  # f32 C: no cast to narrow
]
RNG = np.random.default_rng(23)


@pytest.mark.parametrize(("sizes", "dtype", "blocks", "warps", "stages", "bias"), CASES)
def test_sweep_matmul_epilogues(sizes, dtype, blocks, warps, stages, bias):
    operand = "fp16" if dtype == "fp32-out" else dtype
    out = "fp32" if dtype == "fp32-out" else dtype

    def compiled(backend: str):
        return compile_case(sizes, operand, out, blocks, warps, stages, bias, backend=backend)

    kernel = compiled("nvidia")
    ptx = kernel.asm["ptx"]
    if ".target sm_90" in ptx and out != "fp32":
        assert "stmatrix.sync.aligned.m8n8.x4.shared.b16" in ptx, "the epilogue has no stmatrix"
    args, grid, results = case_arrays(RNG, sizes, operand, out, blocks)
    check.run_checked(kernel, grid, args, lambda: compiled("interp"))
    expected, got = results(bias)
    tol = 1e-3 if out == "fp32" else 1e-2
    np.testing.assert_allclose(got, expected, rtol=tol, atol=tol * 8)
