"""TMA's building blocks (docs/tma.md), without a GPU: the tensor map's encoding arguments and
TMA's rules (`tilec_nvidia.tensor_map`), `cuTensorMapEncodeTiled` through the ctypes driver on
a fake libcuda and through cuda-bindings' form, the cache of encodings, and the device PTX of
`tilec_nvidia.tma` (a 128-byte grid-constant parameter, mbarriers, `cp.async.bulk.tensor`)
assembled by ptxas. The GPU runs the same kernel in test_tma_gpu.py."""

from __future__ import annotations

import ctypes
import re
import types

import pytest
from fake_libcuda import FakeLibCuda, encoded_map
from tma_kernels import MAP_INDEX, NAME, signature, swizzled, tensor_maps, tma_copy_llir

from tilec.errors import TensorDescriptorError
from tilec.lowering.context import LoweringError
from tilec_nvidia import driver as cuda
from tilec_nvidia import libcuda, tensor_map, tma_launch
from tilec_nvidia.codegen import find_ptxas, llir_to_ptx, ptx_to_cubin

BASE = 0x7F00_1234_0000
ELF = b"\x7fELF" + bytes(60)


def fp16_request(**changes):
    args = dict(element="fp16", address=BASE, shape=(100, 72), strides=(72, 1),
                block_shape=(64, 64), padding="zero", swizzle=128)  # fmt: skip
    args.update(changes)
    return tensor_map.request(**args)


def test_the_encoding_is_innermost_first_with_byte_strides():
    req = fp16_request()
    assert req == tensor_map.TensorMapRequest(
        data_type=6,  # CU_TENSOR_MAP_DATA_TYPE_FLOAT16
        address=BASE,
        global_dims=(72, 100),
        global_strides=(144,),  # bytes, the innermost (the element) left out
        box=(64, 64),
        element_strides=(1, 1),
        interleave=0,  # NONE
        swizzle=3,  # 128B
        l2_promotion=2,  # L2_128B, Triton's
        oob_fill=0,  # zeros
    )
    three = tensor_map.request("bf16", BASE, (4, 30, 64), (64 * 32, 64, 1), (2, 16, 32),
                               "nan", 64)  # fmt: skip
    assert (three.data_type, three.global_dims, three.global_strides, three.box) == (
        9, (64, 30, 4), (128, 4096), (32, 16, 2)
    )  # fmt: skip
    assert (three.swizzle, three.oob_fill) == (2, 1)  # 64B, NAN_REQUEST_ZERO_FMA


@pytest.mark.parametrize(
    ("element", "code"),
    [("i8", 0), ("u8", 0), ("fp8e4nv", 0), ("i16", 1), ("u32", 2), ("i32", 3), ("u64", 4),
     ("i64", 5), ("fp16", 6), ("fp32", 7), ("fp64", 8), ("bf16", 9)],
)  # fmt: skip
def test_element_types_map_to_cuda_data_types(element, code):
    req = tensor_map.request(element, BASE, (64, 256), (256, 1), (16, 16), "zero", 0)
    assert req.data_type == code


def test_the_swizzle_cuts_the_inner_box_to_its_width():
    assert tensor_map.swizzle_bytes(128) == 128 and tensor_map.swizzle_bytes(256) == 128
    assert tensor_map.swizzle_bytes(64) == 64 and tensor_map.swizzle_bytes(32) == 32
    assert tensor_map.swizzle_bytes(16) == 0
    assert tensor_map.box_shape((128, 64), 4, 128) == (128, 32)  # fp32: 32 a 128-byte row
    assert tensor_map.box_shape((512, 64), 2, 0) == (256, 64)  # at most 256 a dimension
    assert fp16_request(block_shape=(64, 128)).box == (64, 64)


@pytest.mark.parametrize(
    ("changes", "rule"),
    [
        ({"address": BASE + 8}, "not 16-byte aligned"),
        ({"strides": (36, 1), "shape": (100, 36)}, "multiples of 16 bytes"),
        ({"strides": (72, 2)}, "last stride is 2"),
        ({"block_shape": (64, 4), "swizzle": 0}, "8 bytes, not a multiple of 16"),
        ({"element": "i8", "padding": "nan", "strides": (80, 1)}, "not NaN"),
        ({"element": "fp8e4b15x"}, "cannot copy"),
        ({"swizzle": 16}, "no TMA swizzle of 16"),
        ({"shape": (100, 72, 1)}, "rank 1 to 5"),
        ({"shape": (2**33, 72)}, "1 to 2**32"),
    ],
)
def test_a_broken_rule_is_named(changes, rule):
    with pytest.raises(TensorDescriptorError, match=re.escape(rule)):
        fp16_request(**changes)


def test_the_ctypes_driver_passes_cuda_h_arguments_and_the_map_comes_back():
    fake = FakeLibCuda()
    driver = cuda.CudaDriver(cu=libcuda.LibCuda(fake.lookup))
    assert "cuTensorMapEncodeTiled" not in fake.calls  # bound when a launch first needs it
    _owner, address = tensor_map.encode(driver, fp16_request())
    assert address % 64 == 0
    (call,) = fake.encodings
    assert call == {
        "map_aligned": True, "data_type": 6, "rank": 2, "address": BASE, "dims": [72, 100],
        "strides": [144], "box": [64, 64], "element_strides": [1, 1], "interleave": 0,
        "swizzle": 3, "l2_promotion": 2, "oob_fill": 0,
    }  # fmt: skip
    assert ctypes.string_at(address, 128) == encoded_map(call)


def test_a_failed_encoding_is_a_cuda_error_naming_the_call():
    fake = FakeLibCuda()
    driver = cuda.CudaDriver(cu=libcuda.LibCuda(fake.lookup))
    fake.fail["cuTensorMapEncodeTiled"] = 1
    with pytest.raises(cuda.CudaError, match=r"cuTensorMapEncodeTiled.*INVALID_VALUE"):
        tensor_map.encode(driver, fp16_request())


def test_cuda_bindings_get_its_enum_members_and_sized_ints():
    seen = []

    class Made:
        def __init__(self):
            self.buffer = ctypes.create_string_buffer(bytes(range(128)))

        def getPtr(self):
            return ctypes.addressof(self.buffer)

    def encode_tiled(*args):
        seen.append(args)
        return (0, Made())

    def sized(kind):
        return lambda value: (kind, value)

    def enum(kind):
        return lambda value: (kind, value)

    bindings = types.SimpleNamespace(
        cuuint64_t=sized("u64"), cuuint32_t=sized("u32"),
        CUtensorMapDataType=enum("dtype"), CUtensorMapInterleave=enum("interleave"),
        CUtensorMapSwizzle=enum("swizzle"), CUtensorMapL2promotion=enum("l2"),
        CUtensorMapFloatOOBfill=enum("fill"), cuTensorMapEncodeTiled=encode_tiled,
    )  # fmt: skip
    driver = types.SimpleNamespace(
        cu=bindings, call=lambda name, *args: getattr(bindings, name)(*args)[1]
    )
    _owner, address = tensor_map.encode(driver, fp16_request(padding="nan"))
    assert seen == [(
        ("dtype", 6), 2, BASE, [("u64", 72), ("u64", 100)], [("u64", 144)],
        [("u32", 64), ("u32", 64)], [("u32", 1), ("u32", 1)], ("interleave", 0),
        ("swizzle", 3), ("l2", 2), ("fill", 1),
    )]  # fmt: skip
    assert address % 64 == 0 and ctypes.string_at(address, 128) == bytes(range(128))


def test_encodings_are_cached_by_request():
    fake = FakeLibCuda()
    driver = cuda.CudaDriver(cu=libcuda.LibCuda(fake.lookup))
    cache = tensor_map.TensorMapCache(limit=2)
    first = cache.get(driver, fp16_request())
    assert cache.get(driver, fp16_request()) == first and len(fake.encodings) == 1
    other = cache.get(driver, fp16_request(address=BASE + 4096))
    assert other != first and len(fake.encodings) == 2
    cache.get(driver, fp16_request(block_shape=(32, 64)))  # the oldest (first) dropped
    assert len(cache) == 2
    cache.get(driver, fp16_request())
    assert len(fake.encodings) == 4


def test_swizzled_offsets_follow_the_128_64_32_byte_patterns():
    # 128B: row r of 128 bytes has its 16-byte chunks permuted by r % 8
    assert [swizzled(r * 128, 128) for r in range(9)] == [r * 128 + (r % 8) * 16 for r in range(9)]
    assert swizzled(3 * 128 + 5 * 16 + 2, 128) == 3 * 128 + (5 ^ 3) * 16 + 2
    # 64B: rows of 64 bytes, chunk bits 4-5 xor offset bits 7-8 (two rows share a pattern)
    assert swizzled(2 * 64 + 16, 64) == 2 * 64 and swizzled(3 * 64 + 16, 64) == 3 * 64
    assert swizzled(3 * 128 + 16, 64) == 3 * 128 + (1 ^ 3) * 16
    assert swizzled(128 + 0, 32) == 128 + 16 and swizzled(256, 32) == 256
    assert swizzled(1000, 0) == 1000


def _ptx(arch, **kwargs):
    return llir_to_ptx(tma_copy_llir(arch, **kwargs), arch)


def test_the_copy_kernel_on_sm_90a_takes_the_map_as_a_grid_constant_and_assembles():
    ptx = _ptx("sm_90a", box=(64, 64), element_bytes=2, swizzle=128, steps=2)
    assert f".param .align 64 .b8 {NAME}_param_{MAP_INDEX}[128]" in ptx
    assert re.search(r"cvta\.param\.u64\s+%rd\d+, %rd\d+;", ptx)  # read in place
    assert "ld.local" not in ptx and "st.local" not in ptx  # never copied
    assert ptx.count("prefetch.tensormap [") == 1
    assert ptx.count("mbarrier.init.shared::cta.b64 [") == 1
    assert ptx.count("mbarrier.arrive.expect_tx.shared::cta.b64 _, [") == 2
    copies = re.findall(
        r"@%p\d+ cp\.async\.bulk\.tensor\.2d\.shared::cluster\.global\."
        r"mbarrier::complete_tx::bytes \[%rd\d+\], \[%rd\d+, \{%r\d+, %r\d+\}\], \[%rd\d+\];",
        ptx,
    )
    assert len(copies) == 2
    assert ptx.count("mbarrier.try_wait.parity.shared::cta.b64") == 2
    assert ".shared .align 1024 .b8 tma_buffer[8192]" in ptx
    if find_ptxas() is None:
        pytest.skip("no ptxas here")
    assert ptx_to_cubin(ptx, "sm_90a")


@pytest.mark.parametrize("element_bytes", [1, 2, 4, 8])
@pytest.mark.parametrize("row_bytes", [16, 32, 64, 128])
def test_every_element_size_and_swizzle_assembles(element_bytes, row_bytes):
    columns = row_bytes // element_bytes
    rows = max(128 // columns, 8)
    swizzle = tensor_map.swizzle_bytes(row_bytes)
    ptx = _ptx("sm_90a", box=(rows, columns), element_bytes=element_bytes, swizzle=swizzle)
    assert "cp.async.bulk.tensor.2d" in ptx
    if find_ptxas() is not None:
        assert ptx_to_cubin(ptx, "sm_90a")


def test_sm_90_asks_for_ptx_8_and_sm_80_is_refused_before_llvm_sees_it():
    assert ".version 8.0" in _ptx("sm_90", box=(16, 16), element_bytes=4)
    with pytest.raises(
        LoweringError, match=r"prefetch\.tensormap needs sm_90 and later; the target is sm_80"
    ):
        tma_copy_llir("sm_80", box=(16, 16), element_bytes=4)


def test_a_launch_passes_each_tensor_map_after_the_signature():
    """`tma_launch`: the kernelParams array ends with the map's slot, filled from the packed
    descriptor values at each launch (encoded once per request)."""
    fake = FakeLibCuda()
    fake.params_read = 7
    driver = cuda.CudaDriver(cu=libcuda.LibCuda(fake.lookup))
    kernel = driver.load(ELF, NAME, is_ptx=False, signature=signature("fp16"))
    metadata = {"params": list(signature("fp16")),
                "tensor_maps": tensor_maps("fp16", (64, 64), "zero", 128)}  # fmt: skip
    packer = tma_launch.install(driver, kernel, metadata).packer
    assert isinstance(packer, tma_launch.TmaPacker) and not packer.direct
    out = BASE + (1 << 20)
    values = [BASE, 100, 72, 72, out, 128]
    driver.launch(kernel, (2, 2), 4, 32, values)
    driver.launch(kernel, (2, 2), 4, 32, values)
    (call,) = fake.encodings  # the second launch's map from the cache
    assert (call["dims"], call["strides"], call["box"], call["swizzle"]) == (
        [72, 100], [144], [64, 64], 3
    )  # fmt: skip
    assert packer.map_bytes(0) == encoded_map(call)
    # the fake reads 8 bytes a parameter: the map's first 8 bytes are its address (fake's)
    assert fake.launches[-1][-1] == [*values, BASE]
    driver.launch(kernel, (2, 2), 4, 32, [BASE + 4096, 50, 72, 72, out, 128])
    assert fake.encodings[-1]["address"] == BASE + 4096 and fake.encodings[-1]["dims"] == [72, 50]
    assert fake.launches[-1][-1][-1] == BASE + 4096


def test_a_launch_with_a_descriptor_breaking_a_rule_names_it():
    fake = FakeLibCuda()
    driver = cuda.CudaDriver(cu=libcuda.LibCuda(fake.lookup))
    kernel = driver.load(ELF, NAME, is_ptx=False, signature=signature("fp16"))
    metadata = {"params": list(signature("fp16")),
                "tensor_maps": tensor_maps("fp16", (64, 64), "zero", 128)}  # fmt: skip
    tma_launch.install(driver, kernel, metadata)
    with pytest.raises(TensorDescriptorError, match="strides"):
        driver.launch(kernel, (1,), 4, 32, [BASE, 100, 72, 71, BASE, 128])
    assert not fake.launches and not fake.encodings


def test_tensor_map_parameters_survive_json():
    (data,) = tensor_maps("bf16", (32, 32), "nan", 64)
    spec = tma_launch.TensorMapParameter.from_json(data)
    assert spec.to_json() == data and tma_launch.TensorMapParameter.from_json(data) == spec
    assert spec.request([BASE, 50, 96, 96]).global_dims == (96, 50)
