"""The launch hot path: `kernel[grid](...)` with device arrays through the nvidia backend's
compiled runner, against a fake cuda.bindings (real compile to PTX/cubin; no GPU needed)."""

from __future__ import annotations

import ctypes

import pytest

import tilec
import tilec.language as tl
from tilec.runtime import cache
from tilec_nvidia import driver as cuda


@tilec.jit
def scale_kernel(x_ptr, out_ptr, n, factor, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) * factor, mask=mask)


class FakeDeviceArray:
    """A device array as CuPy presents one: only `__cuda_array_interface__`."""

    def __init__(self, address: int, n: int, typestr: str = "<f4"):
        self.address, self.n, self.typestr = address, n, typestr

    @property
    def __cuda_array_interface__(self):
        return {"shape": (self.n,), "typestr": self.typestr, "data": (self.address, False),
                "version": 3}  # fmt: skip


def launched_values(launch) -> list[int]:
    """The kernel parameters of a recorded launch, read through its void*[] (as the driver)."""
    params = launch[5]
    pointers = (ctypes.c_void_p * 4).from_address(params)
    return [
        ctypes.c_uint64.from_address(pointers[0]).value,
        ctypes.c_uint64.from_address(pointers[1]).value,
        ctypes.c_int32.from_address(pointers[2]).value,
        ctypes.c_float.from_address(pointers[3]).value,
    ]


def test_hot_launches_pass_each_calls_pointers_and_scalars(fake_gpu):
    x, out = FakeDeviceArray(0x10000, 1000), FakeDeviceArray(0x20000, 1000)
    scale_kernel[(8,)](x, out, 1000, 2.5, BLOCK=128, backend="nvidia")
    first = fake_gpu.launches[-1]
    assert first[1] == (8, 1, 1) and first[2] == (128, 1, 1)
    assert launched_values(first) == [0x10000, 0x20000, 1000, 2.5]
    other = FakeDeviceArray(0x30000, 1000)
    scale_kernel[(4, 1)](other, out, 999, -1.0, BLOCK=128, backend="nvidia")
    second = fake_gpu.launches[-1]
    assert second[1] == (4, 1, 1)
    assert launched_values(second) == [0x30000, 0x20000, 999, -1.0]
    assert len(fake_gpu.images) == 1  # one compile, one module load


def test_empty_grid_launches_nothing_and_a_huge_grid_is_an_error(fake_gpu):
    x, out = FakeDeviceArray(0x10000, 10), FakeDeviceArray(0x20000, 10)
    scale_kernel[(0,)](x, out, 10, 1.0, BLOCK=128, backend="nvidia")
    assert fake_gpu.launches == []
    with pytest.raises(cuda.CudaError, match="65536 programs along y"):
        scale_kernel[(1, 65536)](x, out, 10, 1.0, BLOCK=128, backend="nvidia")


def test_misaligned_pointer_gets_its_own_specialization(fake_gpu):
    out = FakeDeviceArray(0x20000, 128)
    scale_kernel[(1,)](
        FakeDeviceArray(0x10000, 128), out, 128, 1.0, BLOCK=128, num_warps=1, backend="nvidia"
    )
    scale_kernel[(1,)](
        FakeDeviceArray(0x10004, 128), out, 128, 1.0, BLOCK=128, num_warps=1, backend="nvidia"
    )
    assert len(fake_gpu.images) == 2
    kernels = [c for c in cache.memory.values() if c.name == "scale_kernel"]
    assert sorted("ld.global.v4" in c.asm["ptx"] for c in kernels) == [False, True]
