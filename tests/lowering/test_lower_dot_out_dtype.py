"""`tl.dot` of int8 operands with a narrower `out_dtype` (issue 22): Triton 3.6 gives the int32
sums whatever `out_dtype` says (its test_dot stores `tl.dot(x, y, out_dtype=tl.int8)` into an
int32 tensor and expects the sums), so no backend may truncate them. Checked in the lowered code
of every GPU backend (no `trunc` to i8 or i16 between the dot and the store), and by running
Triton's test_dot kernel lowered for sm_80 on the CPU emulator (mma.sync m16n8k32 emulated) and
on the interpreter. tests/nvidia/test_nvidia_dot_out_dtype.py runs it on the GPU."""

from __future__ import annotations

import re

import numpy as np
import pytest
from cpu_emulator import compile_kernel, launch
from mma_emulator import MmaHostTargetInfo
from numerics_kernels import (
    TEST_DOT_INT8_SHAPES,
    TEST_DOT_SIGNATURE,
    int8_test_dot_case,
    triton_test_dot_kernel,
)

import tilec
import tilec.language as tl
from tilec.ir.parser import parse_module
from tilec.lowering import lower_module

OUT_DTYPES = [tl.int8, tl.int16, tl.int32]
TARGETS = [("nvidia", "sm_80"), ("nvidia", "sm_90a"), ("amd", "gfx942"), ("amd", "gfx1100")]


def compiled(backend: str, out, shape, target: str | None = None):
    block_m, block_n, block_k, num_warps = shape
    constexprs = dict(BLOCK_M=block_m, BLOCK_N=block_n, BLOCK_K=block_k, OUT=out,
                      RESULT=tl.int32)  # fmt: skip
    options = {} if target is None else {"target": target}
    return tilec.compile(triton_test_dot_kernel, TEST_DOT_SIGNATURE, constexprs,
                         backend=backend, num_warps=num_warps, **options)  # fmt: skip


@pytest.mark.parametrize("out", OUT_DTYPES, ids=str)
def test_the_tir_keeps_the_int32_sums(out):
    tir = compiled("interp", out, (64, 64, 32, 4)).asm["tir"]
    assert re.search(r"tile.dot .* : tensor<64x64xi32>", tir)
    assert "arith.trunci" not in tir and "arith.extsi" not in tir


@pytest.mark.parametrize(("backend", "target"), TARGETS)
@pytest.mark.parametrize("out", [tl.int8, tl.int16], ids=str)
def test_no_backend_truncates_the_sums(backend, target, out):
    llir = compiled(backend, out, (64, 64, 32, 4), target).asm["llir"]
    assert not re.search(r"trunc i32 %\S+ to i(8|16)\b", llir)


EMULATED = [  # (BLOCK_M, BLOCK_N, BLOCK_K, num_warps), col_a, col_b
    ((64, 64, 32, 4), False, False),
    ((128, 16, 32, 4), True, False),
    ((32, 128, 64, 2), False, True),
]


@pytest.mark.parametrize(("shape", "col_a", "col_b"), EMULATED)
@pytest.mark.parametrize("out", OUT_DTYPES, ids=str)
def test_triton_test_dot_int8_on_the_emulator_and_the_interpreter(shape, col_a, col_b, out):
    assert shape in TEST_DOT_INT8_SHAPES
    m, n, k, _ = shape
    rng = np.random.default_rng(22)
    emulated, sums = int8_test_dot_case(rng, m, n, k, col_a, col_b, np.full((m, n), -1, np.int32))
    interpreted = [a.copy() if isinstance(a, np.ndarray) else a for a in emulated]
    kernel = compiled("nvidia", out, shape, "sm_80")
    assert "mma.sync.aligned.m16n8k32.row.col.satfinite.s32.s8.s8.s32" in kernel.asm["ptx"]
    module = parse_module(kernel.asm["gir"], "test_dot.gir")
    lowered = lower_module(module, MmaHostTargetInfo(), kernel.metadata["kernel"])
    address = compile_kernel(lowered.llvm_ir, lowered.name)
    launch(address, lowered.params, emulated, (1,), lowered.num_warps * 32)
    compiled("interp", out, shape).run((1,), interpreted)
    assert np.abs(sums).max() > 2**15  # the int8 and int16 truncations would show
    np.testing.assert_array_equal(interpreted[6], sums)
    np.testing.assert_array_equal(emulated[6], sums)
