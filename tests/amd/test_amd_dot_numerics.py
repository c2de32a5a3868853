"""`tl.dot`'s `input_precision` on the AMD backend, which has no matrix instruction for f32 or int8
inputs in its table: those dots keep the FMA path, and it still honours the precision. The masked
matmul of `tests/lowering/numerics_kernels.py`, compiled for gfx942 (wave64) and gfx1100
(wave32), runs on the CPU emulator against the interpreter: "tf32" rounds the f32 inputs as the
interpreter does, "tf32x3" and "ieee" multiply in f32, int8 accumulates exactly into int32."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

import tilec
from tilec.ir.parser import parse_module
from tilec.lowering import lower_module
from tilec_amd.arch import ARCHS

sys.path.insert(0, str(Path(__file__).parent.parent / "lowering"))
from cpu_emulator import HostTargetInfo, compile_kernel, launch
from numerics_kernels import matmul_kernel

RNG = np.random.default_rng(5)
BLOCKS = (32, 32, 16)
SIZES = (40, 48, 40)  # not multiples of the blocks: masked loads and stores


def _compiled(dtype: str, precision: str | None, backend: str, arch: str | None = None):
    acc = "i32" if dtype == "i8" else "fp32"
    signature = {"a_ptr": f"*{dtype}", "b_ptr": f"*{dtype}", "c_ptr": f"*{acc}", "M": "i32",
                 "N": "i32", "K": "i32"}  # fmt: skip
    block_m, block_n, block_k = BLOCKS
    constexprs = dict(BLOCK_M=block_m, BLOCK_N=block_n, BLOCK_K=block_k, PRECISION=precision,
                      INTEGER=dtype == "i8")  # fmt: skip
    options = {} if arch is None else {"target": arch}
    return tilec.compile(matmul_kernel, signature, constexprs, backend=backend, num_warps=4,
                         **options)  # fmt: skip


def _inputs(dtype: str):
    m, n, k = SIZES
    if dtype == "i8":
        a = RNG.integers(-128, 128, (m, k), dtype=np.int8)
        b = RNG.integers(-128, 128, (k, n), dtype=np.int8)
        return a, b, np.full(m * n, -1, np.int32)
    a = RNG.standard_normal((m, k)).astype(np.float32)
    b = RNG.standard_normal((k, n)).astype(np.float32)
    return a, b, np.full(m * n, np.nan, np.float32)


@pytest.mark.parametrize(
    ("arch", "dtype", "precision"),
    [("gfx942", "fp32", "tf32"), ("gfx942", "fp32", "tf32x3"), ("gfx942", "fp32", "ieee"),
     ("gfx942", "i8", None), ("gfx1100", "fp32", "tf32"), ("gfx1100", "i8", None)],
)  # fmt: skip
def test_input_precision_on_the_fma_path_matches_the_interpreter(arch, dtype, precision):
    kernel = _compiled(dtype, precision, "amd", arch)
    gir = kernel.asm["gir"]
    assert "#gpu.amd_" not in gir, "no MFMA/WMMA row takes these inputs"
    if precision is not None:
        assert f'input_precision = "{precision}"' in gir
    m, n, k = SIZES
    a, b, c = _inputs(dtype)
    grid = (-(-m // BLOCKS[0]), -(-n // BLOCKS[1]))
    lanes = ARCHS.check(arch).lanes
    lowered = lower_module(
        parse_module(gir, "matmul.gir"), HostTargetInfo(lanes), kernel.metadata["kernel"]
    )
    address = compile_kernel(lowered.llvm_ir, lowered.name)
    launch(address, lowered.params, [a.reshape(-1), b.reshape(-1), c, m, n, k], grid,
           lowered.num_warps * lanes, lanes)  # fmt: skip
    expected = c.copy()
    interp = _compiled(dtype, precision, "interp")
    interp.run(grid, [a.reshape(-1), b.reshape(-1), expected, m, n, k])
    if dtype == "i8":
        np.testing.assert_array_equal(c.reshape(m, n), a.astype(np.int32) @ b.astype(np.int32))
        np.testing.assert_array_equal(c, expected)
        return
    # the same (rounded) inputs on both sides: only the order of the f32 sums differs, far
    # below what rounding to tf32 changes (about 2**-11 of each product)
    bound = (k + 2) * 2.0**-23 * (np.abs(a) @ np.abs(b) + 1.0)
    assert (np.abs(c.reshape(m, n) - expected.reshape(m, n)) <= bound).all()
    exact = a.astype(np.float64) @ b.astype(np.float64)
    assert (np.abs(c.reshape(m, n) - exact) > bound).any() == (precision == "tf32")
