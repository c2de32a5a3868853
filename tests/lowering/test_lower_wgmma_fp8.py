"""float8 on Hopper's wgmma (sm_90a): a `tl.dot` of e4m3/e5m2 inputs (and mixed pairs) multiplies
the float8 tensors themselves with `wgmma.mma_async.m64nNk32.f32.{e4m3,e5m2}.{e4m3,e5m2}`, both
operands stored K-major in shared memory (B's ring stored transposed where B is row-major in
memory), instead of converting them to f16; `max_num_imprecise_acc` (Triton's) splits the
accumulation. Checked in gir and PTX, assembled by ptxas, and run on the CPU with the emulated
wgmma (`wgmma_emulator`, which decodes the float8 bits and the descriptors itself) against
NumPy."""

from __future__ import annotations

import re
import subprocess
import tempfile

import numpy as np
import pytest
from cpu_emulator import compile_kernel, launch
from fp8_matmul_kernels import compile_fp8, float8_codes, float8_values, matmul_args
from gir_check import needs_ptxas
from wgmma_emulator import WgmmaHostTargetInfo

import tilec
import tilec.language as tl
from tilec.frontend.errors import CompilationError
from tilec.ir.parser import parse_module
from tilec.lowering import lower_module
from tilec.runtime import check

RNG = np.random.default_rng(89)
PTX_TYPES = {"fp8e4nv": "e4m3", "fp8e5": "e5m2"}


def run_on_emulator(kernel, a_type, b_type, m, n, k, blocks, b_k_major=True):
    """The kernel's C for random float8 A and B, run with the emulated wgmma and mma.sync, and
    NumPy's."""
    gir = kernel.asm["gir"]
    a, b = float8_codes(RNG, (m, k), a_type), float8_codes(RNG, (k, n), b_type)
    args = matmul_args(a, b, m, n, k, b_k_major)
    module = parse_module(gir, "k.gir")
    lowered = lower_module(module, WgmmaHostTargetInfo(), kernel.metadata["kernel"])
    grid = (-(-m // blocks[0]), -(-n // blocks[1]))
    launch(compile_kernel(lowered.llvm_ir, lowered.name), lowered.params, args, grid,
           lowered.num_warps * 32)  # fmt: skip
    return args[2].reshape(m, n), float8_values(a, a_type) @ float8_values(b, b_type)


CASES = [  # A, B, (BLOCK_M, BLOCK_N, BLOCK_K), warps, stages, (M, N, K), B K-major in memory
    ("fp8e4nv", "fp8e4nv", (64, 64, 64), 4, 3, (64, 128, 208), True),  # 64-byte swizzles, K ragged
    ("fp8e5", "fp8e5", (64, 64, 128), 4, 3, (128, 64, 256), True),  # 128-byte swizzles
    ("fp8e4nv", "fp8e5", (128, 64, 32), 8, 2, (128, 64, 96), True),  # mixed; 32-byte, 2 groups
    ("fp8e5", "fp8e4nv", (64, 128, 64), 4, 1, (64, 128, 64), True),  # unpipelined: the dot stores
    ("fp8e4nv", "fp8e4nv", (64, 64, 64), 4, 3, (64, 64, 160), False),  # B row-major in memory
    ("fp8e4nv", "fp8e5", (64, 64, 256), 4, 2, (64, 64, 512), True),  # K: two 128-byte blocks
]


@pytest.mark.parametrize(("a_type", "b_type", "blocks", "warps", "stages", "sizes", "b_k_major"),
                         CASES)  # fmt: skip
def test_fp8_wgmma_matmul_on_the_emulator(a_type, b_type, blocks, warps, stages, sizes, b_k_major):
    m, n, k = sizes
    kernel = compile_fp8(a_type, b_type, blocks, warps, stages, b_k_major)
    gir = kernel.asm["gir"]
    assert "gpu.warp_group_dot" in gir and re.search(r"instrShape = \[16, \d+, 32\]", gir)
    assert "tile.fp_to_fp %a" not in gir and "tile.fp_to_fp %b" not in gir
    c, expected = run_on_emulator(kernel, a_type, b_type, m, n, k, blocks, b_k_major)
    np.testing.assert_allclose(c, expected, rtol=1e-5, atol=1e-3)


def test_unaligned_k_on_the_emulator():
    """K = 1000 and strides not known to be multiples of 16: the operands reach shared memory
    by byte copies (no cp.async vector), ragged M and N wrap around."""
    blocks = (64, 64, 64)
    kernel = compile_fp8("fp8e4nv", "fp8e5", blocks, 4, 3, divisible=False)
    c, expected = run_on_emulator(kernel, "fp8e4nv", "fp8e5", 130, 70, 1000, blocks)
    np.testing.assert_allclose(c, expected, rtol=1e-5, atol=1e-3)


GPU_CASES = [  # tests/nvidia/test_nvidia_fp8_wgmma.py's: (BLOCK_M, BLOCK_N, BLOCK_K), warps,
    # stages, B K-major, divisible
    ((128, 128, 64), 4, 3, True, True),
    ((128, 256, 128), 8, 3, True, True),
    ((64, 64, 32), 4, 2, True, True),
    ((128, 128, 64), 4, 3, False, True),
    ((64, 64, 64), 4, 3, True, False),
    ((128, 128, 128), 4, 3, True, True),
]


@pytest.mark.parametrize(("blocks", "warps", "stages", "b_k_major", "divisible"), GPU_CASES)
def test_gpu_test_configurations_assemble(blocks, warps, stages, b_k_major, divisible):
    """What the GPU test compiles assembles for sm_90a, on float8 wgmma."""
    needs_ptxas()
    for imprecise in (None, 0) if blocks[2] == 128 else (None,):
        kernel = compile_fp8("fp8e4nv", "fp8e5", blocks, warps, stages, b_k_major, imprecise,
                             divisible=divisible)  # fmt: skip
        assert _wgmmas(kernel.asm["ptx"])[0].endswith("k32.f32.e4m3.e5m2")
        _ptxas(kernel.asm["ptx"])


@pytest.mark.parametrize("imprecise", [0, 32, 64, 128])
def test_max_num_imprecise_acc_on_the_emulator(imprecise):
    """A split accumulation (a fresh accumulator every `imprecise` products, added in f32)
    computes the same matmul: no partial sum is lost or counted twice."""
    blocks = (64, 64, 128)
    kernel = compile_fp8("fp8e4nv", "fp8e5", blocks, 4, 3, imprecise=imprecise)
    c, expected = run_on_emulator(kernel, "fp8e4nv", "fp8e5", 64, 64, 320, blocks)
    np.testing.assert_allclose(c, expected, rtol=1e-5, atol=1e-3)


def _wgmmas(ptx: str) -> list[str]:
    return re.findall(r"wgmma\.mma_async\.sync\.aligned\.(m64n\d+k\d+\.f32\.\w+\.\w+)", ptx)


@pytest.mark.parametrize(("a_type", "b_type"), [("fp8e4nv", "fp8e4nv"), ("fp8e5", "fp8e5"),
                                                ("fp8e4nv", "fp8e5"), ("fp8e5", "fp8e4nv")])  # fmt: skip
def test_fp8_gir_and_ptx(a_type, b_type):
    """The float8 tensors go to shared memory as they are (1-byte rings filled by 16-byte
    cp.async), no f16 conversion is left, and each K step of 32 is one m64nNk32 wgmma of the
    operands' types; ptxas assembles it without spills."""
    kernel = compile_fp8(a_type, b_type, (128, 128, 64), 4, 3)
    gir, ptx = kernel.asm["gir"], kernel.asm["ptx"]
    a_ir, b_ir = ({"fp8e4nv": "f8E4M3FN", "fp8e5": "f8E5M2"}[t] for t in (a_type, b_type))
    assert "instrShape = [16, 128, 32]" in gir
    assert f"!gpu.memdesc<3x128x64x{a_ir}, #shared>" in gir
    assert f"!gpu.memdesc<3x64x128x{b_ir}, #shared1>" in gir
    assert "#shared1 = #gpu.nvmma_shared<{swizzle = 64, transposed = true}>" in gir
    assert "xf16" not in gir
    assert "max_num_imprecise_acc = 1073741824 : i32" in gir
    assert "cp.async.cg.shared.global" in ptx and "cvt.rn.f16x2.e4m3x2" not in ptx
    pair = f"{PTX_TYPES[a_type]}.{PTX_TYPES[b_type]}"
    # 2 M repetitions x 2 K steps each iteration (prologue has none: 3 stages pipelined)
    assert _wgmmas(ptx) == [f"m64n128k32.f32.{pair}"] * 4
    needs_ptxas()
    result = _ptxas(ptx)
    assert "0 bytes spill stores" in result


def _ptxas(ptx: str) -> str:
    with tempfile.TemporaryDirectory() as folder:
        source = f"{folder}/k.ptx"
        with open(source, "w") as f:
            f.write(ptx)
        done = subprocess.run(
            ["ptxas", "-arch=sm_90a", "-v", source, "-o", f"{folder}/k.cubin"],
            capture_output=True, text=True, check=True,
        )  # fmt: skip
    return done.stderr


def test_max_num_imprecise_acc_in_ptx():
    """With `max_num_imprecise_acc` 32 of a K = 128 block, each 32-product wgmma goes into a
    fresh accumulator, waited for and added in f32 (4 groups a tile); with the default (2^30,
    Triton's on sm_90) or a limit above the block's K, the tensor cores accumulate all of K."""
    split = compile_fp8("fp8e4nv", "fp8e4nv", (64, 64, 128), 4, 3, imprecise=32).asm["ptx"]
    whole = compile_fp8("fp8e4nv", "fp8e4nv", (64, 64, 128), 4, 3).asm["ptx"]
    assert len(_wgmmas(split)) == len(_wgmmas(whole)) == 4
    waits = "wgmma.wait_group.sync.aligned 0;"
    assert split.count(waits) == whole.count(waits) + 4  # one per group; both wait after the loop
    assert split.count("add.rn.f32") == whole.count("add.rn.f32") + 4 * 32
    needs_ptxas()
    _ptxas(split)


def test_user_f16_conversions_stay_f16():
    """`tl.dot` of f16 tensors the user converted from float8 is an f16 dot (Triton's: exact
    f32 accumulation), not a float8 one."""

    @tilec.jit
    def converted(a_ptr, b_ptr, c_ptr):
        r = tl.arange(0, 64)
        a = tl.load(a_ptr + r[:, None] * 64 + r[None, :]).to(tl.float16)
        b = tl.load(b_ptr + r[:, None] + r[None, :] * 64).to(tl.float16)
        tl.store(c_ptr + r[:, None] * 64 + r[None, :], tl.dot(a, b))

    signature = {"a_ptr": "*fp8e4nv", "b_ptr": "*fp8e4nv", "c_ptr": "*fp32"}
    kernel = tilec.compile(converted, signature, {}, backend="nvidia", target="sm_90a")
    assert "m64n64k16.f32.f16.f16" in kernel.asm["ptx"]
    assert "k32.f32.e4m3" not in kernel.asm["ptx"]


def test_fp8_on_sm80_converts_to_f16():
    """Without wgmma (sm_80) the float8 dot computes on the f16 tensor cores as before."""
    ptx = compile_fp8("fp8e4nv", "fp8e5", (64, 64, 64), 4, 3, target="sm_80").asm["ptx"]
    assert "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32" in ptx
    assert "e4m3.e5m2" not in ptx


def test_fp8_short_k_falls_back_to_f16_wgmma():
    """A K block of 16 float8 elements is less than one k32 wgmma: f16 wgmma as before."""
    ptx = compile_fp8("fp8e4nv", "fp8e4nv", (64, 64, 16), 4, 3).asm["ptx"]
    assert "k16.f32.f16.f16" in ptx and "k32" not in ptx


def test_max_num_imprecise_acc_above_k_is_an_error():
    with pytest.raises(
        CompilationError, match=r"max_num_imprecise_acc \(128\) must be <= K \(64\)"
    ):
        compile_fp8("fp8e4nv", "fp8e4nv", (64, 64, 64), 4, 3, imprecise=128)


@pytest.mark.parametrize(("imprecise", "recorded"), [(None, 2**30), (0, 0), (48, 48)])
def test_the_dot_records_max_num_imprecise_acc(imprecise, recorded):
    """The tile IR's float8 `tile.dot` keeps Triton's `max_num_imprecise_acc` (2^30 where left
    out, as on sm_90), and --check compares its results with the float8 dot tolerance."""
    kernel = compile_fp8("fp8e4nv", "fp8e5", (64, 64, 64), 4, 3, imprecise=imprecise,
                         target=None, backend="interp")  # fmt: skip
    assert f"max_num_imprecise_acc = {recorded} : i32" in kernel.asm["tir"]
    assert check.tolerances_of(kernel.module)["fp32"] == check.FLOAT8_DOT_TOLERANCE


@tilec.jit
def batched_fp8_dot(a_ptr, b_ptr, c_ptr):
    z = tl.arange(0, 2)[:, None, None]
    r = tl.arange(0, 64)
    a = tl.load(a_ptr + z * 4096 + r[None, :, None] * 64 + r[None, None, :])
    b = tl.load(b_ptr + z * 4096 + r[None, :, None] + r[None, None, :] * 64)
    tl.store(c_ptr + z * 4096 + r[None, :, None] * 64 + r[None, None, :], tl.dot(a, b))


def test_batched_fp8_dot():
    """A batched dot of float8 blocks picks each batch's float8 bits (no f16 conversion first),
    so each batch's dot is a float8 one: wgmma k32 on sm_90a; on the interpreter, NumPy's."""
    signature = {"a_ptr": "*fp8e4nv", "b_ptr": "*fp8e5", "c_ptr": "*fp32"}
    ptx = tilec.compile(batched_fp8_dot, signature, {}, backend="nvidia", target="sm_90a",
                        divisibility=("a_ptr", "b_ptr", "c_ptr")).asm["ptx"]  # fmt: skip
    assert set(_wgmmas(ptx)) == {"m64n64k32.f32.e4m3.e5m2"}
    a, b = float8_codes(RNG, (2, 64, 64), "fp8e4nv"), float8_codes(RNG, (2, 64, 64), "fp8e5")
    c = np.zeros(2 * 4096, np.float32)
    b_memory = np.ascontiguousarray(b.transpose(0, 2, 1))
    kernel = tilec.compile(batched_fp8_dot, signature, {}, backend="interp")
    kernel.run((1,), [a.reshape(-1), b_memory.reshape(-1), c])
    expected = [float8_values(a[i], "fp8e4nv") @ float8_values(b[i], "fp8e5") for i in range(2)]
    np.testing.assert_allclose(c.reshape(2, 64, 64), np.stack(expected), rtol=1e-6)


@tilec.jit
def register_a_kernel(a_ptr, b_ptr, c_ptr, K, BLOCK_N: tl.constexpr, IMPRECISE: tl.constexpr):
    """C (64 x BLOCK_N) = A B with A's e4m3 codes loaded as u8 and bitcast in the loop (an A
    computed there, as attention's P), B e5m2 K-major, 32 of K a step."""
    rm, rk, rn = tl.arange(0, 64), tl.arange(0, 32), tl.arange(0, BLOCK_N)
    acc = tl.zeros((64, BLOCK_N), dtype=tl.float32)
    for k in range(0, K, 32):
        codes = tl.load(a_ptr + rm[:, None] * K + (k + rk)[None, :])
        a = codes.to(tl.float8e4nv, bitcast=True)
        b = tl.load(b_ptr + (k + rk)[:, None] + rn[None, :] * K)
        acc = tl.dot(a, b, acc, max_num_imprecise_acc=IMPRECISE)
    tl.store(c_ptr + rm[:, None] * BLOCK_N + rn[None, :], acc)


@pytest.mark.parametrize(("block_n", "imprecise"), [(64, None), (128, None), (64, 0)])
def test_a_in_registers_on_the_emulator(block_n, imprecise):
    """A float8 A computed in the loop is wgmma's register operand (#gpu.dot_op kWidth 4: four
    codes a register), packed between the wgmmas (N = 64) or all before the fence (N = 128),
    and with a split accumulation."""
    signature = {"a_ptr": "*u8", "b_ptr": "*fp8e5", "c_ptr": "*fp32", "K": "i32"}
    kernel = tilec.compile(register_a_kernel, signature, {"BLOCK_N": block_n, "IMPRECISE": imprecise},
                           divisibility=("a_ptr", "b_ptr", "c_ptr", "K"), backend="nvidia",
                           target="sm_90a", num_warps=4, num_stages=3)  # fmt: skip
    gir, ptx = kernel.asm["gir"], kernel.asm["ptx"]
    assert re.search(r"#gpu.dot_op<\{opIdx = 0, parent = #mma, kWidth = 4\}>", gir)
    assert set(_wgmmas(ptx)) == {f"m64n{block_n}k32.f32.e4m3.e5m2"}
    k = 96
    a, b = float8_codes(RNG, (64, k), "fp8e4nv"), float8_codes(RNG, (k, block_n), "fp8e5")
    c = np.full(64 * block_n, np.nan, np.float32)
    module = parse_module(gir, "k.gir")
    lowered = lower_module(module, WgmmaHostTargetInfo(), kernel.metadata["kernel"])
    args = [a.reshape(-1), np.ascontiguousarray(b.T).reshape(-1), c, k]
    launch(compile_kernel(lowered.llvm_ir, lowered.name), lowered.params, args, (1,), 128)
    expected = float8_values(a, "fp8e4nv") @ float8_values(b, "fp8e5")
    np.testing.assert_allclose(c.reshape(64, block_n), expected, rtol=1e-5, atol=1e-3)
    needs_ptxas()
    _ptxas(ptx)
