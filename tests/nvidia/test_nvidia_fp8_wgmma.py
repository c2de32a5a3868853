"""On the GPU: float8 matmuls (e4m3, e5m2 and mixed pairs) against the interpreter
(`check.run_checked`, --check's path, with its float8 dot tolerance) and against NumPy. On
sm_90a they multiply on wgmma (`m64nNk32`, tests/lowering/test_lower_wgmma_fp8.py checks the
same kernels on the CPU emulator), whose accumulation keeps about 14 bits of the sum, as
Triton's; elsewhere they compute in f16 with f32 sums. Shapes: ragged M and N, K not a multiple
of 128 (and one not a multiple of 16, whose copies are not cp.async vectors), B K-major or
row-major in memory, 2 and 3 stages, 4 and 8 warps, and `max_num_imprecise_acc`; and float8
mma.sync (sm_89 and later) through a compile for sm_90, whose cubin runs on the H100 too."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

import tilec
from tilec.runtime import check

sys.path.insert(0, str(Path(__file__).parent.parent / "lowering"))
from fp8_matmul_kernels import compile_fp8, float8_codes, float8_values, matmul_args

pytestmark = pytest.mark.gpu

PAIRS = [("fp8e4nv", "fp8e4nv"), ("fp8e5", "fp8e5"), ("fp8e4nv", "fp8e5"), ("fp8e5", "fp8e4nv")]
PTX_TYPES = {"fp8e4nv": "e4m3", "fp8e5": "e5m2"}
CASES = [  # (M, N, K), (BLOCK_M, BLOCK_N, BLOCK_K), warps, stages, B K-major, K divisible by 16
    ((256, 256, 1040), (128, 128, 64), 4, 3, True, True),  # K = 16 * 65: not a multiple of 128
    ((200, 136, 1024), (128, 256, 128), 8, 3, True, True),  # ragged M, N; m64n256k32
    ((128, 192, 336), (64, 64, 32), 4, 2, True, True),  # 32-byte swizzles
    ((192, 128, 528), (128, 128, 64), 4, 3, False, True),  # B row-major: stored transposed
    ((130, 70, 1000), (64, 64, 64), 4, 3, True, False),  # K = 1000: byte copies
]


def _run(rng, a_type, b_type, sizes, blocks, warps, stages, b_k_major, divisible,
         imprecise=None, backend="nvidia", target=None):  # fmt: skip
    """Run the matmul on `backend` (checked against the interpreter; `target`: the device's
    where None); its C and NumPy's."""
    m, n, k = sizes
    a, b = float8_codes(rng, (m, k), a_type), float8_codes(rng, (k, n), b_type)
    args = matmul_args(a, b, m, n, k, b_k_major)

    def compiled(name: str, target=None):
        return compile_fp8(a_type, b_type, blocks, warps, stages, b_k_major, imprecise,
                           target=target, backend=name, divisible=divisible)  # fmt: skip

    kernel = compiled(backend, target)
    pair = f"{PTX_TYPES[a_type]}.{PTX_TYPES[b_type]}"
    if backend == "nvidia" and ".target sm_90a" in kernel.asm["ptx"]:
        assert f"k32.f32.{pair}" in kernel.asm["ptx"], "not on float8 wgmma"
    elif target == "sm_90":
        assert f"m16n8k32.row.col.f32.{pair}.f32" in kernel.asm["ptx"], "not on float8 mma.sync"
    grid = (-(-m // blocks[0]), -(-n // blocks[1]))
    check.run_checked(kernel, grid, args, lambda: compiled("interp"))
    expected = float8_values(a, a_type) @ float8_values(b, b_type)
    return args[2].reshape(m, n), expected


def _close(c, expected, per_magnitude: float) -> None:
    """Within `per_magnitude` of the largest |expected| (a sum that cancels keeps the error of
    its partial sums) or 1e-2 of itself."""
    atol = per_magnitude * float(np.abs(expected).max())
    np.testing.assert_allclose(c, expected, rtol=1e-2, atol=atol)


@pytest.mark.parametrize(("a_type", "b_type"), PAIRS)
@pytest.mark.parametrize(("sizes", "blocks", "warps", "stages", "b_k_major", "divisible"), CASES)
def test_fp8_matmul_matches_the_interpreter(rng, a_type, b_type, sizes, blocks, warps, stages,
                                            b_k_major, divisible):  # fmt: skip
    c, expected = _run(rng, a_type, b_type, sizes, blocks, warps, stages, b_k_major, divisible)
    _close(c, expected, 1e-2)  # wgmma's float8 accumulation: 2^-13 of a partial sum per k32


@pytest.mark.parametrize(("a_type", "b_type"), PAIRS)
@pytest.mark.parametrize(("sizes", "blocks", "warps", "stages", "b_k_major", "divisible"),
                         [CASES[0], CASES[3]])  # fmt: skip
def test_fp8_mma_sync_on_an_sm90_target(rng, a_type, b_type, sizes, blocks, warps, stages,
                                        b_k_major, divisible):  # fmt: skip
    """Compiled for sm_90 (no wgmma; its cubin runs on an sm_90a device): float8 mma.sync
    (m16n8k32, as on sm_89), whose f32 accumulation is checked as the other float8 dots'."""
    c, expected = _run(rng, a_type, b_type, sizes, blocks, warps, stages, b_k_major, divisible,
                       target="sm_90")  # fmt: skip
    _close(c, expected, 1e-2)


@pytest.mark.parametrize("imprecise", [0, 32, 64, 128])
def test_max_num_imprecise_acc(rng, imprecise):
    """Products summed `imprecise` at a time (0: each k32 wgmma apart) into fresh accumulators
    and added in f32: closer to the exact sums than the tensor cores' own accumulation of all of
    K needs to be."""
    c, expected = _run(rng, "fp8e4nv", "fp8e5", (256, 128, 1040), (128, 128, 128), 4, 3, True,
                       True, imprecise)  # fmt: skip
    _close(c, expected, 2e-3)


def test_max_num_imprecise_acc_above_k_is_refused():
    with pytest.raises(tilec.CompilationError, match=r"must be <= K \(64\)"):
        compile_fp8("fp8e4nv", "fp8e4nv", (64, 64, 64), 4, 3, imprecise=65, target=None)
