"""Descriptors made in the kernel from values it computes (a base offset by the program id, a
size minus a parameter, a computed stride, a descriptor made in a loop) through TMA on sm_90a,
without a GPU (docs/tma.md, step 4; `tilec_nvidia.tma_made`): each access builds its tensor
map in the kernel with `tensormap.replace` (the fields those the host encoder gives for the
same values: a Python model of the sequence against `tensor_map.request`), in global scratch
the launch gets from `tilec.set_allocator`'s allocator; where a run-time value breaks a TMA
rule, the masked access (the test of the rules run on the host CPU through LLVM's JIT). The GPU
runs these kernels in test_tma_computed_gpu.py."""

from __future__ import annotations

import ctypes
import re

import pytest
from fake_libcuda import FakeLibCuda
from llvmlite import binding as llvm
from llvmlite import ir
from test_nvidia_hot_path import Tensor
from test_nvidia_hot_path import general as general_launches  # noqa: F401  (the fixtures)
from test_nvidia_hot_path import torch_stream as fake_torch  # noqa: F401
from tma_computed_kernels import (
    copy_computed_stride,
    copy_offset_base,
    copy_tail_1d,
    row_sums_in_loop,
    row_sums_invariant,
    scale_in_place,
    store_offset_base,
)

import tilec
from tilec.errors import OptionTypeError, OptionValueError
from tilec.runtime import cache
from tilec_nvidia import codegen, launcher, libcuda, tensor_map, tma_launch, tma_made
from tilec_nvidia import driver as cuda
from tilec_nvidia.codegen import find_ptxas

ELF = b"\x7fELF" + bytes(60)
BASE = 0x7F00_1234_0000
REPLACE = re.compile(
    r"tensormap\.replace\.tile\.(\w+)\.shared::cta\.b1024\.b(?:32|64) \[[^\]]+\], ([^;]+);"
)


def _compile(kernel, element="fp16", block=(64, 64), target="sm_90a", **constexprs):
    names = list(kernel.arg_names)
    kinds = {"factor": "fp32"}
    signature = {n: (f"*{element}" if n.endswith("_ptr") else kinds.get(n, "i32")) for n in names
                 if n not in constexprs and n not in ("BM", "BN")}  # fmt: skip
    return tilec.compile(kernel, signature, constexprs={"BM": block[0], "BN": block[1],
                                                        **constexprs},
                         backend="nvidia", target=target,
                         divisibility=[n for n in names if n.endswith("_ptr")])  # fmt: skip


def _offset_copy(element="fp16", block=(64, 64), padding="zero", target="sm_90a"):
    return _compile(copy_offset_base, element, block, target, CUT=0, SHIFT=0, PADDING=padding)


def _replaces(ptx: str) -> list[tuple[str, int | None, str]]:
    """The `tensormap.replace` sequence of `ptx`: field, ordinal, value (an immediate's digits
    or a register's name)."""
    out = []
    for field, operands in REPLACE.findall(ptx):
        parts = [p.strip() for p in operands.split(",")]
        ordinal = int(parts[0]) if len(parts) == 2 else None
        out.append((field, ordinal, parts[-1]))
    return out


def test_a_descriptor_whose_base_the_kernel_offsets_builds_its_map_in_the_kernel(tma_on):
    compiled = _offset_copy()
    assert "tensor_maps" not in compiled.metadata
    assert (compiled.metadata["global_scratch_size"],
            compiled.metadata["global_scratch_align"]) == (128, 128)  # fmt: skip
    assert "made" in compiled.asm["tir"]
    ptx = compiled.asm["ptx"]
    assert ".version 8.3" in ptx  # tensormap.replace's PTX ISA
    steps = [line.split()[1].split(".")[0] + "." + line.split()[1].split(".")[1]
             for line in ptx.splitlines()
             if "tensormap." in line or "fence.proxy.tensormap" in line]  # fmt: skip
    assert steps == ["tensormap.replace"] * 13 + ["tensormap.cp_fenceproxy",
                                                  "fence.proxy"]  # fmt: skip
    order = [ptx.index(s) for s in ("st.shared.b32", "bar.warp.sync", "tensormap.replace",
                                    "tensormap.cp_fenceproxy", "fence.proxy.tensormap",
                                    "cp.async.bulk.tensor.2d")]  # fmt: skip
    assert order == sorted(order)
    assert ptx.count("cp.async.bulk.tensor.2d") == 1
    assert "ld.global" in ptx  # the masked load, where a run-time value breaks a rule
    if find_ptxas() is not None:
        assert compiled.asm["cubin"]


@pytest.mark.parametrize(("element", "block", "padding"), [
    ("fp16", (64, 64), "zero"), ("fp32", (32, 64), "nan"), ("i8", (16, 128), "zero"),
    ("bf16", (32, 16), "nan"),
])  # fmt: skip
def test_the_ptxs_replace_sequence_is_the_models(tma_on, element, block, padding):
    """Every field the kernel writes, in order, with the constants `tma_made.fields` gives."""
    ptx = _offset_copy(element, block, padding).asm["ptx"]
    expected = tma_made.fields(element, block, tensor_map.swizzle_bytes(
        block[1] * tensor_map._element_bytes(element)), padding)  # fmt: skip
    written = _replaces(ptx)
    assert [(f, o) for f, o, _ in written] == [(f, o) for f, o, _ in expected]
    for (_f, _o, value), (_, _, source) in zip(written, expected, strict=True):
        if source[0] == "const":
            assert value == str(source[1])
        else:
            assert value.startswith("%")  # a register: computed in the kernel
    if find_ptxas() is not None:
        assert _offset_copy(element, block, padding).asm["cubin"]


def _written(element, block, swizzle, padding, address, shape, strides, shift):
    """What the kernel's replace sequence writes (field, ordinal) -> value, for these values:
    the model of `tma_made.build_map`'s operands."""
    size = tensor_map._element_bytes(element)
    out = {}
    for field, ordinal, source in tma_made.fields(element, block, swizzle, padding):
        kind = source[0]
        if kind == "const":
            value = source[1]
        elif kind == "base":
            value = address
        elif kind == "size":
            value = shape[source[1]] % 2**32  # a b32 field
        else:
            value = (strides[source[1]] * size) >> shift
        out[(field, ordinal)] = value
    return out


PTX_ELEMTYPES = {"u8": 0, "u16": 1, "u32": 2, "s32": 3, "u64": 4, "s64": 5, "f16": 6, "f32": 7,
                 "f32.ftz": 8, "f64": 9, "bf16": 10}  # fmt: skip
"""The PTX ISA's `tensormap.replace` elemtype encoding (Triton 3.6's PTX: bf16 0xa, fp64 0x9)."""
CU_DATA_TYPES = {"u8": 0, "u16": 1, "u32": 2, "s32": 3, "u64": 4, "s64": 5, "f16": 6, "f32": 7,
                 "f64": 8, "bf16": 9}  # fmt: skip
"""cuda.h's `CUtensorMapDataType` (what `cuTensorMapEncodeTiled` and `tensor_map.request`
take)."""
PTX_TO_CU = {PTX_ELEMTYPES[name]: code for name, code in CU_DATA_TYPES.items()}


def _read_back(written, shift):
    """The map those fields make (tensormap.replace's semantics; ptxas up to PTX 8.5 takes
    the stride in 16-byte units), in `TensorMapRequest`'s terms."""
    rank = written[("rank", None)] + 1
    return {
        "data_type": PTX_TO_CU[written[("elemtype", None)]],
        "address": written[("global_address", None)],
        "global_dims": tuple(written[("global_dim", d)] for d in range(rank)),
        "global_strides": tuple(written[("global_stride", d)] << shift for d in range(rank - 1)),
        "box": tuple(written[("box_dim", d)] for d in range(rank)),
        "element_strides": tuple(written[("element_stride", d)] for d in range(rank)),
        "interleave": written[("interleave_layout", None)],
        "swizzle": written[("swizzle_mode", None)],
        "oob_fill": written[("fill_mode", None)],
    }


@pytest.mark.parametrize(("element", "block", "padding", "written"), [
    ("fp16", (64, 64), "zero", (6, 3, 0)), ("fp32", (32, 64), "nan", (7, 3, 1)),
    ("i8", (16, 128), "zero", (0, 3, 0)), ("bf16", (32, 16), "nan", (10, 1, 1)),
    ("fp32", (16, 8), "zero", (7, 1, 0)), ("fp16", (256, 32), "zero", (6, 2, 0)),
    ("fp8e4nv", (16, 64), "zero", (0, 2, 0)),
])  # fmt: skip
def test_the_constant_fields_are_those_triton_writes(tma_on, element, block, padding, written):
    """elemtype, swizzle_mode and fill_mode as Triton 3.6's PTX writes them for a descriptor of
    a program-offset base and a computed size (sm_90a; rank 1 and interleave_layout 0 too):
    tensormap.replace's encoding, not cuda.h's (bf16 is 9 there)."""
    fields = dict((f, v) for f, o, v in _replaces(_offset_copy(element, block, padding)
                                                 .asm["ptx"]) if o is None)  # fmt: skip
    elemtype, swizzle, fill = written
    assert fields == {"global_address": fields["global_address"], "rank": "1",
                      "elemtype": str(elemtype), "interleave_layout": "0",
                      "swizzle_mode": str(swizzle), "fill_mode": str(fill)}  # fmt: skip


@pytest.mark.parametrize(("element", "shape", "strides", "block", "padding"), [
    ("fp16", [100, 72], [80, 1], [64, 64], "zero"),
    ("fp32", [100], [1], [32], "nan"),
    ("fp64", [30, 10], [12, 1], [8, 16], "nan"),
    ("i16", [30, 10], [16, 1], [8, 16], "zero"),
    ("u32", [30, 10], [12, 1], [8, 16], "zero"),
    ("i64", [30, 10], [12, 1], [8, 16], "zero"),
    ("fp32", [70, 90], [96, 1], [32, 64], "nan"),
    ("i8", [33, 300], [304, 1], [16, 128], "zero"),
    ("bf16", [5, 7, 48], [7 * 64, 64, 1], [2, 4, 32], "nan"),
    ("fp16", [2**31 - 1, 8], [8, 1], [256, 8], "zero"),
    ("fp8e4nv", [3, 4, 5, 6, 64], [4 * 5 * 6 * 64, 5 * 6 * 64, 6 * 64, 64, 1],
     [1, 2, 2, 4, 64], "zero"),
])  # fmt: skip
@pytest.mark.parametrize(("release", "shift"), [((12, 6), 4), ((12, 8), 0), ((13, 0), 0),
                                               (None, 0)])  # fmt: skip
def test_the_fields_written_are_the_host_encoders(monkeypatch, element, shape, strides, block,
                                                  padding, release, shift):  # fmt: skip
    """The map the kernel builds for a descriptor's values equals the host encoding of the same
    values (`tensor_map.request`, what `cuTensorMapEncodeTiled` gets for a host descriptor),
    but for L2 promotion, which Triton's zeroed template leaves at none (0); with a ptxas of
    CUDA 12.6 or older, which takes `global_stride` in 16-byte units, and a later one."""
    monkeypatch.setattr(tma_made, "ptxas_release", lambda: release)
    assert tma_made.stride_shift() == shift
    size = tensor_map._element_bytes(element)
    swizzle = tensor_map.swizzle_bytes(block[-1] * size)
    req = tensor_map.request(element, BASE, shape, strides, block, padding, swizzle)
    made = _read_back(_written(element, block, swizzle, padding, BASE, shape, strides, shift),
                      shift)  # fmt: skip
    assert made == {key: getattr(req, key) for key in made}
    assert req.l2_promotion == tensor_map.L2_PROMOTION_128B


STRIDE_PTX = "\n".join([
    ".version 8.3", ".target sm_90a", ".address_size 64",
    ".shared .align 128 .b8 map[128];",
    ".visible .entry k(.param .u64 p) {",
    "  .reg .b64 %rd<3>;",
    "  ld.param.u64 %rd1, [p];",
    "  mov.u64 %rd2, map;",
    "  tensormap.replace.tile.global_stride.shared::cta.b1024.b64 [%rd2], 0, 0x123450;",
    "  tensormap.cp_fenceproxy.global.shared::cta.tensormap::generic.release.gpu.sync.aligned"
    " [%rd1], [%rd2], 128;",
    "  ret;", "}", "",
])  # fmt: skip


def test_the_ptxas_takes_the_stride_in_the_unit_stride_shift_says():
    """The map holds a stride in 16-byte units: a ptxas that takes bytes (stride_shift 0)
    assembles the immediate 0x123450 to 0x12345; one of CUDA 12.6 or older takes the units."""
    if find_ptxas() is None:
        pytest.skip("no ptxas")
    cubin = codegen.ptx_to_cubin(STRIDE_PTX, "sm_90a")
    units = (0x12345 if tma_made.stride_shift() == 0 else 0x123450).to_bytes(4, "little")
    assert units in cubin


# The run-time rules, on the host through LLVM's JIT ----------------------------------------


def _usable_function(rank: int, size: int):
    """`tma_made.usable` for `rank` dimensions of `size`-byte elements as a host function of
    (base, sizes..., strides..., offsets...), all i64."""
    llvm.initialize_native_target()
    llvm.initialize_native_asmprinter()
    module = ir.Module("usable")
    count = 1 + rank + (rank - 1) + rank
    function = ir.Function(module, ir.FunctionType(ir.IntType(8), [ir.IntType(64)] * count), "f")
    b = ir.IRBuilder(function.append_basic_block())
    args = list(function.args)
    base = b.inttoptr(args[0], ir.PointerType())
    sizes, strides, offsets = args[1 : 1 + rank], args[1 + rank : 2 * rank], args[2 * rank :]
    ok = tma_made.usable(b, base, sizes, strides, offsets, size)
    b.ret(b.zext(ok, ir.IntType(8)))
    parsed = llvm.parse_assembly(str(module))
    machine = llvm.Target.from_default_triple().create_target_machine()
    engine = llvm.create_mcjit_compiler(parsed, machine)
    engine.finalize_object()
    address = engine.get_function_address("f")
    call = ctypes.CFUNCTYPE(ctypes.c_uint8, *[ctypes.c_int64] * count)(address)
    return lambda *values: bool(call(*values)), engine


@pytest.mark.parametrize(("values", "usable", "why"), [
    ((BASE, 100, 72, 80, 0, 64), True, "aligned, in range"),
    ((BASE + 8, 100, 72, 80, 0, 64), False, "a base off 16 bytes"),
    ((BASE, 0, 72, 80, 0, 64), False, "an empty dimension"),
    ((BASE, -5, 72, 80, 0, 64), False, "a negative size"),
    ((BASE, 2**31, 72, 80, 0, 64), False, "a size past the b32 field"),
    ((BASE, 2**31 - 1, 72, 80, 0, 64), True, "the largest size"),
    ((BASE, 100, 72, 84, 0, 64), False, "a stride of 168 bytes"),
    ((BASE, 100, 72, 0, 0, 64), False, "a stride of 0"),
    ((BASE, 100, 72, -80, 0, 64), False, "a negative stride"),
    ((BASE, 100, 72, 2**39, 0, 64), False, "a stride of 2**40 bytes"),
    ((BASE, 100, 72, 2**39 - 8, 0, 64), True, "a stride below 2**40 bytes"),
    ((BASE, 100, 72, 80, -(2**31), 64), True, "the lowest i32 offset"),
    ((BASE, 100, 72, 80, 2**31, 64), False, "an offset past i32"),
    ((BASE, 100, 72, 80, 0, -(2**31) - 1), False, "an offset below i32"),
])  # fmt: skip
def test_run_time_values_tma_cannot_take_choose_the_masked_access(values, usable, why):
    check, _engine = _usable_function(2, 2)
    assert check(*values) == usable, why


def test_a_one_byte_elements_stride_is_a_multiple_of_16():
    check, _engine = _usable_function(2, 1)
    assert check(BASE, 10, 10, 48, 0, 0)
    assert not check(BASE, 10, 10, 40, 0, 0)


# What is claimed ---------------------------------------------------------------------------


def test_computed_strides_stores_and_loops_build_a_map_an_access(tma_stores_on):
    stride = _compile(copy_computed_stride, block=(32, 64))
    assert stride.metadata["global_scratch_size"] == 256  # the load's map and the store's
    assert stride.asm["ptx"].count("tensormap.cp_fenceproxy") == 2
    loop = _compile(row_sums_in_loop, "fp32", (32, 32))
    assert loop.metadata["global_scratch_size"] == 128  # one slot, rebuilt each iteration
    store = _compile(store_offset_base, "bf16", (32, 64))
    ptx = store.asm["ptx"]
    assert "cp.async.bulk.tensor.2d.global.shared::cta.bulk_group" in ptx
    assert "st.global" in ptx  # the masked store where TMA would not write exactly
    if find_ptxas() is not None:
        assert stride.asm["cubin"] and loop.asm["cubin"] and store.asm["cubin"]


def _first_label(ptx: str) -> int:
    return ptx.index("$L__BB0_")


def test_the_shared_map_and_the_barrier_are_counted_in_the_shared_bytes(tma_stores_on):
    """The map a kernel builds once (128 bytes, 128-byte aligned) and its TMA barrier (8 bytes)
    are in the dynamic shared memory above every other use, counted in `shared_bytes` (the
    launch's allocation, the arch's limit; the gir's estimate too): no static shared memory,
    which a kernel near the limit would go over at launch."""
    from tilec.ir.parser import parse_module
    from tilec.layout.residency import shared_bytes

    invariant = _compile(row_sums_invariant, "fp32", (32, 32))
    in_loop = _compile(row_sums_in_loop, "fp32", (32, 32))  # its map in the scratch buffer
    for compiled in (invariant, in_loop):
        ptx = compiled.asm["ptx"]
        shared = re.findall(r"^\s*(?:\.extern\s+)?\.shared\b.* (\w+)\[?\d*\]?;$", ptx, re.MULTILINE)
        assert shared == ["global_smem"]
    scratch = in_loop.metadata["shared_bytes"] - 8  # the same reduction scratch in both
    assert scratch % 128 == 0 and scratch > 0
    assert invariant.metadata["shared_bytes"] == scratch + 128 + 8
    module = parse_module(invariant.asm["gir"], "row_sums_invariant.gir")
    assert shared_bytes(module, {}) == 128 + 8  # no buffer; the scratch is left out


def test_a_map_is_built_once_where_the_descriptor_is_made(tma_stores_on):
    """A descriptor made in the kernel's top-level code (Triton builds its map there): one map
    for the loop's loads, built before the loop, in the kernel's own 128 shared bytes; one map
    for a load and a store of one descriptor. A descriptor made in the loop builds its map
    there, each iteration, in the scratch buffer."""
    invariant = _compile(row_sums_invariant, "fp32", (32, 32)).asm["ptx"]
    assert invariant.count("tensormap.cp_fenceproxy") == 1
    assert invariant.index("tensormap.cp_fenceproxy") < _first_label(invariant)
    in_loop = _compile(row_sums_in_loop, "fp32", (32, 32)).asm["ptx"]
    assert in_loop.count("tensormap.cp_fenceproxy") == 1
    assert in_loop.index("tensormap.cp_fenceproxy") > _first_label(in_loop)
    shared = _compile(scale_in_place, "fp16", (32, 64))
    assert shared.metadata["global_scratch_size"] == 128
    ptx = shared.asm["ptx"]
    assert ptx.count("tensormap.cp_fenceproxy") == 1 and ptx.count("tensormap.replace") == 13
    assert ptx.count("cp.async.bulk.tensor.2d") == 2  # the load and the store
    if find_ptxas() is not None:
        assert shared.asm["cubin"]


def test_a_one_dimensional_descriptor_writes_no_stride(tma_on):
    signature = {"x_ptr": "*fp32", "y_ptr": "*fp32", "n": "i32"}
    compiled = tilec.compile(copy_tail_1d, signature, constexprs={"BLOCK": 32},
                             backend="nvidia", target="sm_90a",
                             divisibility=("x_ptr", "y_ptr"))  # fmt: skip
    written = _replaces(compiled.asm["ptx"])
    assert [f for f, _o, _v in written] == [f for f, _o, _s in tma_made.fields(
        "fp32", (32,), 128, "zero")]  # fmt: skip
    assert "global_stride" not in {f for f, _o, _v in written}
    assert "cp.async.bulk.tensor.1d" in compiled.asm["ptx"]
    if find_ptxas() is not None:
        assert compiled.asm["cubin"]


@pytest.mark.parametrize("target", ["sm_90", "sm_80"])
def test_without_tensormap_replace_a_computed_descriptor_is_the_masked_access(tma_on, target):
    """sm_90 (not sm_90a) has TMA but not tensormap.replace; sm_80 neither."""
    compiled = _offset_copy(target=target)
    assert "global_scratch_size" not in compiled.metadata
    assert "tensormap" not in compiled.asm["ptx"]
    assert "cp.async.bulk.tensor" not in compiled.asm["ptx"]


def test_with_the_setting_off_a_computed_descriptor_is_the_masked_load(monkeypatch, tmp_path):
    monkeypatch.setenv("TILEC_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("TILEC_NVIDIA_TMA", "0")
    cache.clear_memory()
    compiled = _offset_copy()
    assert "made" not in compiled.asm["tir"]
    assert "global_scratch_size" not in compiled.metadata


# The launch: global scratch from the allocator ---------------------------------------------


@pytest.fixture
def allocator():
    """`tilec.set_allocator` of a recorder (reset after the test)."""
    asked = []

    class Buffer:
        def __init__(self, address):
            self.address = address

        def data_ptr(self):
            return self.address

    def allocate(size, alignment, stream):
        asked.append((size, alignment, stream))
        return Buffer(0x5000_0000 + 0x1_0000 * len(asked))

    tilec.set_allocator(allocate)
    yield asked
    tilec.set_allocator(None)


def test_a_launch_passes_scratch_for_every_program_from_the_allocator(tma_on, allocator):
    compiled = _offset_copy()
    fake = FakeLibCuda()
    driver = cuda.CudaDriver(cu=libcuda.LibCuda(fake.lookup))
    kernel = driver.load(ELF, "k", is_ptx=False, signature=tuple(compiled.metadata["params"]))
    tma_launch.install(driver, kernel, compiled.metadata)
    fake.params_read = len(compiled.metadata["params"]) + 1
    driver.launch(kernel, (3, 2), 4, 32, [BASE, BASE + 2**20, 100, 72, 80])
    assert allocator == [(6 * 128, 128, 0)]  # 3 x 2 programs, one map each
    assert fake.launches[-1][-1][-1] == 0x5001_0000  # the last parameter: the scratch
    driver.launch(kernel, (5,), 4, 32, [BASE, BASE + 2**20, 100, 72, 80], stream=7)
    assert allocator[-1] == (5 * 128, 128, 7)
    assert fake.launches[-1][-1][-1] == 0x5002_0000


class _NoPointer:
    def data_ptr(self):
        return None


@pytest.mark.parametrize(
    ("returned", "error", "what"),
    [
        (None, OptionTypeError, "it returned None, not an int address"),
        (object(), OptionTypeError, "it returned <object object"),
        (_NoPointer(), OptionTypeError, "whose data_ptr\\(\\) gave None"),
        ("0x7f00", OptionTypeError, "it returned '0x7f00'"),
        (0, OptionValueError, "it returned the address 0x0"),
        (-128, OptionValueError, "it returned the address -0x80"),
    ],
)
def test_an_allocator_that_gives_no_address_is_a_tilec_error(tma_on, returned, error, what):
    """What `tilec.set_allocator`'s allocator returns that is no device address is a tilec
    error naming the kernel, the request and the fix (Triton 3.6 passes None on as a null
    pointer, which the kernel writes through, and raises a TypeError for an object without
    `data_ptr()`): nothing is launched."""
    compiled = _offset_copy()
    fake = FakeLibCuda()
    driver = cuda.CudaDriver(cu=libcuda.LibCuda(fake.lookup))
    kernel = driver.load(ELF, "k", is_ptx=False, signature=tuple(compiled.metadata["params"]))
    tma_launch.install(driver, kernel, compiled.metadata)
    tilec.set_allocator(lambda size, alignment, stream: returned)
    try:
        with pytest.raises(error, match=what) as raised:
            driver.launch(kernel, (3, 2), 4, 32, [BASE, BASE + 2**20, 100, 72, 80])
    finally:
        tilec.set_allocator(None)
    message = str(raised.value)
    assert "kernel 'k'" in message and "768 bytes (128-byte aligned)" in message
    assert "tilec.set_allocator(None)" in message and "torch.empty(size" in message
    assert isinstance(raised.value, TypeError if error is OptionTypeError else ValueError)
    assert not fake.launches


def test_without_an_allocator_the_kernel_keeps_scratch_of_its_own_a_stream():
    class Driver:
        def __init__(self):
            self.allocated, self.freed = [], []

        def mem_alloc(self, nbytes):
            self.allocated.append(nbytes)
            return 0x9000_0008 + 0x100_0000 * len(self.allocated)

        def mem_free(self, address):
            self.freed.append(address)

    driver = Driver()
    scratch = tma_launch.GlobalScratch(256, 128)
    first = scratch.address(driver, 4, None)
    assert first % 128 == 0 and driver.allocated == [1024 + 128]
    assert scratch.address(driver, 2, None) == first  # fits: the same memory
    other = scratch.address(driver, 2, 5)  # another stream: its own
    assert other != first and len(driver.allocated) == 2
    grown = scratch.address(driver, 8, None)  # larger: the old one freed
    assert grown % 128 == 0 and driver.freed == [0x9100_0008]


def test_the_fast_launch_packs_with_the_programs_and_the_stream():
    class Loaded:
        packer = tma_launch.TmaPacker(None, ["*fp16", "i32"], None, [],
                                      scratch=tma_launch.GlobalScratch(128, 128))  # fmt: skip
        one_wave_function = None

    body = launcher._launch_body(Loaded(), "0", "values", "None")
    assert "pack(values, x * y * z, handle)" in body
    with pytest.raises(TypeError, match="programs"):
        Loaded.packer.pack([BASE, 3])


@pytest.mark.usefixtures("fake_torch", "tma_on")
def test_the_runner_and_the_fast_path_pass_scratch_for_the_grid(fake_gpu, allocator, request):
    """`kernel[grid](...)` with torch tensors (fake): the runner's launch, then the fast path,
    each asks the allocator for the launch's programs on torch's current stream and passes
    the memory as the last parameter."""
    general = request.getfixturevalue("general_launches")
    x, y = Tensor(0x10000, "torch.float16"), Tensor(0x20000, "torch.float16")
    meta = dict(CUT=0, SHIFT=0, BM=64, BN=64, PADDING="zero", backend="nvidia")
    for grid, address in (((2, 3), 0x5001_0000), ((4, 1), 0x5002_0000)):
        copy_offset_base[grid](x, y, 100, 72, 80, **meta)
        pointers = (ctypes.c_void_p * 6).from_address(fake_gpu.launches[-1][5])
        assert ctypes.c_uint64.from_address(pointers[5]).value == address
    assert allocator == [(6 * 128, 128, 0x900), (4 * 128, 128, 0x900)]
    assert len(general) == 1  # the second launch took the fast path
