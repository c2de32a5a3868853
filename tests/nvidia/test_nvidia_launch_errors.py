"""Launch-time user mistakes on the nvidia backend (a fake cuda.bindings, no GPU) are tilec errors
(issue 14) that are still the builtin or `CudaError` they were: an array on another device or a
read-only one that the kernel writes, a NumPy array with strides between elements, a grid that
is no grid, more programs or warps than the device allows, a device the machine lacks, NumPy
arrays while a graph is being captured, a `tilec.to_device` array launched after its `free()`."""

from __future__ import annotations

import os
import sys
import traceback
import types

import numpy as np
import pytest
from fake_cuda import FakeCu
from test_nvidia_arrays import NumpyOverDlpack
from test_nvidia_runner import FakeDeviceArray, scale_kernel

import tilec
from tilec_nvidia import driver as cuda


def test_an_array_on_another_device_is_a_launch_argument_error(fake_gpu):
    out = FakeDeviceArray(0x20000, 128)
    x = NumpyOverDlpack(np.zeros(128, np.float32))  # memory on the CPU, not on the GPU
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


def test_a_device_the_machine_lacks_is_a_device_not_found_error_and_a_cuda_error(fake_gpu):
    x, out = np.ones(128, np.float32), np.zeros(128, np.float32)
    tilec.set_device(5)  # the fake has two devices
    try:
        with pytest.raises(tilec.DeviceNotFoundError) as info:
            scale_kernel[(1,)](x, out, 128, 2.0, BLOCK=128, backend="nvidia")
    finally:
        tilec.set_device(None)
    error = info.value
    assert isinstance(error, cuda.CudaError) and isinstance(error, tilec.DeviceIndexError)
    assert isinstance(error, RuntimeError) and not isinstance(error, ValueError)
    assert str(error) == (
        "there is no cuda:5: this machine has 2 CUDA device(s) (cuda:0 to cuda:1); pass one of "
        "them to tilec.set_device"
    )
    assert error.call_site is not None and error.call_site.startswith(__file__)
    assert fake_gpu.launches == []


def test_numpy_strides_between_elements_are_a_launch_argument_error(fake_gpu):
    odd = np.lib.stride_tricks.as_strided(np.zeros(64, np.float32), shape=(8,), strides=(6,))
    out = np.zeros(8, np.float32)
    with pytest.raises(tilec.LaunchArgumentError) as info:
        scale_kernel[(1,)](odd, out, 8, 2.0, BLOCK=128, backend="nvidia")
    assert isinstance(info.value, TypeError)
    assert "argument 'x_ptr' of scale_kernel: an array with strides (6,)" in str(info.value)
    assert fake_gpu.memory == {} and fake_gpu.launches == []


def capture_error(fake_gpu, **options) -> BaseException:
    x, out = np.arange(256, dtype=np.float32), np.zeros(256, np.float32)
    with pytest.raises(tilec.GraphCaptureError) as info:
        scale_kernel[(2,)](x, out, 256, 2.0, BLOCK=128, backend="nvidia", **options)
    error = info.value
    assert isinstance(error, cuda.CudaCaptureError) and isinstance(error, cuda.CudaError)
    assert isinstance(error, tilec.LaunchError) and isinstance(error, RuntimeError)
    assert "argument 'x_ptr' of scale_kernel is a NumPy array, but a graph capture is running" in (
        str(error)
    )
    assert "Pass a CUDA tensor (torch, CuPy" in str(error)
    assert error.call_site is not None and error.call_site.startswith(__file__)
    assert fake_gpu.memory == {} and fake_gpu.launches == []  # nothing allocated or launched
    return error


def test_numpy_arrays_on_a_capturing_stream_are_a_graph_capture_error(fake_gpu):
    fake_gpu.capturing.add(0x7000)
    capture_error(fake_gpu, stream=0x7000)
    assert fake_gpu.stream_calls == []


def test_numpy_arrays_on_the_default_stream_while_another_captures_are_a_graph_capture_error(
    fake_gpu,
):
    """The legacy default stream's capture query fails (CUDA_ERROR_STREAM_CAPTURE_IMPLICIT):
    a capture on another stream, which its work would join; no plain CudaError of the query."""
    fake_gpu.capturing.add(0x7000)  # torch.cuda.graph captures on a side stream
    error = capture_error(fake_gpu)
    assert error.__cause__ is None


def test_numpy_arrays_on_another_stream_while_one_captures_are_a_graph_capture_error(fake_gpu):
    """The launch stream is not capturing, but the copy's allocation is refused while another
    stream captures (CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED): the driver's error is the cause."""
    fake_gpu.capturing.add(0x7000)
    error = capture_error(fake_gpu, stream=0x5000)
    assert isinstance(error.__cause__, cuda.CudaError)
    assert "CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED" in str(error.__cause__)


def test_numpy_arrays_whose_wait_a_capture_refuses_are_a_graph_capture_error(fake_gpu):
    """A device buffer of an earlier launch is reused (no allocation), the kernel launches, and
    the wait for its result is refused during another stream's capture: still the argument's
    GraphCaptureError, the driver's error its cause."""
    x, out = np.arange(256, dtype=np.float32), np.zeros(256, np.float32)
    scale_kernel[(2,)](x, out, 256, 2.0, BLOCK=128, backend="nvidia", stream=0x5000)
    fake_gpu.capturing.add(0x7000)
    with pytest.raises(tilec.GraphCaptureError) as info:
        scale_kernel[(2,)](x, out, 256, 2.0, BLOCK=128, backend="nvidia", stream=0x5000)
    assert isinstance(info.value, cuda.CudaCaptureError)
    assert "argument 'x_ptr' of scale_kernel is a NumPy array" in str(info.value)
    assert "cuStreamSynchronize failed: CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED" in str(
        info.value.__cause__
    )


def test_numpy_arrays_inside_a_torch_graph_capture_are_a_graph_capture_error(fake_gpu, monkeypatch):
    """`with torch.cuda.graph(g):` captures on a non-blocking stream of torch's, which the
    default stream's capture query does not see: torch is asked, before any copy, so that the
    capture is not broken."""
    cuda_module = types.SimpleNamespace(
        is_initialized=lambda: True,
        current_device=lambda: 0,
        is_current_stream_capturing=lambda: True,
    )
    torch = types.SimpleNamespace(Tensor=type("Tensor", (), {}), cuda=cuda_module)
    monkeypatch.setitem(sys.modules, "torch", torch)
    capture_error(fake_gpu)
    assert fake_gpu.stream_calls == []


def freed_launch_error(call) -> tilec.FreedArrayError:
    with pytest.raises(tilec.FreedArrayError) as info:
        call()
    error = info.value
    assert isinstance(error, tilec.ArgumentValueError) and isinstance(error, ValueError)
    assert not isinstance(error, TypeError)
    assert str(error) == (
        "argument 'out_ptr' of scale_kernel: the DeviceArray of shape (128,) and dtype float32 "
        "was freed (DeviceArray.free()), so its device memory is gone; free it after its last "
        "use, or make a new one (tilec.to_device)"
    )
    return error


def test_a_freed_device_array_is_a_freed_array_error_naming_the_argument(fake_gpu):
    """Its address is never passed on: not by the first launch (the general path), nor by a
    launch like an earlier one (the fast path, whose guards read the array), a keyword
    argument, a warmup or a `CompiledKernel`'s launch."""
    x = tilec.to_device(np.ones(128, np.float32))
    out = tilec.to_device(np.zeros(128, np.float32))
    scale_kernel[(1,)](x, out, 128, 2.0, BLOCK=128)
    scale_kernel[(1,)](x, out, 128, 2.0, BLOCK=128)
    compiled = scale_kernel.warmup(x, out, 128, 2.0, grid=(1,), BLOCK=128)
    launches = len(fake_gpu.launches)
    address = out.ptr
    out.free()
    assert out.ptr is None and address not in fake_gpu.memory
    line = sys._getframe().f_lineno + 1
    error = freed_launch_error(lambda: scale_kernel[(1,)](x, out, 128, 2.0, BLOCK=128))
    assert error.call_site == f"{__file__}:{line}"
    files = [frame.filename for frame in traceback.extract_tb(error.__traceback__)]
    assert [os.path.basename(f) for f in files if os.sep + "tilec" + os.sep in f] == ["launcher.py"]
    freed_launch_error(lambda: scale_kernel[(1,)](x, out_ptr=out, n=128, factor=2.0, BLOCK=128))
    freed_launch_error(lambda: scale_kernel.warmup(x, out, 128, 2.0, grid=(1,), BLOCK=128))
    line = sys._getframe().f_lineno + 1
    error = freed_launch_error(lambda: compiled[(1,)](x, out, 128, 2.0, 128))
    assert error.call_site == f"{__file__}:{line}"
    assert len(fake_gpu.launches) == launches  # no launch with the dangling address
    fresh = tilec.to_device(np.zeros(128, np.float32))
    scale_kernel[(1,)](x, fresh, 128, 2.0, BLOCK=128)
    assert len(fake_gpu.launches) == launches + 1


def test_a_freed_device_array_found_by_the_runner_is_a_freed_array_error(fake_gpu):
    """The nvidia runner's pointer getter checks too (a launch's key has refused the array
    before it is reached; a runner called directly has not)."""
    x = tilec.to_device(np.ones(128, np.float32))
    out = tilec.to_device(np.zeros(128, np.float32))
    compiled = scale_kernel[(1,)](x, out, 128, 2.0, BLOCK=128)
    runner = compiled.backend.driver.make_runner(compiled, [x, out, 128, 2.0])
    out.free()
    with pytest.raises(tilec.FreedArrayError, match=r"DeviceArray of shape \(128,\) .* was freed"):
        runner((1,), [x, out, 128, 2.0])
    assert len(fake_gpu.launches) == 1
