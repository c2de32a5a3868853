"""`tl.dot` beyond f16/bf16 on the tensor cores: f32 inputs as tf32 (`m16n8k8`, the f32 bits
passed as they are: the tensor cores truncate them, as the interpreter does), 3xTF32 (three mmas per step), int8 (`m16n8k32` into s32), and the FMA
path for what has no instruction (f32 "ieee", f64). PTX checked and assembled by ptxas for sm_80
and sm_90a; the lowered kernels run on the CPU emulator (`mma_emulator`: fragments per the PTX
ISA) against the interpreter, with masks and sizes that are not multiples of the blocks, through
both operand paths: the `num_stages` pipeline's shared-memory ring and the plain conversion."""

from __future__ import annotations

import re

import numpy as np
import pytest
from cpu_emulator import compile_kernel, launch
from gir_check import needs_ptxas
from mma_emulator import MmaHostTargetInfo
from numerics_kernels import matmul_kernel

import tilec
import tilec.language as tl
from tilec.ir.parser import parse_module
from tilec.lowering import lower_module
from tilec_nvidia.codegen import ptx_to_cubin

RNG = np.random.default_rng(11)
TF32_MMA = "mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32"
S8_MMA = "mma.sync.aligned.m16n8k32.row.col.satfinite.s32.s8.s8.s32"  # Triton's form


def compiled(dtype: str, blocks, num_warps: int = 4, precision=None, target="sm_80",
             backend="nvidia", num_stages: int = 3):  # fmt: skip
    acc = "i32" if dtype == "i8" else "fp32"
    signature = {"a_ptr": f"*{dtype}", "b_ptr": f"*{dtype}", "c_ptr": f"*{acc}", "M": "i32",
                 "N": "i32", "K": "i32"}  # fmt: skip
    block_m, block_n, block_k = blocks
    constexprs = dict(BLOCK_M=block_m, BLOCK_N=block_n, BLOCK_K=block_k, PRECISION=precision,
                      INTEGER=dtype == "i8")  # fmt: skip
    options = {"target": target, "num_stages": num_stages} if backend == "nvidia" else {}
    return tilec.compile(matmul_kernel, signature, constexprs, backend=backend,
                         num_warps=num_warps, **options)  # fmt: skip


def counts(ptx: str) -> dict[str, int]:
    return {
        name: ptx.count(name)
        for name in set(re.findall(r"mma\.sync[\w.]*|cvt\.rna\.tf32\.f32|fma\.rn\.f32", ptx))
    }


def test_f32_dot_is_tf32_mma_by_default():
    kernel = compiled("fp32", (64, 64, 32))
    assert 'input_precision = "tf32"' in kernel.asm["tir"]
    assert "kWidth = 1" in kernel.asm["gir"]
    found = counts(kernel.asm["ptx"])
    # 4 warps on 2x2: each warp 32x32 of C = 2x4 instructions per K step of 8, 4 steps
    assert found[TF32_MMA] == 2 * 4 * 4
    # the f32 bits go to the mma as they are (the tensor cores truncate them): no conversion
    assert "cvt.rna.tf32.f32" not in found


def test_tf32x3_is_three_mmas_a_step():
    found = counts(compiled("fp32", (64, 64, 32), precision="tf32x3").asm["ptx"])
    assert found[TF32_MMA] == 3 * 2 * 4 * 4


def test_ieee_f32_dot_stays_on_fmas():
    kernel = compiled("fp32", (64, 64, 32), precision="ieee")
    assert "#gpu.mma" not in kernel.asm["gir"]
    found = counts(kernel.asm["ptx"])
    assert TF32_MMA not in found and "cvt.rna.tf32.f32" not in found and found["fma.rn.f32"]


def test_int8_dot_is_s8_mma():
    kernel = compiled("i8", (64, 64, 64))
    assert "kWidth = 4" in kernel.asm["gir"]
    assert counts(kernel.asm["ptx"])[S8_MMA] == 2 * 4 * 2


def test_sm75_keeps_the_fma_dot_for_tf32_and_int8():
    for dtype in ("fp32", "i8"):
        kernel = compiled(dtype, (64, 64, 64), target="sm_75")
        assert "#gpu.mma" not in kernel.asm["gir"] and "mma.sync" not in kernel.asm["ptx"]


@pytest.mark.parametrize("target", ["sm_80", "sm_90a"])
@pytest.mark.parametrize(
    ("dtype", "precision", "instruction"),
    [("fp32", "tf32", TF32_MMA), ("fp32", "tf32x3", TF32_MMA), ("i8", None, S8_MMA)],
)
def test_mma_ptx_assembles(target: str, dtype: str, precision, instruction: str):
    needs_ptxas()
    ptx = compiled(dtype, (128, 64, 64), 8, precision, target).asm["ptx"]
    if target == "sm_90a" and precision == "tf32":  # a warpgroup shape: wgmma (test_lower_wgmma)
        instruction = "wgmma.mma_async.sync.aligned.m64n64k8.f32.tf32.tf32"
    assert instruction in ptx
    assert ptx_to_cubin(ptx, target)


def _run_on_emulator(kernel, args: list, grid: tuple[int, int]) -> None:
    module = parse_module(kernel.asm["gir"], "matmul.gir")
    lowered = lower_module(module, MmaHostTargetInfo(), kernel.metadata["kernel"])
    address = compile_kernel(lowered.llvm_ir, lowered.name)
    launch(address, lowered.params, args, grid, lowered.num_warps * 32)


def _inputs(dtype: str, m: int, n: int, k: int):
    if dtype == "i8":
        a = RNG.integers(-128, 128, (m, k), dtype=np.int8)
        b = RNG.integers(-128, 128, (k, n), dtype=np.int8)
        return a, b, np.full(m * n, -1, np.int32)
    a = RNG.standard_normal((m, k)).astype(np.float32)
    b = RNG.standard_normal((k, n)).astype(np.float32)
    return a, b, np.full(m * n, np.nan, np.float32)


EMULATED = [  # dtype, precision, (BLOCK_M, BLOCK_N, BLOCK_K), num_warps, (M, N, K), num_stages
    ("fp32", "tf32", (32, 32, 16), 4, (40, 48, 40), 3),
    ("fp32", "tf32", (32, 32, 16), 4, (40, 48, 40), 1),
    ("fp32", "tf32x3", (32, 16, 8), 2, (32, 20, 24), 3),
    ("fp32", "tf32", (16, 8, 8), 1, (16, 8, 8), 1),
    ("i8", None, (32, 32, 32), 4, (48, 40, 80), 3),
    ("i8", None, (32, 64, 32), 2, (40, 64, 64), 1),
    ("fp32", "ieee", (16, 16, 8), 4, (20, 16, 24), 3),
]


@pytest.mark.parametrize(
    ("dtype", "precision", "blocks", "num_warps", "sizes", "num_stages"), EMULATED
)
def test_mma_matmul_on_the_cpu_emulator_matches_the_interpreter(
    dtype, precision, blocks, num_warps, sizes, num_stages
):
    kernel = compiled(dtype, blocks, num_warps, precision, num_stages=num_stages)
    tensor_cores = precision != "ieee"
    assert ("#gpu.mma" in kernel.asm["gir"]) == tensor_cores
    # with num_stages > 1 the operands come through the pipeline's ring (gpu.local_load), else
    # through the conversion to #gpu.dot_op
    pipelined = tensor_cores and num_stages > 1
    assert ("gpu.local_load" in kernel.asm["gir"]) == pipelined
    m, n, k = sizes
    a, b, c = _inputs(dtype, m, n, k)
    grid = (-(-m // blocks[0]), -(-n // blocks[1]))
    _run_on_emulator(kernel, [a.reshape(-1), b.reshape(-1), c, m, n, k], grid)
    expected = c.copy()
    interp = compiled(dtype, blocks, num_warps, precision, backend="interp")
    interp.run(grid, [a.reshape(-1), b.reshape(-1), expected, m, n, k])
    if dtype == "i8":
        np.testing.assert_array_equal(c, expected)
        np.testing.assert_array_equal(
            c.reshape(m, n), (a.astype(np.int64) @ b.astype(np.int64)).astype(np.int32)
        )
        return
    # the same rounded inputs on both sides: only the order of the f32 sums differs
    bound = (k + 2) * 2.0**-23 * (np.abs(a) @ np.abs(b) + 1.0)
    assert (np.abs(c.reshape(m, n) - expected.reshape(m, n)) <= bound).all()


def test_tf32_truncates_the_inputs_on_the_fma_path_too():
    """A dot smaller than one instruction (M = 8) stays on FMAs: its tf32 inputs are cut as the
    tensor cores and the interpreter cut them, so all give the same products."""
    kernel = compiled("fp32", (8, 16, 16), 1, "tf32")
    assert "#gpu.mma" not in kernel.asm["gir"]
    # 1 + 0.75 ulp of tf32 and -(1 + 0.5 ulp): truncated toward zero to 1 and -1
    a = np.full((8, 16), 1.0 + 0.75 * 2.0**-10, np.float32)
    a[:, 1::2] = -(1.0 + 0.5 * 2.0**-10)
    b = np.ones((16, 16), np.float32)
    b[::2] = 3.0 + 2.0**-12  # also cut, to 3
    c = np.full(8 * 16, np.nan, np.float32)
    _run_on_emulator(kernel, [a.reshape(-1), b.reshape(-1), c, 8, 16, 16], (1, 1))
    np.testing.assert_array_equal(c, np.full(8 * 16, 8 * 3.0 - 8 * 1.0, np.float32))


@tilec.jit
def f64_dot_kernel(a_ptr, b_ptr, c_ptr, M: tl.constexpr, N: tl.constexpr, K: tl.constexpr,
                   ACC: tl.constexpr):  # fmt: skip
    rm, rn, rk = tl.arange(0, M), tl.arange(0, N), tl.arange(0, K)
    a = tl.load(a_ptr + rm[:, None] * K + rk[None, :])
    b = tl.load(b_ptr + rk[:, None] * N + rn[None, :])
    c = tl.dot(a, b) if ACC is None else tl.dot(a, b, tl.zeros((M, N), ACC))
    tl.store(c_ptr + rm[:, None] * N + rn[None, :], c)


def test_f64_inputs_with_an_f32_accumulator_match_the_interpreter():
    """The FMA dot of f64 inputs into an f32 accumulator rounds the inputs to f32 (it emitted an
    invalid `fpext double to float` before), as the interpreter's `astype` does."""
    signature = {"a_ptr": "*fp64", "b_ptr": "*fp64", "c_ptr": "*fp32"}
    constexprs = dict(M=16, N=16, K=8, ACC=tl.float32)
    kernel = tilec.compile(f64_dot_kernel, signature, constexprs, backend="nvidia",
                           target="sm_80")  # fmt: skip
    assert "cvt.rn.f32.f64" in kernel.asm["ptx"]
    a, b = RNG.standard_normal((16, 8)), RNG.standard_normal((8, 16))
    c, expected = np.zeros(256, np.float32), np.zeros(256, np.float32)
    _run_on_emulator(kernel, [a.reshape(-1), b.reshape(-1), c], (1, 1))
    interp = tilec.compile(f64_dot_kernel, signature, constexprs, backend="interp")
    interp.run((1,), [a.reshape(-1), b.reshape(-1), expected])
    np.testing.assert_allclose(c, expected, rtol=1e-6, atol=1e-6)
    reference = a.astype(np.float32).astype(np.float64) @ b.astype(np.float32).astype(np.float64)
    np.testing.assert_allclose(c.reshape(16, 16), reference, rtol=1e-5, atol=1e-5)


def test_f64_inputs_accumulate_in_f64_by_default():
    """Triton's result type for f64 operands: f64 (issue 22), on the FMA path."""
    signature = {"a_ptr": "*fp64", "b_ptr": "*fp64", "c_ptr": "*fp64"}
    constexprs = dict(M=16, N=16, K=8, ACC=None)
    kernel = tilec.compile(f64_dot_kernel, signature, constexprs, backend="nvidia",
                           target="sm_80")  # fmt: skip
    assert re.search(r"tile.dot .* : tensor<16x16xf64", kernel.asm["tir"])
    assert "fma.rn.f64" in kernel.asm["ptx"] and "cvt.rn.f32.f64" not in kernel.asm["ptx"]
    a, b = RNG.standard_normal((16, 8)), RNG.standard_normal((8, 16))
    c = np.zeros(256, np.float64)
    _run_on_emulator(kernel, [a.reshape(-1), b.reshape(-1), c], (1, 1))
    np.testing.assert_allclose(c.reshape(16, 16), a @ b, rtol=1e-13, atol=1e-13)
