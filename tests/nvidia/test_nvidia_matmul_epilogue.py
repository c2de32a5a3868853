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

import tilec
import tilec.language as tl
from tilec.runtime import check

sys.path.insert(0, str(Path(__file__).parent.parent / "lowering"))
from test_lower_mma import _bits, _floats

pytestmark = pytest.mark.gpu

SWEEP_KERNELS = Path(__file__).resolve().parents[2] / "benchmarks" / "sweep_kernels.py"
RNG = np.random.default_rng(23)
STRIDES = [f"stride_{t}{d}" for t, dims in (("a", "zmk"), ("b", "zkn"), ("c", "zmn")) for d in dims]
CASES = [  # (M, N, K), dtype of A, B and C, (BLOCK_M, BLOCK_N, BLOCK_K), warps, stages, bias
    ((512, 512, 256), "fp16", (128, 256, 64), 8, 3, False),  # short K: four k-blocks
    ((64, 1024, 512), "bf16", (128, 128, 64), 8, 3, False),  # skinny M: half a tile of rows
    ((384, 320, 192), "fp16", (128, 256, 64), 8, 3, True),  # bias + ReLU, ragged N
    ((200, 136, 96), "fp16", (64, 64, 32), 4, 2, True),  # one warpgroup, ragged M and N
    ((100, 72, 80), "fp16", (32, 64, 32), 4, 2, True),  # M below 64: mma.sync
    ((256, 256, 128), "fp32-out", (128, 128, 64), 8, 3, False),  # f32 C: no cast to narrow
]


def sweep_matmul():
    """benchmarks/sweep_kernels.py's sweep_matmul with tilec's `jit` and `tl`, as the sweep
    executes it."""
    namespace = {"jit": tilec.jit, "tl": tl, "__name__": "sweep_kernels_tilec"}
    exec(compile(SWEEP_KERNELS.read_text(), str(SWEEP_KERNELS), "exec"), namespace)
    return namespace["sweep_matmul"]


@pytest.mark.parametrize(("sizes", "dtype", "blocks", "warps", "stages", "bias"), CASES)
def test_sweep_matmul_epilogues(sizes, dtype, blocks, warps, stages, bias):
    m, n, k = sizes
    operand = "fp16" if dtype == "fp32-out" else dtype
    out = "fp32" if dtype == "fp32-out" else dtype
    block_m, block_n, block_k = blocks
    strides = dict(zip(STRIDES, (m * k, k, 1, k * n, n, 1, m * n, n, 1), strict=True))
    signature = {"a_ptr": f"*{operand}", "b_ptr": f"*{operand}", "c_ptr": f"*{out}",
                 "bias_ptr": f"*{out}", **dict.fromkeys(("M", "N", "K", *STRIDES), "i32")}  # fmt: skip
    constexprs = dict(BLOCK_M=block_m, BLOCK_N=block_n, BLOCK_K=block_k, GROUP_M=8,
                      BIAS_RELU=bias)  # fmt: skip
    sizes16 = [
        name for name, value in {"M": m, "N": n, "K": k, **strides}.items() if value % 16 == 0
    ]
    divisible = ["a_ptr", "b_ptr", "c_ptr", "bias_ptr", *sizes16]
    unit = [name for name, value in strides.items() if value == 1]
    kernel_fn = sweep_matmul()

    def compiled(backend: str):
        return tilec.compile(kernel_fn, signature, constexprs, backend=backend,
                             num_warps=warps, num_stages=stages, divisibility=divisible,
                             equal_to_1=unit)  # fmt: skip

    kernel = compiled("nvidia")
    ptx = kernel.asm["ptx"]
    if ".target sm_90" in ptx and out != "fp32":
        assert "stmatrix.sync.aligned.m8n8.x4.shared.b16" in ptx, "the epilogue has no stmatrix"
    a, b = _bits(RNG.standard_normal((m, k)), operand), _bits(RNG.standard_normal((k, n)), operand)
    bias_values = RNG.standard_normal(n).astype(np.float32)
    if out != "fp32":
        bias_values = _bits(bias_values, out)
    c = np.zeros(m * n, np.float32 if out == "fp32" else np.uint16 if out == "bf16" else np.float16)
    args = [a.reshape(-1), b.reshape(-1), c, bias_values, m, n, k, *strides.values()]
    grid = (-(-m // block_m) * -(-n // block_n), 1)
    check.run_checked(kernel, grid, args, lambda: compiled("interp"))
    expected = _floats(a, operand).astype(np.float64) @ _floats(b, operand).astype(np.float64)
    if bias:
        bias64 = bias_values if out == "fp32" else _floats(bias_values, out)
        expected = np.maximum(expected + bias64.astype(np.float64), 0.0)
    got = c.astype(np.float64) if out == "fp32" else _floats(c, out).astype(np.float64)
    tol = 1e-3 if out == "fp32" else 1e-2
    np.testing.assert_allclose(got.reshape(m, n), expected, rtol=tol, atol=tol * 8)
