"""Hopper's wgmma path (sm_90a): `#gpu.mma` version 3, `#gpu.nvmma_shared` operands, the
asynchronous `gpu.warp_group_dot` in a cp.async pipeline. Checked in gir and PTX, assembled by
ptxas (registers, no spills), the shared-memory swizzle against the hardware's address-bit
formula, the accumulator mapping against the PTX ISA's fragment table; on an H100, matmuls of
many shapes, block sizes, stages and warps against NumPy."""

from __future__ import annotations

import re
import subprocess

import numpy as np
import pytest
from gir_check import needs_ptxas
from test_lower_mma import _bits, _floats, _nvidia_available, matmul_kernel
from test_lower_pipeline import compiled, tutorial_kernel

import tilec
import tilec.language as tl
from tilec.ir.parser import parse_module
from tilec.ir.printer import print_module
from tilec.layout.mapping import thread_mapping
from tilec_nvidia import tensor_core_mapping  # noqa: F401  (registers #gpu.mma's mapping)
from tilec_nvidia.nvmma_tile import NvmmaTile
from tilec_nvidia.tensor_core_layouts import MmaEncodingAttr, NvmmaSharedEncodingAttr
from tilec_nvidia.wgmma_ops import WarpGroupDotOp  # noqa: F401  (registers the wgmma ops)

RNG = np.random.default_rng(90)


@tilec.jit
def transposed_kernel(a_ptr, b_ptr, c_ptr, M, N, K, stride_am, stride_ak, stride_bk, stride_bn,
                      BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
                      A_COLUMN_MAJOR: tl.constexpr):  # fmt: skip
    """C = A B with B stored transposed (N x K, K contiguous: `stride_bk` is 1), loaded as N x K
    and given to the dot as `tl.trans` (as attention's Q K^T does); A row- or column-major."""
    offs_m = (tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)) % M
    offs_n = (tl.program_id(1) * BLOCK_N + tl.arange(0, BLOCK_N)) % N
    offs_k = tl.arange(0, BLOCK_K)
    if A_COLUMN_MAJOR:
        a_ptrs = a_ptr + (offs_m[:, None] + offs_k[None, :] * stride_ak)  # stride_am = 1
    else:
        a_ptrs = a_ptr + (offs_m[:, None] * stride_am + offs_k[None, :])  # stride_ak = 1
    bt_ptrs = b_ptr + (offs_n[:, None] * stride_bn + offs_k[None, :])  # stride_bk = 1
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k in range(0, tl.cdiv(K, BLOCK_K)):
        a = tl.load(a_ptrs, mask=offs_k[None, :] < K - k * BLOCK_K, other=0.0)
        bt = tl.load(bt_ptrs, mask=offs_k[None, :] < K - k * BLOCK_K, other=0.0)
        acc = tl.dot(a, tl.trans(bt), acc)
        a_ptrs += BLOCK_K * (stride_ak if A_COLUMN_MAJOR else 1)
        bt_ptrs += BLOCK_K
    offs_cm = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_cn = tl.program_id(1) * BLOCK_N + tl.arange(0, BLOCK_N)
    c_mask = (offs_cm[:, None] < M) & (offs_cn[None, :] < N)
    tl.store(c_ptr + offs_cm[:, None] * N + offs_cn[None, :], acc, mask=c_mask)


@tilec.jit
def invariant_kernel(a_ptr, b_ptr, c_ptr, N, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
                     BLOCK_K: tl.constexpr):  # fmt: skip
    """C = A [B_0 B_1 ...] summed over N blocks: A (BLOCK_M x BLOCK_K) is loaded once, before
    the loop, as attention's Q is; B is K x N row-major."""
    offs_m = tl.arange(0, BLOCK_M)
    offs_n = tl.arange(0, BLOCK_N)
    offs_k = tl.arange(0, BLOCK_K)
    a = tl.load(a_ptr + offs_m[:, None] * BLOCK_K + offs_k[None, :])
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for n in range(0, N, BLOCK_N):
        b = tl.load(b_ptr + offs_k[:, None] * N + (n + offs_n)[None, :])
        acc = tl.dot(a, b, acc)
    tl.store(c_ptr + offs_m[:, None] * BLOCK_N + offs_n[None, :], acc)


def _invariant(stages, target="sm_90a"):
    signature = {"a_ptr": "*fp16", "b_ptr": "*fp16", "c_ptr": "*fp32", "N": "i32"}
    return tilec.compile(
        invariant_kernel, signature, dict(BLOCK_M=128, BLOCK_N=64, BLOCK_K=64),
        divisibility=("a_ptr", "b_ptr", "c_ptr", "N"), backend="nvidia", target=target,
        num_warps=4, num_stages=stages,
    )  # fmt: skip


@tilec.jit
def chained_kernel(a_ptr, b_ptr, c_ptr, out_ptr, N, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
                   BLOCK_K: tl.constexpr, BLOCK_D: tl.constexpr):  # fmt: skip
    """out = sum over N blocks of f16(A B_j / 2) C_j, attention's two dots: the second dot's A is
    computed in the loop (in registers: wgmma's A from registers)."""
    offs_m = tl.arange(0, BLOCK_M)
    offs_n = tl.arange(0, BLOCK_N)
    offs_k = tl.arange(0, BLOCK_K)
    offs_d = tl.arange(0, BLOCK_D)
    a = tl.load(a_ptr + offs_m[:, None] * BLOCK_K + offs_k[None, :])
    acc = tl.zeros((BLOCK_M, BLOCK_D), dtype=tl.float32)
    for n in range(0, N, BLOCK_N):
        b = tl.load(b_ptr + offs_k[:, None] * N + (n + offs_n)[None, :])
        p = (tl.dot(a, b) * 0.5).to(tl.float16)
        c = tl.load(c_ptr + (n + offs_n)[:, None] * BLOCK_D + offs_d[None, :])
        acc = tl.dot(p, c, acc)
    tl.store(out_ptr + offs_m[:, None] * BLOCK_D + offs_d[None, :], acc)


def _chained(stages, target="sm_90a", warps=4, block_m=64, block_d=64):
    signature = {"a_ptr": "*fp16", "b_ptr": "*fp16", "c_ptr": "*fp16", "out_ptr": "*fp32",
                 "N": "i32"}  # fmt: skip
    return tilec.compile(
        chained_kernel, signature, dict(BLOCK_M=block_m, BLOCK_N=64, BLOCK_K=64, BLOCK_D=block_d),
        divisibility=("a_ptr", "b_ptr", "c_ptr", "out_ptr", "N"), backend="nvidia",
        target=target, num_warps=warps, num_stages=stages,
    )  # fmt: skip


TRANSPOSED_DIVISIBLE = ("a_ptr", "b_ptr", "c_ptr", "M", "N", "K", "stride_am", "stride_ak",
                        "stride_bn")  # fmt: skip


def _transposed(stages, blocks, warps, column_major_a, target="sm_90a", dtype="fp16"):
    signature = {"a_ptr": f"*{dtype}", "b_ptr": f"*{dtype}", "c_ptr": "*fp32", "M": "i32",
                 "N": "i32", "K": "i32", "stride_am": "i32", "stride_ak": "i32",
                 "stride_bk": "i32", "stride_bn": "i32"}  # fmt: skip
    block_m, block_n, block_k = blocks
    constants = dict(BLOCK_M=block_m, BLOCK_N=block_n, BLOCK_K=block_k,
                     A_COLUMN_MAJOR=column_major_a)  # fmt: skip
    return tilec.compile(
        transposed_kernel, signature, constants, divisibility=TRANSPOSED_DIVISIBLE,
        backend="nvidia", target=target, num_warps=warps, num_stages=stages,
    )  # fmt: skip


def _sm90a(stages=3, blocks=(128, 256, 64), warps=8, dtype="fp16", kernel=tutorial_kernel):
    return compiled(kernel, stages, blocks, warps, target="sm_90a", dtype=dtype)


@pytest.mark.parametrize("stages", [1, 2, 3, 4])
def test_gir_per_num_stages(stages: int):
    gir = _sm90a(stages, (128, 128, 64), 4).asm["gir"]
    assert "#gpu.mma<{version = 3, warpsPerCTA = [4, 1], instrShape = [16, 128, 16]}>" in gir
    assert "gpu.warp_group_dot " in gir and "tile.dot" not in gir
    if stages == 1:
        assert "gpu.local_alloc" not in gir and "pendings = 0" in gir
        return
    assert gir.count(f"gpu.local_alloc : !gpu.memdesc<{stages}x128x64xf16, #shared>") == 1
    assert gir.count(f"gpu.local_alloc : !gpu.memdesc<{stages}x64x128xf16, #shared>") == 1
    assert "#shared = #gpu.nvmma_shared<{swizzle = 128, transposed = false}>" in gir
    assert "gpu.fence_async_shared" not in gir  # cp.async-fed: none (pipeline_loops says why)
    assert f"gpu.async_wait {{num = {stages - 2} : i32}}" in gir
    if stages >= 3:  # asynchronous: one wgmma group in flight, the copies after it
        assert "{pendings = 1 : i32}" in gir
        assert "gpu.warp_group_dot_wait" in gir
        body = gir[gir.index("scf.for") : gir.index("scf.yield")]
        assert body.index("gpu.warp_group_dot ") < body.index("gpu.async_copy_global_to_local")
        assert body.count("tile.barrier") == 2
    else:
        assert "{pendings = 0 : i32}" in gir and "gpu.warp_group_dot_wait" not in gir


def _ptxas_report(ptx: str, tmp_path) -> tuple[int, str]:
    path = tmp_path / "k.ptx"
    path.write_text(ptx)
    done = subprocess.run(
        ["ptxas", "-arch=sm_90a", "-v", str(path), "-o", str(tmp_path / "k.cubin")],
        capture_output=True,
        text=True,
        check=True,
    )
    report = done.stdout + done.stderr
    registers = int(re.search(r"Used (\d+) registers", report).group(1))  # type: ignore[union-attr]
    return registers, report


@pytest.mark.parametrize(
    ("blocks", "warps", "instr", "dtype"),
    [((128, 256, 64), 8, "m64n256k16", "fp16"), ((128, 128, 64), 4, "m64n128k16", "bf16"),
     ((64, 128, 32), 8, "m64n64k16", "fp16")],
)  # fmt: skip
def test_sm90a_ptx_assembles_without_spills(blocks, warps, instr, dtype, tmp_path):
    needs_ptxas()
    ptx = _sm90a(3, blocks, warps, dtype).asm["ptx"]
    kind = "f16" if dtype == "fp16" else "bf16"
    assert f"wgmma.mma_async.sync.aligned.{instr}.f32.{kind}.{kind}" in ptx
    assert "cp.async.cg.shared.global" in ptx
    assert "wgmma.wait_group.sync.aligned 1;" in ptx  # one group left in flight in the loop
    assert ".target sm_90a" in ptx
    registers, report = _ptxas_report(ptx, tmp_path)
    assert "0 bytes spill stores, 0 bytes spill loads" in report
    assert "serialized" not in report  # ptxas would say so if it serialized the wgmmas
    assert registers <= 255


@pytest.mark.parametrize("column_major_a", [False, True])
def test_transposed_operands_are_pipelined_views(column_major_a: bool, tmp_path):
    """B given as `tl.trans` of an N x K load: its ring is stored N x K (K contiguous) and the
    dot reads a transposed view (K-major B, transpose bit 0); a column-major A is MN-major
    (transpose bit 1). Both stay pipelined and asynchronous."""
    needs_ptxas()
    kernel = _transposed(3, (128, 128, 64), 4, column_major_a)
    gir, ptx = kernel.asm["gir"], kernel.asm["ptx"]
    assert "tile.trans" in gir and "{pendings = 1 : i32}" in gir
    assert gir.count("gpu.async_copy_global_to_local") == 6  # 2 prologue stages, loop; A, B
    assert "transposed = true" in gir
    bits = "1, 0" if column_major_a else "0, 0"
    assert f"p, 1, 1, {bits};" in ptx
    _, report = _ptxas_report(ptx, tmp_path)
    assert "0 bytes spill stores" in report and "serialized" not in report


def test_loop_invariant_operands_go_to_shared_memory_once():
    """A loaded before the loop is converted there, stored once (its own shared memory), and the
    loop's wgmma stays asynchronous beside B's ring."""
    gir = _invariant(3).asm["gir"]
    loop = gir.index("scf.for")
    convert = gir.index("#shared>")  # the first value in #gpu.nvmma_shared: A's conversion
    assert convert < loop
    assert re.search(r"gpu\.warp_group_dot [^\n]*\{pendings = 1 : i32\}", gir[loop:])


def test_a_computed_in_the_loop_stays_in_registers(tmp_path):
    """The second dot's A (computed from the first dot's result) is a `#gpu.dot_op` of the
    version 3 layout: wgmma's A-from-registers form, no store to shared memory."""
    needs_ptxas()
    kernel = _chained(3)
    gir, ptx = kernel.asm["gir"], kernel.asm["ptx"]
    assert re.search(r"#gpu\.dot_op<\{opIdx = 0, parent = #mma\d*, kWidth = 2\}>", gir)
    assert "version = 3" in gir and gir.count("gpu.warp_group_dot ") == 2
    assert re.search(r"wgmma\.mma_async\.sync\.aligned\.m64n64k16\.f32\.f16\.f16 \{[^}]*\}, "
                     r"\{%r\d+,%r\d+,%r\d+,%r\d+\}, %rd\d+, p, 1, 1, 1;", ptx)  # fmt: skip
    _, report = _ptxas_report(ptx, tmp_path)
    assert "0 bytes spill stores" in report


@tilec.jit
def scaled_a_kernel(a_ptr, b_ptr, c_ptr, K, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
                    BLOCK_K: tl.constexpr):  # fmt: skip
    """c = sum over K blocks of (2 A_k) B_k: A computed in the loop from its own load (wgmma's A
    from registers), B from the ring."""
    offs_m = tl.arange(0, BLOCK_M)
    offs_n = tl.arange(0, BLOCK_N)
    offs_k = tl.arange(0, BLOCK_K)
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k in range(0, K, BLOCK_K):
        a = tl.load(a_ptr + offs_m[:, None] * K + (k + offs_k)[None, :]) * 2
        b = tl.load(b_ptr + (k + offs_k)[:, None] * BLOCK_N + offs_n[None, :])
        acc = tl.dot(a, b, acc)
    tl.store(c_ptr + offs_m[:, None] * BLOCK_N + offs_n[None, :], acc)


def test_a_loaded_in_registers_in_the_loop_keeps_its_wgmma_synchronous():
    """A wgmma left in flight into the next iteration still reads its A registers, which that
    iteration writes again (Triton's `dotCanBeProperlyAsync` rule 1a; wrong results on the
    H200, issue 23, where A came through `ldmatrix`): an A computed in the loop from a load
    keeps the dot synchronous; one converted from another dot's result (attention's P,
    `chained_kernel`) stays asynchronous, the next iteration's first dot retiring it."""
    signature = {"a_ptr": "*fp16", "b_ptr": "*fp16", "c_ptr": "*fp32", "K": "i32"}
    gir = tilec.compile(
        scaled_a_kernel, signature, dict(BLOCK_M=64, BLOCK_N=64, BLOCK_K=64),
        divisibility=("a_ptr", "b_ptr", "c_ptr", "K"), backend="nvidia", target="sm_90a",
        num_warps=4, num_stages=3,
    ).asm["gir"]  # fmt: skip
    assert re.search(r"#gpu\.dot_op<\{opIdx = 0, parent = #mma", gir)
    assert "gpu.async_copy_global_to_local" in gir  # B's ring
    assert "pendings = 1" not in gir and "gpu.warp_group_dot_wait" not in gir
    chained = _chained(3).asm["gir"]
    assert re.search(r"gpu\.warp_group_dot [^\n]*\{pendings = 1 : i32\}", chained)


@pytest.mark.parametrize("block_d", [64, 128])
def test_a_from_registers_is_packed_before_the_fence_from_n_128(block_d, tmp_path):
    """From N = 128 (attention's head dim 128), all of A's registers are packed (cvt f16x2)
    and threaded through `wgmma.fence` before the second dot's wgmmas; below, each k-step's
    are packed between them (measured faster at head dim 64)."""
    needs_ptxas()
    ptx = _chained(3, block_d=block_d).asm["ptx"]
    fences = [m.start() for m in re.finditer(r"wgmma\.fence\.sync\.aligned", ptx)]
    second = ptx[fences[1] : ptx.index("wgmma.commit_group", fences[1])]
    before = ptx[fences[0] : fences[1]][-3000:]
    if block_d >= 128:
        assert "cvt.rn.f16x2.f32" not in second and "cvt.rn.f16x2.f32" in before
    else:
        assert "cvt.rn.f16x2.f32" in second
    _, report = _ptxas_report(ptx, tmp_path)
    assert "0 bytes spill stores" in report


TF32_CASES = [  # blocks, warps, the instruction, A's and B's swizzle
    ((128, 128, 32), 8, "m64n128k8", 128),
    ((128, 256, 32), 8, "m64n256k8", 128),
    ((64, 128, 16), 4, "m64n128k8", 64),
]


@pytest.mark.parametrize(("blocks", "warps", "instr", "swizzle"), TF32_CASES)
def test_tf32_is_wgmma_on_k_major_operands(blocks, warps, instr, swizzle, tmp_path):
    """f32 inputs in tf32: `m64nNk8` (K = 8 tf32, 32 bytes), both operands K-major in shared
    memory (wgmma has no transpose bits for tf32): A's ring as loaded, B's stored transposed,
    filled by 4-byte cp.async (Triton's arrangement), no transpose immediates in the PTX."""
    needs_ptxas()
    kernel = _sm90a(3, blocks, warps, dtype="fp32")
    gir, ptx = kernel.asm["gir"], kernel.asm["ptx"]
    n = int(instr[4:-2])
    assert f"instrShape = [16, {n}, 8]" in gir and "{pendings = 1 : i32}" in gir
    block_m, block_n, block_k = blocks
    a_ring = re.search(rf"!gpu\.memdesc<3x{block_m}x{block_k}xf32, (#shared\d*)>", gir)
    b_ring = re.search(rf"!gpu\.memdesc<3x{block_k}x{block_n}xf32, (#shared\d*)>", gir)
    assert a_ring and b_ring
    encodings = dict(re.findall(r"^(#shared\d*) = (#gpu\.nvmma_shared<[^\n]*>)$", gir, re.M))
    assert encodings[a_ring[1]] == f"#gpu.nvmma_shared<{{swizzle = {swizzle}, transposed = false}}>"
    assert encodings[b_ring[1]] == f"#gpu.nvmma_shared<{{swizzle = {swizzle}, transposed = true}}>"
    assert re.search(rf"wgmma\.mma_async\.sync\.aligned\.{instr}\.f32\.tf32\.tf32 \{{[^}}]*\}}, "
                     r"%rd\d+, %rd\d+, p, 1, 1;", ptx)  # fmt: skip
    assert re.search(r"cp\.async\.cg\.shared\.global \[[^]]*\], \[[^]]*\], 16", ptx)  # A
    assert re.search(r"cp\.async\.ca\.shared\.global \[[^]]*\], \[[^]]*\], 4", ptx)  # B
    assert "mma.sync" not in ptx and "cvt.rna" not in ptx
    registers, report = _ptxas_report(ptx, tmp_path)
    assert "0 bytes spill stores" in report and "serialized" not in report
    assert registers <= 255


def test_tf32x3_stays_on_mma_sync():
    """3xTF32 splits each operand into two tf32 in registers: mma.sync, not wgmma."""
    ptx = _sm90a(3, (128, 128, 32), 8, dtype="fp32", kernel=tf32x3_kernel).asm["ptx"]
    assert "wgmma" not in ptx and "mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32" in ptx


@tilec.jit
def tf32x3_kernel(a_ptr, b_ptr, c_ptr, M, N, K, stride_am, stride_ak, stride_bk, stride_bn,
                  BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):  # fmt: skip
    offs_m = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = tl.program_id(1) * BLOCK_N + tl.arange(0, BLOCK_N)
    offs_k = tl.arange(0, BLOCK_K)
    a_ptrs = a_ptr + offs_m[:, None] * stride_am + offs_k[None, :] * stride_ak
    b_ptrs = b_ptr + offs_k[:, None] * stride_bk + offs_n[None, :] * stride_bn
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for _ in range(0, K, BLOCK_K):
        acc = tl.dot(tl.load(a_ptrs), tl.load(b_ptrs), acc, input_precision="tf32x3")
        a_ptrs += BLOCK_K * stride_ak
        b_ptrs += BLOCK_K * stride_bk
    tl.store(c_ptr + offs_m[:, None] * N + offs_n[None, :], acc)


def test_unpipelined_tf32_operands_are_stored_k_major(tmp_path):
    """Without the pipeline (1 stage) the dot stores its register operands itself: B, held along
    N, is written K-major (transposed) for the tf32 wgmma."""
    needs_ptxas()
    kernel = _sm90a(1, (64, 64, 32), 4, dtype="fp32")
    gir, ptx = kernel.asm["gir"], kernel.asm["ptx"]
    assert "gpu.local_alloc" not in gir and "transposed = true" in gir
    assert "wgmma.mma_async.sync.aligned.m64n64k8.f32.tf32.tf32" in ptx
    _, report = _ptxas_report(ptx, tmp_path)
    assert "0 bytes spill stores" in report


def test_sm80_keeps_mma_sync_and_ldmatrix():
    ptx = compiled(tutorial_kernel, 3, (128, 128, 32), 4, "sm_80").asm["ptx"]
    assert "mma.sync.aligned.m16n8k16" in ptx and "ldmatrix.sync.aligned" in ptx
    assert "wgmma" not in ptx


@pytest.mark.parametrize(
    ("blocks", "warps"), [((32, 64, 32), 4), ((64, 64, 32), 2), ((64, 64, 8), 4)]
)
def test_shapes_wgmma_cannot_take_fall_back_to_mma_sync(blocks, warps):
    """M below a warpgroup's 64 rows, warps not a whole warpgroup, K below one instruction."""
    gir = _sm90a(2, blocks, warps).asm["gir"]
    assert "gpu.warp_group_dot" not in gir
    if blocks[2] >= 16:
        assert "#gpu.mma<{version = 2" in gir


def test_unpipelined_operands_are_stored_by_the_dot():
    """`other = 1.0` is not a zero fill: the loads stay synchronous and each operand reaches the
    wgmma through a conversion to `#gpu.nvmma_shared`, stored where the dot stands."""
    gir = _sm90a(3, (64, 64, 32), 4, kernel=matmul_kernel).asm["gir"]
    assert "gpu.warp_group_dot" in gir
    ptx = _sm90a(1, (64, 64, 32), 4).asm["ptx"]
    assert "fence.proxy.async.shared::cta" in ptx and "wgmma.wait_group.sync.aligned 0;" in ptx


@pytest.mark.parametrize("swizzle", [32, 64, 128])
def test_nvmma_tile_is_the_hardware_swizzle(swizzle: int):
    """Every element of a tile lands where the swizzle mode puts it: within each column block of
    `swizzle`-byte rows, the 16-byte chunk index XORed with the byte offset's bits 7 and up
    (CUTLASS's `Swizzle<log2(swizzle / 16), 4, 3>`); a bijection onto the tile's bytes."""
    rows, cols = 64, 256
    tile = NvmmaTile(rows, cols, 2, swizzle)
    bits = (swizzle // 16).bit_length() - 1
    mask = (1 << bits) - 1
    seen = set()
    for r in range(rows):
        for c in range(cols):
            block, within = divmod(c, swizzle // 2)
            linear = block * rows * swizzle + r * swizzle + within * 2
            chunk, phase = (linear >> 4) & mask, (linear >> 7) & mask
            expected = (linear & ~(mask << 4)) | ((chunk ^ phase) << 4)
            assert tile.offset(r, c) * 2 == expected
            seen.add(expected)
    assert len(seen) == rows * cols
    assert tile.linear_byte_offset(8, swizzle // 2) == rows * swizzle + 8 * swizzle


def test_wgmma_accumulator_mapping_is_the_ptx_fragment_table():
    """PTX ISA, "wgmma .m64nNk16 register fragment layout for the accumulator D": in warp w of a
    warpgroup, lane l holds d[4j + 2i + e] = (16 w + l / 4 + 8 i, 8 j + 2 (l % 4) + e)."""
    layout = MmaEncodingAttr(3, (8, 1), (16, 64, 16))
    mapping = thread_mapping(layout, (128, 128))
    for warp in range(8):
        for lane in range(32):
            offsets = [d.thread_offset(lane, warp) for d in mapping.dims]
            held = [
                ((reg[0] + offsets[0]) % 128, (reg[1] + offsets[1]) % 128)
                for reg in mapping.registers
            ]
            expected = [
                (rep * 128 + 16 * warp + lane // 4 + 8 * i, rn * 64 + 8 * j + 2 * (lane % 4) + e)
                for rep in range(1)
                for rn in range(2)
                for j in range(8)
                for i in range(2)
                for e in range(2)
            ]
            assert held == expected


def test_memdesc_with_nvmma_encoding_round_trips():
    text = _sm90a(3, (128, 128, 64), 4).asm["gir"]
    module = parse_module(text, "k.gir")
    assert print_module(module) == text


@pytest.mark.parametrize(
    ("params", "message"),
    [
        (dict(version=3, warps_per_cta=(2, 2), instr_shape=(16, 64, 16)), "multiple of 4"),
        (dict(version=3, warps_per_cta=(4, 1), instr_shape=(16, 12, 16)), "multiple of 8"),
        (dict(version=3, warps_per_cta=(4, 1), instr_shape=(16, 8)), r"\[16, N, K\]"),
        (dict(version=3, warps_per_cta=(4, 1), instr_shape=(16, 64, 64)), "32 \\(e4m3, e5m2\\)"),
    ],
)
def test_bad_version_3_layouts_are_rejected(params, message):
    with pytest.raises(ValueError, match=message):
        MmaEncodingAttr(**params)
    with pytest.raises(ValueError, match="32, 64 or 128"):
        NvmmaSharedEncodingAttr(96)


gpu = pytest.mark.skipif(not _nvidia_available(), reason="needs an NVIDIA GPU")

GPU_CASES = [  # M, N, K multiples of 8: the compile assumes 16-byte aligned rows
    # stages, blocks, warps, (m, n, k), dtype, kernel
    (3, (128, 256, 64), 8, (300, 520, 200), "fp16", "tutorial"),
    (3, (128, 256, 64), 8, (256, 512, 512), "bf16", "tutorial"),
    (4, (128, 128, 64), 4, (129, 264, 328), "fp16", "tutorial"),
    (2, (128, 128, 64), 8, (256, 256, 128), "fp16", "tutorial"),
    (1, (128, 128, 64), 4, (200, 136, 328), "bf16", "tutorial"),
    (3, (64, 128, 32), 8, (200, 136, 328), "fp16", "tutorial"),
    (3, (64, 64, 16), 4, (64, 64, 48), "fp16", "tutorial"),
    (3, (64, 64, 32), 4, (200, 136, 328), "fp16", "masked"),
    (2, (128, 64, 128), 4, (130, 72, 264), "bf16", "masked"),
]


@gpu
@pytest.mark.gpu
@pytest.mark.parametrize(
    ("stages", "blocks", "warps", "sizes", "column_major_a"),
    [(3, (128, 128, 64), 4, (200, 136, 328), False), (3, (128, 256, 64), 8, (256, 264, 200), True),
     (1, (64, 64, 32), 4, (72, 64, 96), True)],
)  # fmt: skip
def test_transposed_operands_on_the_gpu(stages, blocks, warps, sizes, column_major_a):
    m, n, k = sizes
    kernel = _transposed(stages, blocks, warps, column_major_a, target=None)
    assert "gpu.warp_group_dot" in kernel.asm["gir"]
    a = _bits(RNG.standard_normal((m, k)), "fp16")
    b = _bits(RNG.standard_normal((k, n)), "fp16")
    c = np.full(m * n, np.nan, np.float32)
    a_memory = np.ascontiguousarray(a.T) if column_major_a else a
    strides_a = (1, m) if column_major_a else (k, 1)
    grid = (-(-m // blocks[0]), -(-n // blocks[1]))
    b_t = np.ascontiguousarray(b.T)
    kernel.run(grid, [a_memory.reshape(-1), b_t.reshape(-1), c, m, n, k, *strides_a, 1, k])
    expected = _floats(a, "fp16").astype(np.float64) @ _floats(b, "fp16")
    np.testing.assert_allclose(c.reshape(m, n), expected, rtol=1e-5, atol=1e-4)


@gpu
@pytest.mark.gpu
@pytest.mark.parametrize(("stages", "warps", "block_m", "block_d"),
                         [(1, 4, 64, 64), (3, 4, 64, 64), (3, 8, 128, 64), (3, 8, 128, 128)])  # fmt: skip
def test_a_in_registers_on_the_gpu(stages, warps, block_m, block_d):
    n = 320
    a = _bits(RNG.standard_normal((block_m, 64)), "fp16")
    b = _bits(RNG.standard_normal((64, n)), "fp16")
    c = _bits(RNG.standard_normal((n, block_d)), "fp16")
    out = np.full(block_m * block_d, np.nan, np.float32)
    kernel = _chained(stages, target=None, warps=warps, block_m=block_m, block_d=block_d)
    kernel.run((1,), [a.reshape(-1), b.reshape(-1), c.reshape(-1), out, n])
    a64, b64, c64 = (_floats(x, "fp16").astype(np.float64) for x in (a, b, c))
    expected = np.zeros((block_m, block_d))
    for j in range(0, n, 64):
        p = (a64 @ b64[:, j : j + 64] * 0.5).astype(np.float16).astype(np.float64)
        expected += p @ c64[j : j + 64]
    np.testing.assert_allclose(out.reshape(block_m, block_d), expected, rtol=1e-3, atol=2e-2)


@gpu
@pytest.mark.gpu
@pytest.mark.parametrize("stages", [1, 3])
def test_loop_invariant_operand_on_the_gpu(stages):
    n = 320
    a = _bits(RNG.standard_normal((128, 64)), "fp16")
    b = _bits(RNG.standard_normal((64, n)), "fp16")
    c = np.full(128 * 64, np.nan, np.float32)
    _invariant(stages, target=None).run((1,), [a.reshape(-1), b.reshape(-1), c, n])
    blocks = _floats(b, "fp16").astype(np.float64).reshape(64, n // 64, 64).sum(axis=1)
    expected = _floats(a, "fp16").astype(np.float64) @ blocks
    np.testing.assert_allclose(c.reshape(128, 64), expected, rtol=1e-5, atol=1e-3)


@gpu
@pytest.mark.gpu
@pytest.mark.parametrize(("stages", "blocks", "warps", "sizes", "dtype", "kernel"), GPU_CASES)
def test_wgmma_matmul_on_the_gpu(stages, blocks, warps, sizes, dtype, kernel):
    m, n, k = sizes
    source = tutorial_kernel if kernel == "tutorial" else matmul_kernel
    compiled_kernel = compiled(source, stages, blocks, warps, target=None, dtype=dtype)
    assert "gpu.warp_group_dot" in compiled_kernel.asm["gir"]
    a = _bits(RNG.standard_normal((m, k)), dtype)
    b = _bits(RNG.standard_normal((k, n)), dtype)
    c = np.full(m * n, np.nan, np.float32)
    grid = (-(-m // blocks[0]), -(-n // blocks[1]))
    compiled_kernel.run(grid, [a.reshape(-1), b.reshape(-1), c, m, n, k, k, 1, n, 1])
    expected = _floats(a, dtype).astype(np.float64) @ _floats(b, dtype)
    np.testing.assert_allclose(c.reshape(m, n), expected, rtol=1e-5, atol=1e-4)
