"""Host-descriptor loads through TMA in compiled kernels (docs/tma.md), without a GPU: with
`TILEC_NVIDIA_TMA=1` a `desc.load` of a host TensorDescriptor is a `tile.descriptor_load`, which
sm_90a lowers to one `cp.async.bulk.tensor` a box into the swizzled scratch buffer with the
tensor map as a 128-byte grid-constant parameter after the kernel's own (`tensor_maps` in the
metadata says how the launch encodes it); without the setting, and on sm_80, the code is the
masked load it was. The GPU runs these kernels in test_tma_gpu.py."""

from __future__ import annotations

import re

import pytest
from tma_kernels import LDMATRIX_RINGS, PIPELINED, matmul_tiles, swizzled

import tilec
import tilec.language as tl
from tilec.runtime import cache
from tilec_nvidia import tensor_map, tma_lowering, tma_ring
from tilec_nvidia.backend import NvidiaBackend
from tilec_nvidia.codegen import find_ptxas
from tilec_nvidia.nvmma_tile import NvmmaTile

COPY_SIGNATURE = {"x_desc": "tensordesc<fp16[64, 64]>", "y_ptr": "*fp16", "N": "i32"}


@tilec.jit
def copy_block(x_desc, y_ptr, N, BM: tl.constexpr, BN: tl.constexpr):
    i, j = tl.program_id(0), tl.program_id(1)
    block = x_desc.load([i * BM, j * BN])
    rows = i * BM + tl.arange(0, BM)
    cols = j * BN + tl.arange(0, BN)
    tl.store(y_ptr + rows[:, None] * N + cols[None, :], block)


@tilec.jit
def matmul_descriptors(a_desc, b_desc, c_ptr, N, K, BM: tl.constexpr, BN: tl.constexpr,
                       BK: tl.constexpr):  # fmt: skip
    i, j = tl.program_id(0), tl.program_id(1)
    acc = tl.zeros((BM, BN), tl.float32)
    for k in range(0, tl.cdiv(K, BK)):
        acc = tl.dot(a_desc.load([i * BM, k * BK]), b_desc.load([k * BK, j * BN]), acc)
    rows = i * BM + tl.arange(0, BM)
    cols = j * BN + tl.arange(0, BN)
    tl.store(c_ptr + rows[:, None] * N + cols[None, :], acc.to(tl.float16))


def compile_copy(target, signature=COPY_SIGNATURE, block=(64, 64)):
    return tilec.compile(copy_block, signature, constexprs={"BM": block[0], "BN": block[1]},
                         backend="nvidia", target=target)  # fmt: skip


def test_a_host_descriptor_load_is_one_tma_copy_on_sm_90a(tma_on):
    compiled = compile_copy("sm_90a")
    assert compiled.metadata["params"] == ["*fp16", "i32", "i32", "i64", "*fp16", "i32"]
    assert compiled.metadata["tensor_maps"] == [{
        "element": "fp16", "base": 0, "shape": [["param", 1], ["param", 2]],
        "strides": [["param", 3], ["const", 1]], "block": [64, 64], "padding": "zero",
        "swizzle": 128,
    }]  # fmt: skip
    assert "tile.descriptor_load" in compiled.asm["tir"]
    ptx = compiled.asm["ptx"]
    assert ".param .align 64 .b8 copy_block_param_6[128]" in ptx
    assert ptx.count("mbarrier.init.shared::cta.b64") == 1
    assert ptx.count("prefetch.tensormap") == 1
    assert ptx.count("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%rd") == 1
    assert ", 8192;" in ptx  # 64 x 64 halves
    assert len(re.findall(r"cp\.async\.bulk\.tensor\.2d\.shared::cluster\.global\.mbarrier"
                          r"::complete_tx::bytes \[%rd\d+\], \[%rd\d+, \{%r\d+, %r\d+\}\]",
                          ptx)) == 1  # fmt: skip
    assert "mbarrier.try_wait.parity.shared::cta.b64" in ptx
    assert "ld.global" not in ptx  # the block comes through shared memory
    if find_ptxas() is not None:
        assert compiled.asm["cubin"]


def test_a_block_wider_than_the_swizzle_is_several_boxes(tma_on):
    signature = {"x_desc": "tensordesc<fp32[32, 64]>", "y_ptr": "*fp32", "N": "i32"}
    compiled = compile_copy("sm_90a", signature, (32, 64))
    assert compiled.metadata["tensor_maps"][0]["swizzle"] == 128
    ptx = compiled.asm["ptx"]
    assert ptx.count("cp.async.bulk.tensor.2d") == 2  # two 32-column boxes of 128 bytes
    assert ", 8192;" in ptx


@pytest.mark.parametrize("stages", [1, 2, 3, 4])
def test_a_matmuls_descriptor_loads_are_tma_copies(tma_on, stages):
    """Without a pipeline (num_stages=1) each load of the K loop is one TMA copy where it
    stands; pipelined, the loads fill the loop's ring through TMA (tma_ring), as Triton's
    pipeliner: one mbarrier a stage initialized before the loop, the prologue's S - 1 stages
    each an expect_tx of both blocks' bytes then a copy a block, the loop waiting on the slot's
    barrier, then (after the wgmma and its wait) arming the next stage, the barriers
    invalidated after a bar.sync once the loop is done; no cp.async left. A map a
    descriptor, in both."""
    signature = {"a_desc": "tensordesc<fp16[64, 32]>", "b_desc": "tensordesc<fp16[32, 64]>",
                 "c_ptr": "*fp16", "N": "i32", "K": "i32"}  # fmt: skip
    compiled = tilec.compile(matmul_descriptors, signature,
                             constexprs={"BM": 64, "BN": 64, "BK": 32}, backend="nvidia",
                             target="sm_90a", num_stages=stages)  # fmt: skip
    ptx = compiled.asm["ptx"]
    maps = compiled.metadata["tensor_maps"]
    assert [m["base"] for m in maps] == [0, 4] and [m["swizzle"] for m in maps] == [64, 128]
    assert ptx.count(".param .align 64 .b8") == 2
    assert "cp.async.ca" not in ptx and "cp.async.cg" not in ptx
    assert "cp.async.commit_group" not in ptx and "cp.async.wait_group" not in ptx
    if stages == 1:
        assert ptx.count("cp.async.bulk.tensor.2d") == 2  # one a load, in the loop
    else:
        steps = _tma_steps(ptx)
        ahead = stages - 1
        assert steps[:stages] == ["init"] * stages
        prologue = ["expect", "copy", "copy"] * ahead
        assert steps[stages : stages + 3 * ahead] == prologue
        assert (
            steps[stages + 3 * ahead :] == ["wait", "expect", "copy", "copy"] + ["inval"] * stages
        )
        expects = re.findall(r"mbarrier\.arrive\.expect_tx\.shared::cta\.b64 _, \[%rd\d+\], (\d+);",
                             ptx)  # fmt: skip
        assert expects == ["8192"] * stages  # 64x32 + 32x64 halves a stage
        loop = ptx[ptx.index("mbarrier.try_wait") :]
        if stages >= 3:  # a wgmma in flight across iterations: the next stage armed after it
            assert loop.index("wgmma.wait_group.sync.aligned 1") < loop.index("mbarrier.arrive")
        assert "bar.sync" in loop[: loop.index("mbarrier.inval")].rsplit("wgmma.wait_group", 1)[1]
    if find_ptxas() is not None:
        assert compiled.asm["cubin"]


TMA_STEPS = {
    "init": "mbarrier.init.shared::cta.b64", "expect": "mbarrier.arrive.expect_tx",
    "copy": "cp.async.bulk.tensor.2d.shared::cluster", "wait": "mbarrier.try_wait.parity",
    "inval": "mbarrier.inval.shared::cta.b64",
}  # fmt: skip


def _tma_steps(ptx: str) -> list[str]:
    """The TMA and mbarrier instructions of `ptx`, in order, by name (`TMA_STEPS`)."""
    steps = []
    for line in ptx.splitlines():
        steps += [name for name, text in TMA_STEPS.items() if text in line]
    return steps


def test_with_the_setting_off_and_on_sm_80_the_load_is_as_before(monkeypatch, tmp_path):
    monkeypatch.setenv("TILEC_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("TILEC_NVIDIA_TMA", "0")
    cache.clear_memory()
    before = compile_copy("sm_90a")
    assert "tensor_maps" not in before.metadata and "cp.async.bulk" not in before.asm["ptx"]
    monkeypatch.setenv("TILEC_NVIDIA_TMA", "1")
    cache.clear_memory()
    old_arch = compile_copy("sm_80")
    assert "tensor_maps" not in old_arch.metadata
    assert "tile.descriptor_load" not in old_arch.asm["tir"]
    monkeypatch.setenv("TILEC_NVIDIA_TMA", "0")
    cache.clear_memory()
    assert compile_copy("sm_80").asm["ptx"] == old_arch.asm["ptx"]


def test_the_setting_is_on_by_default_and_in_the_cache_key(monkeypatch):
    backend = NvidiaBackend()
    options = backend.parse_options(target="sm_90a")
    monkeypatch.setenv("TILEC_NVIDIA_TMA", "0")
    off = backend.hash(options)
    assert backend.frontend_features(options) == frozenset()
    monkeypatch.setenv("TILEC_NVIDIA_TMA", "1")
    assert backend.hash(options) != off
    assert backend.frontend_features(options) == {"tensor_map_loads"}
    monkeypatch.delenv("TILEC_NVIDIA_TMA")
    assert backend.frontend_features(options) == {"tensor_map_loads"}
    assert backend.frontend_features(backend.parse_options(target="sm_80")) == frozenset()


def test_registers_contiguous_in_a_row_are_read_16_bytes_at_once(tma_on):
    """Where the layout gives a thread 8 consecutive halves of a row (a vectorized store), the
    swizzle keeps them in one 16-byte chunk: one `ld.shared.v4.b32`."""
    compiled = tilec.compile(copy_block, COPY_SIGNATURE, constexprs={"BM": 64, "BN": 64},
                             backend="nvidia", target="sm_90a",
                             divisibility=["y_ptr", "N"])  # fmt: skip
    ptx = compiled.asm["ptx"]
    assert "st.global.v4.b32" in ptx and ptx.count("ld.shared.v4.b32") == 4  # 32 halves a thread
    assert "cp.async.bulk.tensor.2d" in ptx


@tilec.jit
def store_block(x_ptr, y_desc, N, BM: tl.constexpr, BN: tl.constexpr):
    i, j = tl.program_id(0), tl.program_id(1)
    rows = i * BM + tl.arange(0, BM)
    cols = j * BN + tl.arange(0, BN)
    block = tl.load(x_ptr + rows[:, None] * N + cols[None, :])
    y_desc.store([i * BM, j * BN], block * 2)


def test_a_host_descriptor_store_is_the_masked_store_with_tma_stores_off(
    tma_on, monkeypatch, tmp_path
):
    """With tma_lowering.STORES off the store is st.global, TMA loads or not."""
    monkeypatch.setattr(tma_lowering, "STORES", False)
    monkeypatch.setenv("TILEC_CACHE_DIR", str(tmp_path))  # not the cached TMA store
    signature = {"x_ptr": "*fp32", "y_desc": "tensordesc<fp32[32, 64]>", "N": "i32"}
    compiled = tilec.compile(store_block, signature, constexprs={"BM": 32, "BN": 64},
                             backend="nvidia", target="sm_90a")  # fmt: skip
    ptx = compiled.asm["ptx"]
    assert "cp.async.bulk.tensor" not in ptx and "st.global" in ptx
    assert not compiled.metadata.get("tensor_maps")


def test_a_host_descriptor_store_is_one_tma_store_a_box(tma_on, monkeypatch, tmp_path):
    """The TMA store's code (tma_lowering.STORES, on by default) as it stands."""
    monkeypatch.setattr(tma_lowering, "STORES", True)
    monkeypatch.setenv("TILEC_CACHE_DIR", str(tmp_path))  # not the cached masked store
    signature = {"x_ptr": "*fp32", "y_desc": "tensordesc<fp32[32, 64]>", "N": "i32"}
    compiled = tilec.compile(store_block, signature, constexprs={"BM": 32, "BN": 64},
                             backend="nvidia", target="sm_90a")  # fmt: skip
    assert "tile.descriptor_store" in compiled.asm["tir"]
    assert compiled.metadata["tensor_maps"][0]["base"] == 1
    ptx = compiled.asm["ptx"]
    stores = re.findall(r"@%p\d+ cp\.async\.bulk\.tensor\.2d\.global\.shared::cta\.bulk_group "
                        r"\[%rd\d+, \{%r\d+, %r\d+\}\], \[%rd\d+\];", ptx)  # fmt: skip
    assert len(stores) == 2  # two boxes of 32 fp32 columns
    assert ptx.count("cp.async.bulk.commit_group") == 1
    assert ptx.count("cp.async.bulk.wait_group 0") == 1
    assert "mbarrier" not in ptx  # a store completes through its bulk group
    # where TMA would not write exactly the masked elements, the masked store (test_tma_store)
    assert re.search(r"@%p\d+ st\.global", ptx)
    if find_ptxas() is not None:
        assert compiled.asm["cubin"]


def _compile_tiles(element, block, stages, warps, b_t):
    """tma_kernels.matmul_tiles as test_tma_gpu launches it (3 programs), for sm_90a."""
    BM, BN, BK = block
    b_block = f"[{BN}, {BK}]" if b_t else f"[{BK}, {BN}]"
    signature = {"a_desc": f"tensordesc<{element}[{BM}, {BK}]>",
                 "b_desc": f"tensordesc<{element}{b_block}>", "c_ptr": "*fp32",
                 "M": "i32", "N": "i32", "K": "i32"}  # fmt: skip
    return tilec.compile(matmul_tiles, signature, backend="nvidia", target="sm_90a",
                         constexprs={"BM": BM, "BN": BN, "BK": BK, "PROGRAMS": 3, "B_T": b_t},
                         num_stages=stages, num_warps=warps)  # fmt: skip


@pytest.mark.parametrize(("element", "shape", "block", "stages", "warps", "b_t"), PIPELINED)
def test_the_gpu_tests_pipelined_matmuls_fill_their_rings_through_tma(tma_on, element, shape,
                                                                      block, stages, warps, b_t):  # fmt: skip
    """test_tma_gpu's pipelined matmuls, compiled here: TMA in the ring (an fp8 b, which wgmma
    reads K-major, `transposed` in shared memory, keeps cp.async: TMA copies rows as they lie),
    inside the tile loop (barriers initialized and invalidated each time), ptxas assembles."""
    compiled = _compile_tiles(element, block, stages, warps, b_t)
    b_through_tma = element != "fp8e4nv" or b_t
    assert len(compiled.metadata["tensor_maps"]) == 1 + b_through_tma
    gir = compiled.asm["gir"]
    assert gir.count("gpu.async_bulk_copy_global_to_local") == (1 + b_through_tma) * stages
    assert ("gpu.async_copy_global_to_local" in gir) != b_through_tma
    steps = _tma_steps(compiled.asm["ptx"])
    assert steps.count("init") == steps.count("inval") == stages
    assert steps.count("wait") == 1
    # A read by wgmma from its slot, as Triton: through ldmatrix into registers, the wgmma left
    # in flight across iterations read registers the next iteration's ldmatrix overwrote
    assert "#dot_op" not in gir and "ldmatrix" not in compiled.asm["ptx"]
    if find_ptxas() is not None:
        assert compiled.asm["cubin"]


@pytest.mark.parametrize(("element", "shape", "block", "stages", "warps", "b_t"), LDMATRIX_RINGS)
def test_rings_tma_fills_for_mma_sync_are_read_by_ldmatrix(tma_on, element, shape, block, stages,
                                                           warps, b_t):  # fmt: skip
    """test_tma_gpu's mma.sync cases (BM = 32, which wgmma does not take): the rings TMA fills
    are read into registers by ldmatrix (a dot of mma.sync retires in its iteration: no
    register of it is in flight when the next iteration's ldmatrix writes), b^T (a `tile.trans`
    before its conversion, not pipelined) one TMA load a step."""
    compiled = _compile_tiles(element, block, stages, warps, b_t)
    gir, ptx = compiled.asm["gir"], compiled.asm["ptx"]
    assert "version = 2" in gir and "gpu.warp_group_dot" not in gir
    rings = 1 if b_t else 2
    assert gir.count("gpu.async_bulk_copy_global_to_local") == rings * stages
    assert "gpu.async_copy_global_to_local" not in gir
    assert gir.count("gpu.local_load") == rings and "ldmatrix" in ptx
    # every place in shared memory at a constant offset (the rings, their mbarriers, the scratch
    # of b^T's load and of its conversion, which ldmatrix reads) is 16-byte aligned: b^T's
    # scratch once started right above a's 3 mbarriers (24 bytes), and the conversion's
    # ldmatrix.trans raised "misaligned address" on the H200
    offsets = [int(n) for n in re.findall(r'@"global_smem", i32 (\d+)', compiled.asm["llir"])]
    assert offsets and all(offset % 16 == 0 for offset in offsets), offsets
    if find_ptxas() is not None:
        assert compiled.asm["cubin"]


@pytest.mark.parametrize(("rows", "cols", "size"), [
    (64, 64, 2), (64, 32, 2), (32, 16, 2), (128, 64, 2), (512, 64, 2), (64, 128, 2),
    (128, 128, 1), (64, 64, 1), (64, 256, 1), (16, 32, 4), (32, 8, 4), (4, 64, 2),
    (4, 128, 2), (8, 128, 2), (8, 64, 1), (16, 128, 1), (256, 64, 2),
])  # fmt: skip
def test_tma_boxes_land_where_the_nvmma_tile_reads_them(rows, cols, size):
    """A ring slot that TMA fills (tma_ring) is read as `#gpu.nvmma_shared<{swizzle = S}>`
    (`NvmmaTile`): where `ring_swizzle` takes the block, every element lands where the tile has
    it; where it does not, some element does not. TMA writes box after box (`_box_origins`: the
    column box index slowest), each row-major and swizzled on the address
    (`tma_kernels.swizzled`, the slot 1024-byte aligned): a box of 4 rows of 128 bytes starting
    at byte 512 is swizzled as rows 4-7, which `NvmmaTile` swizzles as rows 0-3."""
    swizzle = tensor_map.swizzle_bytes(cols * size)
    box = tensor_map.box_shape((rows, cols), size, swizzle)
    tile = NvmmaTile(rows, cols, size, swizzle)
    origins = tma_lowering._box_origins((rows, cols), box)
    box_bytes = box[0] * box[1] * size
    misplaced = 0
    for r in range(rows):
        for c in range(cols):
            index = origins.index((r - r % box[0], c - c % box[1]))
            within = ((r % box[0]) * box[1] + c % box[1]) * size
            misplaced += tile.offset(r, c) * size != swizzled(index * box_bytes + within, swizzle)
    assert (misplaced == 0) == (tma_ring.ring_swizzle((rows, cols), size) == swizzle)


@tilec.jit
def load_at(x_desc, y_ptr, N, C, BM: tl.constexpr, BN: tl.constexpr):
    i, j = tl.program_id(0), tl.program_id(1)
    block = x_desc.load([i * BM, C + j * BN])
    rows = i * BM + tl.arange(0, BM)
    cols = j * BN + tl.arange(0, BN)
    tl.store(y_ptr + rows[:, None] * N + cols[None, :], block)


def test_a_load_whose_innermost_offset_may_be_off_16_bytes_keeps_the_masked_load(tma_on):
    """TMA's innermost coordinate must be a multiple of 16 bytes (an illegal instruction
    otherwise: triton#7385): a column offset known only at run time gets both paths, chosen by
    its low bits (`tma_lowering.innermost_aligned`); one known aligned (a launch's multiple of
    16) only TMA."""
    signature = {"x_desc": "tensordesc<fp16[64, 64]>", "y_ptr": "*fp16", "N": "i32", "C": "i32"}
    compiled = tilec.compile(load_at, signature, constexprs={"BM": 64, "BN": 64},
                             backend="nvidia", target="sm_90a")  # fmt: skip
    ptx = compiled.asm["ptx"]
    assert ptx.count("cp.async.bulk.tensor.2d") == 1 and "ld.global" in ptx
    assert re.search(r"and\.b32\s+%r\d+, %r\d+, 7;", ptx)  # 8 halves a 16-byte chunk
    aligned = tilec.compile(load_at, signature, constexprs={"BM": 64, "BN": 64},
                            backend="nvidia", target="sm_90a", divisibility=["C"])  # fmt: skip
    ptx = aligned.asm["ptx"]
    assert "cp.async.bulk.tensor.2d" in ptx and "ld.global" not in ptx
    if find_ptxas() is not None:
        assert compiled.asm["cubin"] and aligned.asm["cubin"]
