"""Descriptors made in the kernel (`tl.make_tensor_descriptor`) through TMA on sm_90a, without
a GPU (docs/tma.md, step 4): where the descriptor's base, sizes and strides are kernel
parameters or constants and the launch's specialization proves TMA's alignments (a 16-byte
aligned base, outer strides of multiples of 16 bytes), its loads are the host descriptors'
TMA loads, one stage or filling a pipelined loop's ring, on a tensor map the launch encodes
from the parameters' values (`in_kernel` in `metadata["tensor_maps"]`); elsewhere, and with
`TILEC_NVIDIA_TMA=0`, the masked loads they were, the same PTX. The GPU runs these kernels in
test_tma_made_gpu.py."""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path

import pytest
from fake_libcuda import FakeLibCuda, encoded_map
from test_tma_compile import _tma_steps
from tma_kernels import matmul_tiles
from tma_made_kernels import (
    MATMULS,
    copy_made,
    copy_made_constant,
    copy_rows_of_heads,
    dot_shifted,
    matmul_made,
    store_made,
)

import tilec
from tilec.errors import TensorDescriptorError
from tilec.runtime import cache
from tilec_nvidia import driver as cuda
from tilec_nvidia import libcuda, tma_launch, tma_lowering
from tilec_nvidia.codegen import find_ptxas

COPY = {"x_ptr": "*fp16", "y_ptr": "*fp16", "M": "i32", "N": "i32", "ld": "i32", "out_ld": "i32"}
ALIGNED = ("x_ptr", "y_ptr", "M", "N", "ld", "out_ld")
BASE = 0x7F00_1234_0000
ELF = b"\x7fELF" + bytes(60)


def compile_copy(divisibility=ALIGNED, signature=COPY, block=(64, 64), padding="zero",
                 target="sm_90a"):  # fmt: skip
    constexprs = {"SHIFT": 0, "CSHIFT": 0, "BM": block[0], "BN": block[1], "PADDING": padding}
    return tilec.compile(copy_made, signature, constexprs=constexprs, backend="nvidia",
                         target=target, divisibility=divisibility)  # fmt: skip


def test_a_made_descriptors_load_is_one_tma_copy_on_a_map_the_launch_encodes(tma_on):
    compiled = compile_copy()
    assert compiled.metadata["tensor_maps"] == [{
        "element": "fp16", "base": 0, "shape": [["param", 2], ["param", 3]],
        "strides": [["param", 4], ["const", 1]], "block": [64, 64], "padding": "zero",
        "swizzle": 128, "in_kernel": True,
    }]  # fmt: skip
    assert "in_kernel" in compiled.asm["tir"]
    ptx = compiled.asm["ptx"]
    assert ".param .align 64 .b8 copy_made_param_6[128]" in ptx
    assert ptx.count("cp.async.bulk.tensor.2d") == 1 and "prefetch.tensormap" in ptx
    assert "ld.global" not in ptx  # the block comes through shared memory
    if find_ptxas() is not None:
        assert compiled.asm["cubin"]


@pytest.mark.parametrize(("divisibility", "why"), [
    (("y_ptr", "M", "N", "ld", "out_ld"), "the base may be off 16 bytes"),
    (("x_ptr", "y_ptr", "M", "N", "out_ld"), "the row stride may be off 16 bytes"),
])  # fmt: skip
def test_unproven_alignments_are_tested_at_run_time_on_a_map_the_kernel_builds(
    tma_on, monkeypatch, tmp_path, divisibility, why
):
    """TMA's rules that no host TensorDescriptor checked: where the specialization does not
    prove them, the launch encodes no map; the kernel builds one in its prologue
    (`tma_made`: `tensormap.replace`, global scratch) and reads through TMA where the run-time
    values keep the rules, else the masked load. With the setting off, the masked load."""
    compiled = compile_copy(divisibility)
    assert "tensor_maps" not in compiled.metadata, why
    assert compiled.metadata["global_scratch_size"] == 128
    ptx = compiled.asm["ptx"]
    assert ptx.count("tensormap.cp_fenceproxy") == 1
    assert ptx.index("tensormap.cp_fenceproxy") < ptx.index("$L__BB0_")  # the prologue
    assert ptx.count("cp.async.bulk.tensor.2d") == 1 and "ld.global" in ptx
    if find_ptxas() is not None:
        assert compiled.asm["cubin"]
    monkeypatch.setenv("TILEC_CACHE_DIR", str(tmp_path / "off"))
    monkeypatch.setenv("TILEC_NVIDIA_TMA", "0")
    cache.clear_memory()
    off = compile_copy(divisibility)
    assert "tile.descriptor_load" not in off.asm["tir"]
    assert "cp.async.bulk" not in off.asm["ptx"] and "tensormap" not in off.asm["ptx"]


def test_with_the_setting_off_and_on_sm_80_a_made_descriptor_is_the_masked_load(monkeypatch,
                                                                                tmp_path):  # fmt: skip
    monkeypatch.setenv("TILEC_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("TILEC_NVIDIA_TMA", "0")
    cache.clear_memory()
    off = compile_copy()
    assert "tensor_maps" not in off.metadata and "cp.async.bulk" not in off.asm["ptx"]
    monkeypatch.setenv("TILEC_NVIDIA_TMA", "1")
    cache.clear_memory()
    assert "tensor_maps" not in compile_copy(target="sm_80").metadata


@pytest.mark.parametrize(("element", "ld", "claimed"), [
    ("fp16", 64, True), ("fp16", 72, True), ("fp16", 20, False), ("fp32", 36, True),
    ("fp32", 34, False),
    ("i8", 48, True), ("i8", 40, False),
])  # fmt: skip
def test_a_constant_stride_is_taken_where_it_is_a_multiple_of_16_bytes(tma_on, element, ld,
                                                                       claimed):  # fmt: skip
    block = (32, 64 if element == "i8" else 16)
    signature = {"x_ptr": f"*{element}", "y_ptr": f"*{element}", "M": "i32"}
    compiled = tilec.compile(copy_made_constant, signature, backend="nvidia", target="sm_90a",
                             constexprs={"BM": block[0], "BN": block[1], "LD": ld},
                             divisibility=("x_ptr", "y_ptr"))  # fmt: skip
    maps = compiled.metadata.get("tensor_maps")
    assert bool(maps) == claimed
    assert "global_scratch_size" not in compiled.metadata  # no map built for a stride never
    # a multiple of 16 bytes (`tma_made._possible`)
    if claimed:  # the sizes and strides the kernel was compiled with
        assert maps[0]["shape"] == [["param", 2], ["const", block[1]]]
        assert maps[0]["strides"] == [["const", ld], ["const", 1]]


def test_a_made_descriptors_store_is_the_masked_store_with_tma_stores_off(tma_on, monkeypatch):
    monkeypatch.setattr(tma_lowering, "STORES", False)
    signature = {"x_ptr": "*fp32", "y_ptr": "*fp32", "M": "i32", "N": "i32"}
    compiled = tilec.compile(store_made, signature, constexprs={"BM": 32, "BN": 32},
                             backend="nvidia", target="sm_90a",
                             divisibility=("x_ptr", "y_ptr", "M", "N"))  # fmt: skip
    (loaded,) = compiled.metadata["tensor_maps"]
    assert loaded["base"] == 0 and loaded["in_kernel"]
    ptx = compiled.asm["ptx"]
    assert ptx.count("cp.async.bulk.tensor.2d.shared::cluster.global") == 1
    assert "st.global" in ptx and "cp.async.bulk.tensor.2d.global.shared" not in ptx


def test_a_made_descriptor_store_through_tma_reads_its_sizes_and_assembles(tma_stores_on):
    signature = {"x_ptr": "*fp32", "y_ptr": "*fp32", "M": "i64", "N": "i32"}
    compiled = tilec.compile(store_made, signature, constexprs={"BM": 32, "BN": 32},
                             backend="nvidia", target="sm_90a",
                             divisibility=("x_ptr", "y_ptr", "M", "N"))  # fmt: skip
    assert [m["base"] for m in compiled.metadata["tensor_maps"]] == [0, 1]
    ptx = compiled.asm["ptx"]
    assert "cp.async.bulk.tensor.2d.global.shared::cta.bulk_group" in ptx
    if find_ptxas() is not None:
        assert compiled.asm["cubin"]


def _matmul(kernel, element, block, stages, warps, b_t, made=True):
    bm, bn, bk = block
    if made:
        signature = {"a_ptr": f"*{element}", "b_ptr": f"*{element}", "c_ptr": f"*{element}",
                     "M": "i32", "N": "i32", "K": "i32"}  # fmt: skip
        divisible = ("a_ptr", "b_ptr", "c_ptr", "M", "N", "K")
    else:
        b_block = [bn, bk] if b_t else [bk, bn]
        signature = {"a_desc": f"tensordesc<{element}[{bm}, {bk}]>",
                     "b_desc": f"tensordesc<{element}[{b_block[0]}, {b_block[1]}]>",
                     "c_ptr": "*fp32", "M": "i32", "N": "i32", "K": "i32"}  # fmt: skip
        divisible = ("c_ptr", "M", "N", "K")
    return tilec.compile(kernel, signature, backend="nvidia", target="sm_90a",
                         constexprs={"BM": bm, "BN": bn, "BK": bk, "PROGRAMS": 132, "B_T": b_t},
                         num_stages=stages, num_warps=warps, divisibility=divisible)  # fmt: skip


@pytest.mark.parametrize(("element", "shape", "block", "stages", "warps", "b_t"), MATMULS)
def test_a_made_descriptor_matmul_fills_its_ring_as_host_descriptors_do(tma_on, element, shape,
                                                                        block, stages, warps,
                                                                        b_t):  # fmt: skip
    """Tutorial 09's device-descriptor persistent matmul: a's and b's loads fill the K loop's
    ring through TMA in the same steps (barriers, expects, copies, waits) as the same kernel's
    host descriptors; no cp.async left."""
    made = _matmul(matmul_made, element, block, stages, warps, b_t)
    host = _matmul(matmul_tiles, element, block, stages, warps, b_t, made=False)
    maps = made.metadata["tensor_maps"]
    stores = [2] if tma_lowering.STORES else []  # c's store where TMA stores are on
    assert [m["base"] for m in maps] == [0, 1, *stores] and all(m["in_kernel"] for m in maps)
    ptx = made.asm["ptx"]
    assert "cp.async.cg" not in ptx and "cp.async.ca" not in ptx
    steps = _tma_steps(ptx)  # the same steps (the blocks may be placed in another order)
    assert steps and sorted(steps) == sorted(_tma_steps(host.asm["ptx"]))
    if stages > 1:  # S barriers, then the prologue's S - 1 stages: an expect, a copy a block
        assert steps[: 4 * stages - 3] == ["init"] * stages + ["expect", "copy", "copy"] * (
            stages - 1
        )
    assert re.search(r"cp\.async\.bulk\.tensor\.2d\.shared::cluster", ptx)
    if find_ptxas() is not None:
        assert made.asm["cubin"]


def _launch(metadata, values):
    tma_launch.CACHE.clear()  # each launch encodes its map
    fake = FakeLibCuda()
    driver = cuda.CudaDriver(cu=libcuda.LibCuda(fake.lookup))
    kernel = driver.load(ELF, "k", is_ptx=False, signature=tuple(metadata["params"]))
    tma_launch.install(driver, kernel, metadata)
    driver.launch(kernel, (1,), 4, 32, values)
    return fake, kernel.packer


def test_a_made_descriptors_map_has_the_bytes_of_the_host_descriptors_map(tma_on):
    """The same tensor, block and padding give the same encoding (the same 128 bytes from
    the driver) whether a host TensorDescriptor or `tl.make_tensor_descriptor` describes it."""
    made = compile_copy(padding="nan")
    fake, packer = _launch(made.metadata, [BASE, BASE + 65536, 100, 72, 80, 72])
    (call,) = fake.encodings
    assert (call["dims"], call["strides"], call["box"], call["swizzle"], call["oob_fill"]) == (
        [72, 100], [160], [64, 64], 3, 1
    )  # fmt: skip
    host = {"params": ["*fp16", "i32", "i32", "i64", "*fp16", "i32"],
            "tensor_maps": [{"element": "fp16", "base": 0, "shape": [["param", 1], ["param", 2]],
                             "strides": [["param", 3], ["const", 1]], "block": [64, 64],
                             "padding": "nan", "swizzle": 128}]}  # fmt: skip
    host_fake, host_packer = _launch(host, [BASE, 100, 72, 80, BASE + 65536, 72])
    assert host_fake.encodings == fake.encodings
    assert packer.map_bytes(0) == host_packer.map_bytes(0) == encoded_map(call)


@pytest.mark.parametrize(("values", "rule"), [
    ([BASE, BASE, 0, 72, 80, 72], "1 to 2\\*\\*32"),  # an empty tensor
    ([BASE, BASE, 100, 72, -16, 72], "multiples of 16 bytes"),
])  # fmt: skip
def test_a_run_time_size_tma_cannot_take_is_an_error_naming_the_made_descriptor(tma_on, values,
                                                                               rule):  # fmt: skip
    made = compile_copy()
    with pytest.raises(TensorDescriptorError, match=rule) as raised:
        _launch(made.metadata, values)
    assert "tl.make_tensor_descriptor" in str(raised.value)
    assert "TILEC_NVIDIA_TMA=0" in str(raised.value)


@pytest.mark.parametrize(("shift", "copies"), [(0, 2), (4, 1), (8, 2)])
def test_a_ring_takes_a_load_only_where_its_innermost_offset_is_known_aligned(tma_on, shift,
                                                                            copies):  # fmt: skip
    """TMA's innermost coordinate must be a multiple of 16 bytes (an illegal instruction
    otherwise: triton#7385): a pipelined load at a column offset not known so (4 halves: 8
    bytes) fills its ring with cp.async; b's (and a's at 8 halves) with TMA."""
    signature = {"a_ptr": "*fp16", "b_ptr": "*fp16", "c_ptr": "*fp32", "M": "i32", "N": "i32",
                 "K": "i32"}  # fmt: skip
    compiled = tilec.compile(dot_shifted, signature, backend="nvidia", target="sm_90a",
                             constexprs={"SHIFT": shift, "BM": 64, "BN": 64, "BK": 32},
                             divisibility=("a_ptr", "b_ptr", "c_ptr", "M", "N", "K"),
                             num_stages=3)  # fmt: skip
    ptx = compiled.asm["ptx"]
    steps = _tma_steps(ptx)
    assert steps.count("copy") == 3 * copies  # the prologue's 2 stages and the loop's
    assert ("cp.async.cg" in ptx or "cp.async.ca" in ptx) == (copies == 1)
    if find_ptxas() is not None:
        assert compiled.asm["cubin"]


def test_the_maps_fields_are_those_triton_writes_in_the_kernel(tma_on):
    """Triton 3.6 builds tutorial 09's maps in the kernel (`tensormap.replace` on a zeroed
    template; its PTX for 128x128x64 fp16, 8 warps, 4 stages): a, b: box_dim 64, 128 (innermost
    first), element_stride 1, 1, elemtype 6 (fp16), interleave_layout 0, swizzle_mode 3 (128B),
    fill_mode 0, global_stride the row's bytes; c's box the same. The launch encodes the same
    fields (and L2 promotion 128B where Triton's template leaves 0, as Triton's launcher
    encodes a host descriptor)."""
    made = _matmul(matmul_made, "fp16", (128, 128, 64), 4, 8, True)
    specs = [tma_launch.TensorMapParameter.from_json(m) for m in made.metadata["tensor_maps"]]
    assert len(specs) == 2 + int(tma_lowering.STORES)  # a, b (c where TMA stores are on)
    values = [BASE, BASE + 2**24, BASE + 2**25, 512, 384, 1024]  # a, b, c, M, N, K
    for spec, dims, stride in zip(specs, [(1024, 512), (1024, 384), (384, 512)], [2048, 2048, 768],
                                  strict=False):  # fmt: skip
        req = spec.request(values)
        assert (req.box, req.element_strides, req.data_type, req.interleave, req.swizzle,
                req.oob_fill) == ((64, 128), (1, 1), 6, 0, 3, 0)  # fmt: skip
        assert (req.global_dims, req.global_strides) == (dims, (stride,))


def test_a_size_made_as_a_product_of_parameters_is_evaluated_at_launch(tma_on):
    """The fused-attention tutorial's `y_dim = Z * H * N_CTX`: the map's size is the product of
    the parameters' values, wrapped to i32 as the kernel's multiplication wraps it."""
    signature = {"x_ptr": "*fp16", "y_ptr": "*fp16", "Z": "i32", "H": "i32", "N": "i32"}
    compiled = tilec.compile(copy_rows_of_heads, signature, backend="nvidia", target="sm_90a",
                             constexprs={"D": 64, "BM": 64},
                             divisibility=("x_ptr", "y_ptr"))  # fmt: skip
    (spec,) = compiled.metadata["tensor_maps"]
    assert spec["shape"] == [["mul", 32, [["param", 2], ["param", 3], ["param", 4]]],
                             ["const", 64]]  # fmt: skip
    assert "cp.async.bulk.tensor.2d" in compiled.asm["ptx"]
    parameter = tma_launch.TensorMapParameter.from_json(spec)
    assert parameter.to_json() == spec
    assert parameter.request([BASE, BASE, 2, 3, 100]).global_dims == (64, 600)
    with pytest.raises(TensorDescriptorError, match="shape \\[-1294967296, 64\\]"):
        parameter.request([BASE, BASE, 1000, 1000, 3000])  # 3 * 10**9 wraps in i32
    if find_ptxas() is not None:
        assert compiled.asm["cubin"]


def test_the_fused_attention_tutorials_made_descriptors_go_through_tma(tma_on):
    """tests/compat/tutorials/fused_attention.py's forward as it runs on Hopper with
    warp_specialize (descriptors made in the kernel, y_dim = Z * H * N_CTX): q's load, k's and
    v's in the pipelined loop and o's store all read or write through tensor maps."""
    pytest.importorskip("torch", reason="the tutorial imports torch")
    path = Path(__file__).parents[1] / "compat" / "tutorials" / "fused_attention.py"
    spec = importlib.util.spec_from_file_location("tma_made_fused_attention", path)
    fused_attention = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(fused_attention)
    kernel = fused_attention._attn_fwd.fn
    signature = {"sm_scale": "fp32", "M": "*fp32", "Z": "i32", "H": "i32", "desc_q": "*fp16",
                 "desc_k": "*fp16", "desc_v": "*fp16", "desc_o": "*fp16", "N_CTX": "i32"}  # fmt: skip
    compiled = tilec.compile(kernel, signature, backend="nvidia", target="sm_90a",
                             constexprs={"HEAD_DIM": 64, "BLOCK_M": 128, "BLOCK_N": 64,
                                         "FP8_OUTPUT": False, "STAGE": 1,
                                         "warp_specialize": True},
                             divisibility=("M", "desc_q", "desc_k", "desc_v", "desc_o", "N_CTX"),
                             num_warps=8, num_stages=3)  # fmt: skip
    maps = compiled.metadata["tensor_maps"]
    assert sorted(m["base"] for m in maps) == [4, 5, 6, 7][: len(maps)] and len(maps) >= 3
    assert all(m["shape"][0][0] == "mul" for m in maps)
    if find_ptxas() is not None:
        assert compiled.asm["cubin"]
