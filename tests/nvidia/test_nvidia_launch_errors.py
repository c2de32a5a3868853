"""Launch-time user mistakes on the nvidia backend (a fake cuda.bindings, no GPU) are tilec errors
(issue 14) that are still the builtin or `CudaError` they were: an array on another device or a
read-only one that the kernel writes, a grid that is no grid, more programs or warps than the
device allows."""

from __future__ import annotations

import numpy as np
import pytest
from fake_cuda import FakeCu
from test_nvidia_runner import FakeDeviceArray, scale_kernel

import tilec
from tilec_nvidia import driver as cuda


class HostProducer:
    """A NumPy array seen only through DLPack: memory on the CPU, not on the GPU."""

    def __init__(self, array):
        self.array = array

    def __dlpack__(self, **kwargs):
        return self.array.__dlpack__(**kwargs)

    def __dlpack_device__(self):
        return self.array.__dlpack_device__()


def test_an_array_on_another_device_is_a_launch_argument_error(fake_gpu):
    out = FakeDeviceArray(0x20000, 128)
    x = HostProducer(np.zeros(128, np.float32))
    with pytest.raises(tilec.LaunchArgumentError) as info:
        scale_kernel[(1,)](x, out, 128, 2.0, BLOCK=128, backend="nvidia")
    assert isinstance(info.value, TypeError)
    assert "argument 'x_ptr' of scale_kernel lives on cpu:0" in str(info.value)


def test_a_read_only_numpy_array_the_kernel_writes_is_a_launch_argument_error(fake_gpu):
    x, out = np.ones(128, np.float32), np.zeros(128, np.float32)
    out.flags.writeable = False
    with pytest.raises(tilec.LaunchArgumentError) as info:
        scale_kernel[(1,)](x, out, 128, 2.0, BLOCK=128, backend="nvidia")
    assert isinstance(info.value, TypeError)
    assert "argument 'out_ptr' of scale_kernel is a read-only NumPy array" in str(info.value)


def test_too_many_programs_is_a_device_limit_error_and_a_cuda_error(fake_gpu):
    x, out = FakeDeviceArray(0x10000, 10), FakeDeviceArray(0x20000, 10)
    with pytest.raises(tilec.DeviceLimitError) as info:
        scale_kernel[(1, 65536)](x, out, 10, 1.0, BLOCK=128, backend="nvidia")
    assert isinstance(info.value, cuda.CudaError) and isinstance(info.value, RuntimeError)
    assert "grid of kernel 'scale_kernel' is 65536 programs along y" in str(info.value)


def test_more_threads_than_the_registers_allow_is_a_device_limit_error():
    driver = cuda.CudaDriver(cu=FakeCu(num_regs=255))  # 256 threads a block at most
    kernel = driver.load(b"\x7fELF", "k", is_ptx=False, signature=())
    with pytest.raises(tilec.DeviceLimitError) as info:
        driver.launch(kernel, (1,), 32, 32, [])
    assert isinstance(info.value, cuda.CudaError)
    assert "kernel 'k' cannot run with num_warps=32" in str(info.value)
    with pytest.raises(tilec.DeviceLimitError, match="bytes of shared memory"):
        driver.load(b"\x7fELF", "k", is_ptx=False, shared_bytes=10**6)


@pytest.mark.parametrize(
    ("grid", "kind", "builtin"),
    [((1, 2, 3, 4), tilec.GridValueError, ValueError), ((-1,), tilec.GridValueError, ValueError),
     (("x",), tilec.GridTypeError, TypeError)],
)  # fmt: skip
def test_the_drivers_grid_check_raises_grid_errors(grid, kind, builtin):
    with pytest.raises(kind) as info:
        cuda.normalize_grid(grid, "k")
    assert isinstance(info.value, tilec.GridError) and isinstance(info.value, builtin)
    assert "grid of kernel 'k'" in str(info.value)
