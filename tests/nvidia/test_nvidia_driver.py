"""CudaDriver and Packer logic against a fake cuda.bindings (no GPU needed)."""

from __future__ import annotations

import ctypes
import struct

import numpy as np
import pytest
from fake_cuda import CUresult, FakeCu

from tilec.interop.device import stream_handle
from tilec.runtime.packing import float_to_bf16_bits
from tilec_nvidia import driver as driver_module
from tilec_nvidia.driver import CudaDriver, CudaError, CudaProperties, Packer, normalize_grid

VECTOR_ADD = ("*fp32", "*fp32", "*fp32", "i32")


def slot(packer: Packer, index: int, ctype) -> object:
    """What the driver reads for parameter `index`: through the packer's void*[] array."""
    pointers = (ctypes.c_void_p * len(packer.signature)).from_address(packer.address)
    return ctype.from_address(pointers[index]).value


# Packer ----------------------------------------------------------------------------------------


def test_packer_writes_each_parameter_where_its_pointer_points():
    signature = ("*fp32", "i32", "i64", "fp32", "fp16", "i1", "u8", "fp64", "u32")
    packer = Packer(signature)
    address = packer.pack([0xDEAD_BEEF_0000, -7, 2**40, 1.5, 0.25, True, 255, -2.5, 2**32 - 1])
    assert address == packer.address != 0
    assert slot(packer, 0, ctypes.c_uint64) == 0xDEAD_BEEF_0000
    assert slot(packer, 1, ctypes.c_int32) == -7
    assert slot(packer, 2, ctypes.c_int64) == 2**40
    assert slot(packer, 3, ctypes.c_float) == 1.5
    assert struct.unpack("<e", (ctypes.c_char * 2).from_address(slot_address(packer, 4)).raw) == (
        0.25,
    )
    assert slot(packer, 5, ctypes.c_uint8) == 1
    assert slot(packer, 6, ctypes.c_uint8) == 255
    assert slot(packer, 7, ctypes.c_double) == -2.5
    assert slot(packer, 8, ctypes.c_uint32) == 2**32 - 1
    assert packer.unpack()[4] == 0.25


def slot_address(packer: Packer, index: int) -> int:
    return (ctypes.c_void_p * len(packer.signature)).from_address(packer.address)[index]


def test_packer_reuses_its_buffer():
    packer = Packer(VECTOR_ADD)
    first = packer.pack([1, 2, 3, 4])
    second = packer.pack([5, 6, 7, 8])
    assert first == second
    assert packer.unpack() == (5, 6, 7, 8)


def test_packer_accepts_numpy_scalars():
    packer = Packer(("i32", "fp32", "i64", "i1"))
    packer.pack([np.int32(3), np.float32(0.5), np.int64(-1), np.bool_(False)])
    assert packer.unpack() == (3, 0.5, -1, False)


def test_bf16_scalars_are_rounded_to_their_bits():
    packer = Packer(("bf16",))
    packer.pack([1.0])
    assert packer.unpack() == (0x3F80,)
    assert float_to_bf16_bits(1.0 + 2**-8) == 0x3F80  # a tie rounds to even
    assert float_to_bf16_bits(1.0 + 3 * 2**-9) == 0x3F81
    assert float_to_bf16_bits(float("inf")) == 0x7F80
    assert float_to_bf16_bits(float("nan")) & 0x7F80 == 0x7F80


def test_packer_without_parameters_passes_null():
    packer = Packer(())
    assert packer.pack([]) == 0


def test_packer_errors_name_the_parameter():
    packer = Packer(VECTOR_ADD, ("x", "y", "out", "n"))
    with pytest.raises(TypeError, match=r"argument 'n' \(i32\)"):
        packer.pack([1, 2, 3, 2**40])
    with pytest.raises(TypeError, match=r"argument 'y' \(\*fp32\).*device address"):
        packer.pack([1, "y", 3, 4])
    with pytest.raises(TypeError, match="expected 4 arguments; got 3"):
        packer.pack([1, 2, 3])


def test_packer_rejects_unknown_types():
    with pytest.raises(TypeError, match="parameter 'p' has type 'fp8'"):
        Packer(("fp8",), ("p",))


# Helpers ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("grid", "expected"),
    [(5, (5, 1, 1)), ((5,), (5, 1, 1)), ((5, 6), (5, 6, 1)), ([1, 2, 3], (1, 2, 3))],
)
def test_normalize_grid(grid, expected):
    assert normalize_grid(grid, "k") == expected


@pytest.mark.parametrize("grid", [(), (1, 2, 3, 4), (-1,), ("a",)])
def test_normalize_grid_errors_name_the_kernel(grid):
    with pytest.raises((ValueError, TypeError), match="kernel 'k'"):
        normalize_grid(grid, "k")


class TorchLikeStream:
    cuda_stream = 0x55


class ProtocolStream:
    def __cuda_stream__(self):
        return (0, 0x66)


def test_stream_handle():
    assert stream_handle(None) == 0
    assert stream_handle(7) == 7
    assert stream_handle(TorchLikeStream()) == 0x55
    assert stream_handle(ProtocolStream()) == 0x66
    with pytest.raises(TypeError, match="stream must be"):
        stream_handle("default")


def test_device_target():
    def props(major, minor):
        return CudaProperties(
            ordinal=0, name="d", max_grid=(1, 1, 1), max_threads_per_block=1024,
            max_shared_per_block=1, warp_size=32, compute_capability=(major, minor),
            max_shared_per_block_optin=1, registers_per_block=1, sm_count=1,
        )  # fmt: skip

    assert props(9, 0).arch == "sm_90" and props(9, 0).target == "sm_90a"  # wgmma needs 90a
    assert props(10, 0).target == "sm_100a"
    assert props(8, 6).target == "sm_86"
    assert props(8, 8).target == "sm_87"
    assert props(10, 3).target == "sm_100"
    assert props(12, 1).target == "sm_120"
    assert props(11, 0).target is None


# CudaDriver with a fake cuda.bindings -------------------------------------------------------------


@pytest.fixture
def cu():
    return FakeCu()


@pytest.fixture
def driver(cu):
    return CudaDriver(cu)


def test_driver_reads_device_properties(driver, cu):
    props = driver.properties
    assert props.name == "Fake H100"
    assert props.arch == "sm_90"
    assert props.max_grid == (2**31 - 1, 65535, 65535)
    assert props.max_shared_per_block_optin == 227 * 1024
    assert props.sm_count == 132
    assert cu.current == 0x1234  # the primary context was made current


def test_driver_uses_an_existing_context():
    cu = FakeCu(current_context=0x999)
    driver = CudaDriver(cu)
    assert int(driver.context) == 0x999
    assert cu.set_current_calls == 0


def test_load_ptx_appends_a_nul(driver, cu):
    kernel = driver.load(".version 7.8\n", "k", is_ptx=True, signature=VECTOR_ADD)
    assert cu.images[-1] == b".version 7.8\n\0"
    assert kernel.num_regs == 32 and kernel.max_threads == 1024
    driver.load(b"\x7fELF....", "k", is_ptx=False)
    assert cu.images[-1] == b"\x7fELF...."


def test_load_opts_in_to_large_shared_memory(driver, cu, monkeypatch):
    """Over 48 KB, the kernel opts in to its shared bytes; it prefers shared memory to L1 (as
    Triton's loader does) only where PREFER_SHARED asks, off by default (below, neither: the
    driver's defaults)."""
    driver.load(b"\x7fELF", "k", is_ptx=False, shared_bytes=48 * 1024)
    assert cu.function_attributes == {} and cu.cache_config is None
    driver.load(b"\x7fELF", "k", is_ptx=False, shared_bytes=100 * 1024)
    assert cu.function_attributes == {"MAX_DYNAMIC_SHARED_SIZE_BYTES": 100 * 1024}
    assert cu.cache_config is None
    monkeypatch.setattr(driver_module, "PREFER_SHARED", True)
    driver.load(b"\x7fELF", "k", is_ptx=False, shared_bytes=100 * 1024)
    assert cu.cache_config == "PREFER_SHARED"


def test_load_rejects_too_much_shared_memory(driver):
    with pytest.raises(CudaError, match=r"kernel 'big' needs 300000 bytes .* at most 232448"):
        driver.load(b"\x7fELF", "big", is_ptx=False, shared_bytes=300_000)


def test_load_errors_name_the_kernel_and_the_result(driver):
    with pytest.raises(CudaError, match=r"cuModuleLoadData failed for kernel 'k': .*INVALID_IMAGE"):
        driver.load(b"garbage", "k", is_ptx=False)
    with pytest.raises(CudaError, match="cuModuleGetFunction failed for kernel 'missing'"):
        driver.load(b"\x7fELF", "missing", is_ptx=False)


def test_register_limit_names_num_warps():
    driver = CudaDriver(FakeCu(num_regs=128))  # 512 threads at most
    with pytest.raises(CudaError) as info:
        driver.load(b"\x7fELF", "k", is_ptx=False, num_warps=32)
    message = str(info.value)
    assert "num_warps=32" in message and "128 registers" in message
    assert "Use num_warps=16 or less" in message
    kernel = driver.load(b"\x7fELF", "k", is_ptx=False, num_warps=16, signature=())
    with pytest.raises(CudaError, match="num_warps=32"):
        driver.launch(kernel, (1, 1, 1), 32, 32, [])


def test_launch_passes_packed_arguments(driver, cu):
    kernel = driver.load(b"\x7fELF", "vector_add", is_ptx=False, signature=VECTOR_ADD)
    driver.launch(kernel, (4, 1, 1), 4, 32, [0x100, 0x200, 0x300, 1000])
    _, grid, block, shared, stream, params, _ = cu.launches[-1]
    assert grid == (4, 1, 1) and block == (128, 1, 1) and shared == 0
    assert int(stream) == 0
    assert params == kernel.packer.address
    assert kernel.packer.unpack() == (0x100, 0x200, 0x300, 1000)


def test_launch_pads_the_grid_and_uses_the_stream(driver, cu):
    kernel = driver.load(b"\x7fELF", "k", is_ptx=False, signature=(), shared_bytes=1024)
    driver.launch(kernel, (3, 2), 8, 32, [], stream=TorchLikeStream())
    _, grid, block, shared, stream, _, _ = cu.launches[-1]
    assert grid == (3, 2, 1) and block == (256, 1, 1) and shared == 1024
    assert int(stream) == 0x55
    driver.launch(kernel, 9, 1, 32, [], stream=0x77)
    assert cu.launches[-1][1] == (9, 1, 1) and int(cu.launches[-1][4]) == 0x77


def test_empty_grid_launches_nothing(driver, cu):
    kernel = driver.load(b"\x7fELF", "k", is_ptx=False, signature=())
    driver.launch(kernel, (0, 1, 1), 4, 32, [])
    assert cu.launches == []


def test_grid_limit_error_names_kernel_and_limit(driver):
    kernel = driver.load(b"\x7fELF", "k", is_ptx=False, signature=())
    with pytest.raises(CudaError, match=r"grid of kernel 'k' is 70000 programs along y; .* 65535"):
        driver.launch(kernel, (1, 70000, 1), 4, 32, [])
    with pytest.raises(ValueError, match="negative"):
        driver.launch(kernel, (-1, 1, 1), 4, 32, [])


def test_launch_failure_names_kernel_and_result(driver, cu):
    kernel = driver.load(b"\x7fELF", "k", is_ptx=False, signature=())
    cu.launch_result = CUresult.CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES
    with pytest.raises(CudaError, match=r"launch of kernel 'k' failed: .*LAUNCH_OUT_OF_RESOURCES"):
        driver.launch(kernel, (1, 1, 1), 4, 32, [])


def test_launch_from_a_thread_without_the_context_retries(driver, cu):
    kernel = driver.load(b"\x7fELF", "k", is_ptx=False, signature=())
    cu.fail_context_once = True
    calls = cu.set_current_calls
    driver.launch(kernel, (1, 1, 1), 4, 32, [])
    assert len(cu.launches) == 1 and cu.set_current_calls == calls + 1


def test_launch_needs_a_signature(driver):
    kernel = driver.load(b"\x7fELF", "k", is_ptx=False)
    with pytest.raises(CudaError, match="without a signature"):
        driver.launch(kernel, (1, 1, 1), 4, 32, [])
