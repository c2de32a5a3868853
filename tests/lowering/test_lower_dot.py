"""`tile.dot` lowering (FMA through shared memory, an LLVM loop over K)."""

from __future__ import annotations

import numpy as np
import pytest
from gir_check import KINDS, compare_with_interp, module, ptx_of, runner

from tilec.lowering import lower_module
from tilec_nvidia.target_info import NvidiaTargetInfo

RNG = np.random.default_rng(2)


def test_f32_dot_is_a_k_loop_of_fmas_over_shared_memory():
    ptx = ptx_of("dot-f32.gir")
    assert ptx.count("fma.rn.f32") == 32 * 8  # 32 accumulators, K unrolled by 8
    assert "ld.shared.b32" in ptx and "bar.sync" in ptx
    lowered = lower_module(module("dot-f32.gir"), NvidiaTargetInfo(), "dot_f32")
    assert lowered.shared_bytes == (64 * 32 + 32 * 64) * 4
    assert "dot.k:" in lowered.llvm_ir


@pytest.mark.parametrize("kind", KINDS)
def test_f32_dot_with_accumulator(kind: str):
    a, b = RNG.standard_normal(64 * 32, np.float32), RNG.standard_normal(32 * 64, np.float32)
    c = RNG.standard_normal(64 * 64, np.float32)
    got = compare_with_interp("dot-f32.gir", [a, b, c], rtol=1e-5, atol=1e-5, run=runner(kind))
    expected = a.reshape(64, 32).astype(np.float64) @ b.reshape(32, 64) + c.reshape(64, 64)
    np.testing.assert_allclose(got[2].reshape(64, 64), expected, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("kind", KINDS)
def test_f16_dot_rounds_as_the_interpreter(kind: str):
    """The f32 sums round to f16 once, then add to the f16 accumulator. The FMA loop (and the
    GPU's tensor cores) add the f32 products in their own order and the interpreter rounds
    their exact sum once, so the sums may round to neighbouring f16 values (one f16 ulp of the
    sum, which may be larger than the result's), and the add rounds once more (one ulp of the
    result); each side is nearest the exact value somewhere: the error says which. The H200
    gave 1.92578125 where the interpreter gave 1.927734375 (exact 1.92627: the GPU nearer)."""
    a, b = (RNG.standard_normal(2048).astype(np.float16) for _ in range(2))
    c = RNG.standard_normal(64 * 64).astype(np.float16)
    sums = a.astype(np.float64).reshape(64, 32) @ b.astype(np.float64).reshape(32, 64)
    exact = (sums + c.reshape(64, 64)).reshape(-1)
    sum_ulps = np.spacing(np.abs(sums).reshape(-1).astype(np.float16)).astype(np.float64)
    compare_with_interp("dot-f16.gir", [a, b, c], run=runner(kind), rtol=2.0**-10,
                        atol={2: sum_ulps + 2.0**-14}, exact={2: exact})  # fmt: skip
    assert "cvt.rn.f16.f32" in ptx_of("dot-f16.gir")
