"""AMD matrix cores for `tl.dot` without an AMD GPU: the MFMA / WMMA table compiled row by row,
matmuls compiled for every arch (gir layouts, AMDGCN instructions, hsaco notes, LDS size), the
FMA fallback, and the lowered kernels run on the CPU emulator with MFMA / WMMA emulated from the
ISA tables (`amd_mma_emulator`) against NumPy."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from amd_mma_emulator import AmdMmaHostTargetInfo
from llvmlite import ir

import tilec
import tilec.language as tl
from tilec.ir.parser import parse_module
from tilec.lowering import lower_module
from tilec.lowering.context import BF16, F16, F32, I32, LoweringError
from tilec_amd.arch import ARCHS
from tilec_amd.codegen import compile_llir, link_hsaco
from tilec_amd.matrix_cores import MATRIX_CORES, emit, find, mma_instructions
from tilec_amd.matrix_lowering import staged_row_bytes

sys.path.insert(0, str(Path(__file__).parent.parent / "lowering"))
from cpu_emulator import compile_kernel, launch

RNG = np.random.default_rng(11)
READELF = shutil.which("llvm-readelf-22") or shutil.which("llvm-readelf")
ROWS = [(arch, core) for arch, cores in MATRIX_CORES.items() for core in cores]


@pytest.mark.parametrize(
    ("arch", "core"), ROWS, ids=[f"{a}-{c.intrinsic.split('.', 3)[-1]}" for a, c in ROWS]
)
def test_every_table_row_compiles_to_its_instruction(arch, core):
    """One instruction through the plugin's `emit`, compiled for its arch: the intrinsic exists
    there (LLVM would abort otherwise) and disassembles to the row's mnemonic."""
    instruction = core.instruction
    module = ir.Module("k")
    module.triple = "amdgcn-amd-amdhsa"
    ptr = ir.PointerType(addrspace=1)
    fn = ir.Function(module, ir.FunctionType(ir.VoidType(), [ptr, ptr]), "k")
    fn.calling_convention = "amdgpu_kernel"
    b = ir.IRBuilder(fn.append_basic_block())
    element = {"f16": F16, "bf16": BF16}[instruction.operand]
    a = [
        b.load(b.gep(fn.args[0], [I32(i)], source_etype=element), typ=element)
        for i in range(instruction.k_width)
    ]
    m, n, _ = instruction.shape
    count = m * n // instruction.lanes
    c = [b.load(b.gep(fn.args[1], [I32(i)], source_etype=F32), typ=F32) for i in range(count)]
    d = emit(b, arch, instruction, a, a, c)
    for i, value in enumerate(d):
        b.store(value, b.gep(fn.args[1], [I32(i)], source_etype=F32))
    b.ret_void()
    assembly, _ = compile_llir(str(module), arch)
    assert re.search(rf"\b{core.mnemonic}\b", assembly), core.mnemonic


def test_instructions_per_arch_match_its_wave_size():
    assert {i.family for i in mma_instructions("gfx942")} == {"mfma"}
    assert {i.family for i in mma_instructions("gfx1100")} == {"wmma"}
    for arch in ARCHS.names:
        assert {i.lanes for i in mma_instructions(arch)} <= {ARCHS.check(arch).lanes}
    assert mma_instructions("gfx950")[0].shape == (32, 32, 16)
    with pytest.raises(ValueError, match="gfx942"):
        mma_instructions("gfx908")


def test_an_instruction_the_arch_lacks_is_a_lowering_error_not_an_llvm_abort():
    gfx950_only = mma_instructions("gfx950")[0]
    with pytest.raises(LoweringError, match="gfx942 has no mfma v4 32x32x16 f16->f32"):
        find("gfx942", gfx950_only)
    with pytest.raises(LoweringError, match="gfx1100 has no mfma"):
        find("gfx1100", mma_instructions("gfx942")[0])


@tilec.jit
def matmul_kernel(a_ptr, b_ptr, c_ptr, M, N, K, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
                  BLOCK_K: tl.constexpr):  # fmt: skip
    offs_m = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = tl.program_id(1) * BLOCK_N + tl.arange(0, BLOCK_N)
    offs_k = tl.arange(0, BLOCK_K)
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k in range(0, K, BLOCK_K):
        rk = k + offs_k
        a_mask = (offs_m[:, None] < M) & (rk[None, :] < K)
        b_mask = (rk[:, None] < K) & (offs_n[None, :] < N)
        a = tl.load(a_ptr + offs_m[:, None] * K + rk[None, :], mask=a_mask)
        b = tl.load(b_ptr + rk[:, None] * N + offs_n[None, :], mask=b_mask)
        acc = tl.dot(a, b, acc)
    c_mask = (offs_m[:, None] < M) & (offs_n[None, :] < N)
    tl.store(c_ptr + offs_m[:, None] * N + offs_n[None, :], acc, mask=c_mask)


def compiled(
    arch: str, dtype: str, blocks: tuple[int, int, int], num_warps: int = 4, num_stages: int = 2
):
    signature = {"a_ptr": f"*{dtype}", "b_ptr": f"*{dtype}", "c_ptr": "*fp32", "M": "i32",
                 "N": "i32", "K": "i32"}  # fmt: skip
    block_m, block_n, block_k = blocks
    return tilec.compile(matmul_kernel, signature, dict(BLOCK_M=block_m, BLOCK_N=block_n,
                         BLOCK_K=block_k), backend="amd", target=arch, num_warps=num_warps,
                         num_stages=num_stages)  # fmt: skip


ASSEMBLY = [  # arch, dtype, blocks, accumulator layout, mnemonic, instructions per K step
    ("gfx942", "fp16", (64, 64, 32), "#gpu.amd_mfma<{version = 3, warpsPerCTA = [2, 2], "
     "instrShape = [32, 32], isTransposed = true}>", "v_mfma_f32_32x32x8_f16", 4),
    ("gfx942", "bf16", (64, 64, 32), "instrShape = [32, 32]", "v_mfma_f32_32x32x8_bf16", 4),
    ("gfx942", "fp16", (16, 64, 32), "#gpu.amd_mfma<{version = 3, warpsPerCTA = [1, 4], "
     "instrShape = [16, 16], isTransposed = true}>", "v_mfma_f32_16x16x16_f16", 2),
    ("gfx942", "bf16", (16, 64, 32), "instrShape = [16, 16]", "v_mfma_f32_16x16x16_bf16", 2),
    ("gfx90a", "fp16", (64, 64, 32), "version = 2", "v_mfma_f32_32x32x8f16", 4),
    ("gfx950", "fp16", (64, 64, 32), "version = 4", "v_mfma_f32_32x32x16_f16", 2),
    ("gfx950", "bf16", (64, 64, 32), "version = 4", "v_mfma_f32_32x32x16_bf16", 2),
    ("gfx1100", "fp16", (64, 64, 32), "#gpu.amd_wmma<{version = 1, warpsPerCTA = [2, 2]}>",
     "v_wmma_f32_16x16x16_f16", 8),
    ("gfx1100", "bf16", (64, 64, 32), "#gpu.amd_wmma<{version = 1", "v_wmma_f32_16x16x16_bf16", 8),
    ("gfx1201", "fp16", (64, 64, 32), "#gpu.amd_wmma<{version = 2", "v_wmma_f32_16x16x16_f16", 8),
    ("gfx1201", "bf16", (64, 64, 32), "#gpu.amd_wmma<{version = 2", "v_wmma_f32_16x16x16_bf16", 8),
]  # fmt: skip


@pytest.mark.parametrize(("arch", "dtype", "blocks", "layout", "mnemonic", "count"), ASSEMBLY)
def test_matmul_uses_the_matrix_instruction(arch, dtype, blocks, layout, mnemonic, count):
    kernel = compiled(arch, dtype, blocks)
    gir = kernel.asm["gir"]
    assert layout in gir and "#gpu.amd_dot_op<{opIdx = 0" in gir
    assembly = kernel.asm["amdgcn"]
    assert len(re.findall(rf"\b{mnemonic}\b", assembly)) == count
    assert "vgpr_spill_count: 0" in assembly
    # Operands are read from LDS as one vector per lane and instruction (ds_read_b64 / b128).
    assert re.search(r"ds_(read|load)(2)?(st64)?_b(64|128)", assembly)
    m, n, k = blocks
    lds = staged_row_bytes(k, 2, 4) * max(m, n)
    ring = 2 * (m * k + k * n) * 2 + 256  # the 2-stage pipeline's slots (128-byte aligned)
    assert "gpu.local_alloc : !gpu.memdesc<2x" in gir  # the loop is pipelined
    assert (
        kernel.metadata["shared_bytes"]
        <= max(lds, 4 * m * n, ring)
        <= ARCHS.check(arch).shared_memory_bytes
    )


@pytest.mark.skipif(READELF is None, reason="needs llvm-readelf (apt-get install llvm-22)")
@pytest.mark.parametrize(("arch", "lanes"), [("gfx942", 64), ("gfx1100", 32)])
def test_hsaco_notes_of_a_matrix_core_matmul(arch, lanes, tmp_path):
    kernel = compiled(arch, "fp16", (64, 64, 32))
    path = tmp_path / "kernel.hsaco"
    path.write_bytes(link_hsaco(compile_llir(kernel.asm["llir"], arch)[1], "matmul_kernel"))
    notes = subprocess.run([READELF, "--notes", str(path)], capture_output=True, text=True,
                           check=True).stdout  # fmt: skip
    assert re.search(rf"\.wavefront_size:\s+{lanes}\b", notes)
    assert re.search(rf"\.max_flat_workgroup_size:\s+{4 * lanes}\b", notes)
    assert re.search(r"\.group_segment_fixed_size:\s+0\b", notes)  # LDS is dynamic: ...
    assert 0 < kernel.metadata["shared_bytes"] <= 64 * 1024  # ... the launch passes its size


@tilec.jit
def dot_kernel(a_ptr, b_ptr, c_ptr, M: tl.constexpr, N: tl.constexpr, K: tl.constexpr):
    rm, rn, rk = tl.arange(0, M), tl.arange(0, N), tl.arange(0, K)
    a = tl.load(a_ptr + rm[:, None] * K + rk[None, :])
    b = tl.load(b_ptr + rk[:, None] * N + rn[None, :])
    c_ptrs = c_ptr + rm[:, None] * N + rn[None, :]
    tl.store(c_ptrs, tl.dot(a, b, tl.load(c_ptrs)))


@pytest.mark.parametrize("arch", ["gfx942", "gfx1100"])
@pytest.mark.parametrize(
    ("a", "acc", "sizes"),
    [("fp32", "fp32", (32, 32, 16)), ("fp16", "fp16", (32, 32, 16)), ("fp16", "fp32", (8, 32, 16)),
     ("fp16", "fp32", (32, 32, 4)), ("fp64", "fp64", (32, 32, 16)), ("i8", "i32", (32, 32, 32))],
)  # fmt: skip
def test_dots_without_an_instruction_keep_the_fma_path(arch, a, acc, sizes):
    """f32/f64/integer inputs, an f16 accumulator, or shapes below one instruction."""
    m, n, k = sizes
    signature = {"a_ptr": f"*{a}", "b_ptr": f"*{a}", "c_ptr": f"*{acc}"}
    kernel = tilec.compile(dot_kernel, signature, dict(M=m, N=n, K=k), backend="amd", target=arch)
    assert "#gpu.amd_" not in kernel.asm["gir"]
    assert not re.search(r"v_(mfma|wmma)", kernel.asm["amdgcn"])


@tilec.jit
def dot_options_kernel(a_ptr, b_ptr, c_ptr, PRECISION: tl.constexpr):
    r16, r32 = tl.arange(0, 16), tl.arange(0, 32)
    a = tl.load(a_ptr + r32[:, None] * 16 + r16[None, :])
    b = tl.load(b_ptr + r16[:, None] * 32 + r32[None, :])
    c = tl.dot(a, b, input_precision=PRECISION, out_dtype=tl.float16)
    tl.store(c_ptr + r32[:, None] * 32 + r32[None, :], c)


@pytest.mark.parametrize(("arch", "mnemonic"), [("gfx942", "v_mfma_f32_32x32x8_f16"),
                                                ("gfx1100", "v_wmma_f32_16x16x16_f16")])  # fmt: skip
@pytest.mark.parametrize("precision", ["ieee", "tf32"])
def test_out_dtype_rounds_the_matrix_core_result(arch, mnemonic, precision):
    """f16 inputs are exact under every input_precision, so they stay on the matrix cores; an
    f16 out_dtype rounds the f32 result once, after the instruction."""
    signature = {"a_ptr": "*fp16", "b_ptr": "*fp16", "c_ptr": "*fp16"}
    kernel = tilec.compile(dot_options_kernel, signature, dict(PRECISION=precision),
                           backend="amd", target=arch)  # fmt: skip
    assert re.search(r"tile.dot .* : tensor<32x32xf32, #(mfma|wmma)>", kernel.asm["gir"])
    assert re.search(r"arith.truncf .* tensor<32x32xf16", kernel.asm["gir"])
    assert re.search(rf"\b{mnemonic}\b", kernel.asm["amdgcn"])


def test_lds_beyond_the_arch_is_a_clear_error():
    with pytest.raises(RuntimeError, match="more than the 65536 a block may use on gfx942"):
        compiled("gfx942", "fp16", (256, 256, 128))


def _bits(values: np.ndarray, dtype: str) -> np.ndarray:
    if dtype == "fp16":
        return values.astype(np.float16)
    return (values.astype(np.float32).view(np.uint32) >> 16).astype(np.uint16)


def _floats(stored: np.ndarray, dtype: str) -> np.ndarray:
    if dtype == "fp16":
        return stored.astype(np.float64)
    return (stored.astype(np.uint32) << 16).view(np.float32).astype(np.float64)


EMULATED = [  # arch, dtype, blocks, num_warps, (M, N, K)
    ("gfx942", "fp16", (64, 64, 32), 4, (64, 64, 64)),
    ("gfx942", "bf16", (32, 64, 16), 2, (40, 64, 48)),
    ("gfx942", "fp16", (16, 32, 32), 2, (16, 24, 40)),
    ("gfx950", "fp16", (64, 32, 32), 2, (64, 32, 32)),
    ("gfx950", "bf16", (16, 32, 32), 2, (16, 32, 64)),  # 16x16x32, kWidth 8
    ("gfx90a", "bf16", (32, 32, 16), 1, (32, 32, 32)),
    ("gfx1100", "fp16", (32, 32, 32), 4, (40, 32, 64)),
    ("gfx1100", "bf16", (16, 32, 16), 2, (16, 32, 32)),
    ("gfx1201", "fp16", (32, 32, 32), 4, (32, 48, 64)),
    ("gfx1100", "fp16", (16, 16, 16), 4, (16, 16, 32)),  # warps [1, 4]: 3 of 4 replicate
    ("gfx942", "fp16", (32, 32, 16), 8, (32, 32, 16)),  # warps [1, 8]: 7 of 8 replicate
]


@pytest.mark.parametrize("num_stages", [1, 2, 3])
@pytest.mark.parametrize(("arch", "dtype", "blocks", "num_warps", "sizes"), EMULATED[:3])
def test_the_ring_pipeline_on_the_cpu_emulator(arch, dtype, blocks, num_warps, sizes, num_stages):
    """gfx9 has no cp.async: a pipelined loop loads the next tiles into registers before the
    current tile's MFMAs and stores them to the LDS ring after them (global -> registers -> LDS);
    no asynchronous-copy ops."""
    kernel = compiled(arch, dtype, blocks, num_warps, num_stages)
    gir = kernel.asm["gir"]
    assert (f"gpu.local_alloc : !gpu.memdesc<{num_stages}x" in gir) == (num_stages > 1)
    assert "cp.async" not in kernel.asm["amdgcn"] and "gpu.async" not in gir
    if num_stages > 1:
        body = gir[gir.index("scf.for") : gir.index("scf.yield")]
        assert body.index("tile.load") < body.index("tile.dot") < body.index("gpu.local_store")
        # B's ring is stored K-contiguous: its fragments are vector reads, not one per element
        assert "#gpu.swizzled_shared<{transposed = true}>" in gir
        assert "ds_read_u16" not in kernel.asm["amdgcn"]
    _run_on_the_emulator(kernel, arch, dtype, blocks, num_warps, sizes)


@pytest.mark.parametrize(("arch", "dtype", "blocks", "num_warps", "sizes"), EMULATED)
def test_matmul_on_the_cpu_emulator(arch, dtype, blocks, num_warps, sizes):
    kernel = compiled(arch, dtype, blocks, num_warps)
    assert "amd_dot_op" in kernel.asm["gir"]
    _run_on_the_emulator(kernel, arch, dtype, blocks, num_warps, sizes)


def _run_on_the_emulator(kernel, arch, dtype, blocks, num_warps, sizes):
    lanes = ARCHS.check(arch).lanes
    module = parse_module(kernel.asm["gir"], "matmul.gir")
    lowered = lower_module(module, AmdMmaHostTargetInfo(lanes), kernel.metadata["kernel"])
    address = compile_kernel(lowered.llvm_ir, lowered.name)
    m, n, k = sizes
    a = _bits(RNG.standard_normal((m, k)), dtype)
    b = _bits(RNG.standard_normal((k, n)), dtype)
    c = np.full(m * n, np.nan, np.float32)
    grid = (-(-m // blocks[0]), -(-n // blocks[1]))
    args = [a.reshape(-1), b.reshape(-1), c, m, n, k]
    launch(address, lowered.params, args, grid, num_warps * lanes, lanes)
    expected = _floats(a, dtype) @ _floats(b, dtype)
    np.testing.assert_allclose(c.reshape(m, n), expected, rtol=1e-5, atol=1e-4)
