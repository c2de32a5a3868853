"""float8 on mma.sync (sm_89 and later, and sm_90 without wgmma): a `tl.dot` of e4m3/e5m2 inputs
(and mixed pairs) multiplies the float8 tensors with `mma.sync.aligned.m16n8k32.row.col.f32.
{e4m3,e5m2}.{e4m3,e5m2}.f32` (PTX ISA 8.4, which the kernel then asks for) on `#gpu.dot_op`
operands of kWidth 4 (the s8 form's fragments), instead of converting them to f16. sm_80 has no
such form: the f16 path. Checked in gir and PTX, assembled by ptxas, and run on the CPU with the
emulated mma.sync (`mma_emulator`, which decodes the float8 bytes itself) against NumPy."""

from __future__ import annotations

import re

import numpy as np
import pytest
from fp8_matmul_kernels import compile_fp8
from gir_check import needs_ptxas
from test_lower_wgmma_fp8 import run_on_emulator

from tilec_nvidia.codegen import ptx_to_cubin

PTX_TYPES = {"fp8e4nv": "e4m3", "fp8e5": "e5m2"}
CASES = [  # A, B, target, (BLOCK_M, BLOCK_N, BLOCK_K), warps, stages, (M, N, K), B K-major
    ("fp8e4nv", "fp8e4nv", "sm_89", (64, 64, 64), 4, 3, (64, 64, 144), True),  # K ragged
    ("fp8e5", "fp8e4nv", "sm_89", (32, 64, 32), 4, 2, (64, 64, 64), False),  # B row-major
    ("fp8e4nv", "fp8e5", "sm_90", (64, 32, 128), 4, 1, (64, 32, 128), True),  # unpipelined
    ("fp8e5", "fp8e5", "sm_90", (64, 32, 32), 8, 3, (80, 48, 64), True),  # partial tiles
]


def _mmas(ptx: str) -> list[str]:
    return re.findall(r"mma\.sync\.aligned\.(m16n8k\d+\.row\.col\.[\w.]+)", ptx)


@pytest.mark.parametrize(
    ("a_type", "b_type", "target", "blocks", "warps", "stages", "sizes", "b_k_major"), CASES
)
def test_fp8_mma_sync_matmul_on_the_emulator(
    a_type, b_type, target, blocks, warps, stages, sizes, b_k_major
):
    m, n, k = sizes
    kernel = compile_fp8(a_type, b_type, blocks, warps, stages, b_k_major, target=target)
    gir, ptx = kernel.asm["gir"], kernel.asm["ptx"]
    assert "kWidth = 4" in gir and "xf16" not in gir and "gpu.warp_group_dot" not in gir
    pair = f"{PTX_TYPES[a_type]}.{PTX_TYPES[b_type]}"
    assert set(_mmas(ptx)) == {f"m16n8k32.row.col.f32.{pair}.f32"}
    assert ".version 8.4" in ptx
    c, expected = run_on_emulator(kernel, a_type, b_type, m, n, k, blocks, b_k_major)
    np.testing.assert_allclose(c, expected, rtol=1e-5, atol=1e-3)


@pytest.mark.parametrize("target", ["sm_89", "sm_90", "sm_120"])
def test_fp8_mma_sync_assembles(target):
    needs_ptxas()
    kernel = compile_fp8("fp8e4nv", "fp8e5", (128, 128, 64), 8, 3, target=target)
    assert _mmas(kernel.asm["ptx"])[0] == "m16n8k32.row.col.f32.e4m3.e5m2.f32"
    ptx_to_cubin(kernel.asm["ptx"], target)


def test_sm80_keeps_the_f16_path():
    """sm_80 has no float8 mma.sync: the dot converts to f16 (m16n8k16), PTX as before."""
    ptx = compile_fp8("fp8e4nv", "fp8e5", (64, 64, 64), 4, 3, target="sm_80").asm["ptx"]
    assert set(_mmas(ptx)) == {"m16n8k16.row.col.f32.f16.f16.f32"}
    assert ".version 8.4" not in ptx


def test_the_f16_path_on_sm89_needs_no_new_ptx():
    """Kernels without float8 dots keep sm_89's PTX ISA version (7.8)."""
    ptx = compile_fp8("fp8e4nv", "fp8e5", (64, 64, 16), 4, 3, target="sm_89").asm["ptx"]
    assert set(_mmas(ptx)) == {"m16n8k16.row.col.f32.f16.f16.f32"}  # K 16: less than k32
    assert ".version 7.8" in ptx
