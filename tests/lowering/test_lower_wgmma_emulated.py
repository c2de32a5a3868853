"""wgmma kernels run on the CPU: the sm_90a gir of matmuls lowered with the emulated `wgmma`
(`wgmma_emulator`: descriptors, canonical layouts and swizzles decoded from the PTX ISA's
definitions, apart from tilec's `NvmmaTile`) and `cp.async` (`mma_emulator`), against NumPy.
Each path of the lowering's operands: K-major and MN-major (transposed) shared-memory tiles,
32/64/128-byte swizzles, f16, bf16 and tf32 (K-major only, B's ring stored transposed and filled
by 4-byte copies), the pipeline's rings and the dot's own stores (1 stage), A from registers."""

from __future__ import annotations

import numpy as np
import pytest
from cpu_emulator import compile_kernel, launch
from test_lower_mma import _bits, _floats
from test_lower_pipeline import compiled, tutorial_kernel
from test_lower_wgmma import _chained, _transposed
from wgmma_emulator import WgmmaHostTargetInfo

from tilec.ir.parser import parse_module
from tilec.lowering import lower_module
from tilec_interp.dtypes import tf32_truncate

RNG = np.random.default_rng(90)


def run_emulated(kernel, args: list, grid: tuple[int, ...]) -> None:
    assert "gpu.warp_group_dot" in kernel.asm["gir"]
    module = parse_module(kernel.asm["gir"], "k.gir")
    lowered = lower_module(module, WgmmaHostTargetInfo(), kernel.metadata["kernel"])
    launch(compile_kernel(lowered.llvm_ir, lowered.name), lowered.params, args, grid,
           lowered.num_warps * 32)  # fmt: skip


def _operands(dtype: str, m: int, n: int, k: int):
    """Inputs as stored and as the tensor cores read them (f64)."""
    a, b = RNG.standard_normal((m, k)), RNG.standard_normal((k, n))
    if dtype == "fp32":
        a, b = a.astype(np.float32), b.astype(np.float32)
        return a, b, tf32_truncate(a).astype(np.float64), tf32_truncate(b).astype(np.float64)
    a, b = _bits(a, dtype), _bits(b, dtype)
    return a, b, _floats(a, dtype).astype(np.float64), _floats(b, dtype).astype(np.float64)


CASES = [  # dtype, num_stages, (BLOCK_M, BLOCK_N, BLOCK_K), num_warps, (M, N, K)
    ("fp16", 3, (64, 64, 32), 4, (80, 96, 80)),  # A K-major, B MN-major; 64-byte swizzles
    ("bf16", 3, (128, 64, 64), 8, (128, 64, 144)),  # 8 warps along M: two warpgroups
    ("fp16", 1, (64, 64, 64), 4, (64, 64, 64)),  # unpipelined: the dot stores its operands
    ("fp32", 3, (64, 64, 32), 4, (80, 96, 80)),  # tf32: m64n64k8, B stored transposed
    ("fp32", 3, (64, 128, 16), 4, (64, 128, 48)),  # tf32, 64-byte swizzles
    ("fp32", 1, (64, 64, 32), 4, (64, 64, 64)),  # tf32 unpipelined: B stored K-major by the dot
    ("fp32", 2, (128, 64, 8), 8, (128, 64, 24)),  # tf32, 32-byte swizzles
]


@pytest.mark.parametrize(("dtype", "stages", "blocks", "warps", "sizes"), CASES)
def test_wgmma_matmul_on_the_emulator(dtype, stages, blocks, warps, sizes):
    m, n, k = sizes
    kernel = compiled(tutorial_kernel, stages, blocks, warps, target="sm_90a", dtype=dtype)
    a, b, a64, b64 = _operands(dtype, m, n, k)
    c = np.full(m * n, np.nan, np.float32)
    grid = (-(-m // blocks[0]), -(-n // blocks[1]))
    run_emulated(kernel, [a.reshape(-1), b.reshape(-1), c, m, n, k, k, 1, n, 1], grid)
    np.testing.assert_allclose(c.reshape(m, n), a64 @ b64, rtol=1e-5, atol=1e-4)


@pytest.mark.parametrize("dtype", ["fp16", "fp32"])
@pytest.mark.parametrize("column_major_a", [False, True])
def test_transposed_operands_on_the_emulator(column_major_a: bool, dtype: str):
    """B as `tl.trans` of an N x K load (K-major B), A column-major (MN-major A for f16; for
    tf32, which wgmma reads K-major only, A's ring is stored transposed by 4-byte copies)."""
    m, n, k = 64, 64, 96
    kernel = _transposed(3, (64, 64, 32), 4, column_major_a, dtype=dtype)
    a, b, a64, b64 = _operands(dtype, m, n, k)
    c = np.full(m * n, np.nan, np.float32)
    a_memory = np.ascontiguousarray(a.T) if column_major_a else a
    strides_a = (1, m) if column_major_a else (k, 1)
    b_t = np.ascontiguousarray(b.T)
    run_emulated(kernel, [a_memory.reshape(-1), b_t.reshape(-1), c, m, n, k, *strides_a, 1, k],
                 (1, 1))  # fmt: skip
    np.testing.assert_allclose(c.reshape(m, n), a64 @ b64, rtol=1e-5, atol=1e-4)


@pytest.mark.parametrize("block_d", [64, 128])
def test_a_in_registers_on_the_emulator(block_d):
    """The second dot's A computed in registers (attention's p): wgmma's register form, packed
    between the wgmmas (N = 64) or all before the fence (N = 128)."""
    n, block_m = 128, 64
    a, b, a64, b64 = _operands("fp16", block_m, n, 64)
    c = _bits(RNG.standard_normal((n, block_d)), "fp16")
    out = np.full(block_m * block_d, np.nan, np.float32)
    kernel = _chained(1, block_d=block_d)
    run_emulated(kernel, [a.reshape(-1), b.reshape(-1), c.reshape(-1), out, n], (1,))
    c64 = _floats(c, "fp16").astype(np.float64)
    expected = np.zeros((block_m, block_d))
    for j in range(0, n, 64):
        p = (a64 @ b64[:, j : j + 64] * 0.5).astype(np.float16).astype(np.float64)
        expected += p @ c64[j : j + 64]
    np.testing.assert_allclose(out.reshape(block_m, block_d), expected, rtol=1e-3, atol=2e-2)


def test_the_emulator_sees_a_wrong_swizzle():
    """The emulator decodes the swizzle itself: a descriptor claiming another swizzle mode than
    the tile was stored with gives wrong products (so the tests above can fail)."""
    import tilec_nvidia.wgmma_lowering as lowering

    m, n, k = 64, 64, 64
    kernel = compiled(tutorial_kernel, 3, (64, 64, 64), 4, target="sm_90a", dtype="fp16")
    a, b, a64, b64 = _operands("fp16", m, n, k)
    c = np.full(m * n, np.nan, np.float32)
    modes = dict(lowering.SWIZZLE_MODE)
    try:
        lowering.SWIZZLE_MODE.update({128: 2, 64: 3, 32: 1})
        run_emulated(kernel, [a.reshape(-1), b.reshape(-1), c, m, n, k, k, 1, n, 1], (1, 1))
    finally:
        lowering.SWIZZLE_MODE.update(modes)
    assert not np.allclose(c.reshape(m, n), a64 @ b64, rtol=1e-3, atol=1e-2)
