"""The AMD launch path without a GPU: availability, a fake `hip` module (fake_hip.py) standing in
for hip-python, argument packing, NumPy copies, device arrays, and the errors a user sees."""

from __future__ import annotations

import ctypes
import ctypes.util
import re
import struct
import subprocess
import sys

import numpy as np
import pytest
from fake_hip import FakeHip, MissingRuntimeHip

import tilec
from tilec.interop.device_array import to_device
from tilec.runtime import compiler
from tilec_amd import driver
from tilec_amd.backend import AmdBackend
from tilec_amd.driver import (
    NO_RUNTIME,
    HipCaptureError,
    HipDeviceNotFoundError,
    HipDriver,
    HipError,
    Packer,
    runtime_availability,
)

HAS_ROCM_RUNTIME = ctypes.util.find_library("amdhip64") is not None
VECTOR_ADD = {"x_ptr": "*fp32", "y_ptr": "*fp32", "output_ptr": "*fp32", "n_elements": "i32"}


def add_kernel():
    sys.path.insert(0, "tests/frontend")
    from frontend_kernels import add_kernel

    return add_kernel


def play_vector_add(hip, launch):
    """What add_kernel does, on the fake's host-memory "device"."""
    x, y, out, n = launch.values
    count = min(n, launch.grid[0] * 1024)
    xs = np.ctypeslib.as_array((ctypes.c_float * count).from_address(x))
    ys = np.ctypeslib.as_array((ctypes.c_float * count).from_address(y))
    np.ctypeslib.as_array((ctypes.c_float * count).from_address(out))[:] = xs + ys


@pytest.fixture
def fake_hip(monkeypatch):
    hip = FakeHip(kernels={"add_kernel": play_vector_add})
    hip.signatures["add_kernel"] = ("<Q", "<Q", "<Q", "<i")
    driver.reset_driver(HipDriver(hip))
    monkeypatch.setattr(AmdBackend, "is_available", lambda self: runtime_availability(hip))
    monkeypatch.setattr(compiler, "_availability", {})  # availability is cached per process
    yield hip
    driver.reset_driver(None)


# Availability ----------------------------------------------------------------------------------


def test_missing_rocm_runtime_is_reported_not_raised():
    assert runtime_availability(MissingRuntimeHip()) == tilec.backend.Availability(
        False, NO_RUNTIME
    )


def test_fake_device_is_available():
    assert runtime_availability(FakeHip()).reason == "1 AMD GPU(s)"
    assert runtime_availability(FakeHip(device_count=0)).reason == "no AMD GPU found"


def test_without_hip_python_says_how_to_install(monkeypatch):
    monkeypatch.setitem(sys.modules, "hip", None)
    availability = AmdBackend().is_available()
    assert availability.reason == "hip-python is not installed: pip install hip-python"
    with pytest.raises(HipError, match="pip install hip-python"):
        HipDriver()


def test_driver_without_rocm_raises_the_reason_not_a_hip_traceback():
    with pytest.raises(HipError) as error:
        HipDriver(MissingRuntimeHip())
    assert str(error.value) == NO_RUNTIME
    assert error.value.__cause__ is None and error.value.__suppress_context__


@pytest.mark.skipif(HAS_ROCM_RUNTIME, reason="this machine has a ROCm runtime")
def test_tilec_backends_says_no_rocm_runtime():
    result = subprocess.run(
        [sys.executable, "-m", "tilec", "backends"], capture_output=True, text=True, check=True
    )
    line = next(line for line in result.stdout.splitlines() if line.startswith("amd"))
    assert "no ROCm runtime (libamdhip64.so not found)" in line


@pytest.mark.skipif(HAS_ROCM_RUNTIME, reason="this machine has a ROCm runtime")
def test_launch_without_rocm_raises_the_reason(private_cache):
    x = np.ones(16, np.float32)
    with pytest.raises(RuntimeError, match=r"not available: no ROCm runtime \(libamdhip64"):
        add_kernel()[(1,)](x, x, x, 16, BLOCK_SIZE=64, backend="amd")
    compiled = tilec.compile(
        add_kernel(), VECTOR_ADD, {"BLOCK_SIZE": 64}, backend="amd", target="gfx942"
    )
    driver.reset_driver(None)
    with pytest.raises(HipError, match=r"^no ROCm runtime \(libamdhip64.so not found\)$"):
        compiled.run((1,), [x, x, x, 16])


# Launches through the fake ---------------------------------------------------------------------


def test_numpy_launch_copies_in_launches_and_copies_back(fake_hip, private_cache):
    n = 3000
    x, y = np.arange(n, dtype=np.float32), np.full(n, 0.5, np.float32)
    out = np.zeros(n, np.float32)
    add_kernel()[(tilec.cdiv(n, 1024),)](x, y, out, n, BLOCK_SIZE=1024, backend="amd")
    np.testing.assert_array_equal(out, x + y)
    (launch,) = fake_hip.launches
    assert launch.name == "add_kernel"
    assert (launch.grid, launch.block, launch.shared) == ((3, 1, 1), (256, 1, 1), 0)
    assert launch.values[3] == n and launch.extra is None
    assert fake_hip.images[0][:4] == b"\x7fELF"
    assert not fake_hip.buffers  # every copy-in buffer was freed


def test_target_comes_from_the_device(fake_hip, private_cache):
    x = np.ones(8, np.float32)
    compiled = tilec.compile(add_kernel(), VECTOR_ADD, {"BLOCK_SIZE": 64}, backend="amd")
    assert compiled.metadata["target"] == "gfx942"  # of gcnArchName gfx942:sramecc+:xnack-
    compiled.run((1,), [x, x, x, 8])
    assert fake_hip.launches[-1].block == (256, 1, 1)


def test_device_arrays_pass_by_address(fake_hip, private_cache):
    x = to_device(driver.get_driver(), np.arange(64, dtype=np.float32))
    out = tilec.to_device(np.zeros(64, np.float32), backend="amd")
    add_kernel()[(1,)](x, x, out, 64, BLOCK_SIZE=64, backend="amd")
    np.testing.assert_array_equal(out.numpy(), 2 * np.arange(64, dtype=np.float32))
    assert fake_hip.launches[-1].values[:3] == [x.ptr, x.ptr, out.ptr]
    assert out.__cuda_array_interface__["data"] == (out.ptr, False)


def test_a_freed_device_array_is_a_freed_array_error_naming_the_argument(fake_hip, private_cache):
    x = tilec.to_device(np.arange(64, dtype=np.float32), backend="amd")
    out = tilec.to_device(np.zeros(64, np.float32), backend="amd")
    add_kernel()[(1,)](x, x, out, 64, BLOCK_SIZE=64, backend="amd")
    launches = len(fake_hip.launches)
    x.free()
    for _ in range(2):  # the general path, then after it again
        with pytest.raises(tilec.FreedArrayError) as info:
            add_kernel()[(1,)](x, x, out, 64, BLOCK_SIZE=64, backend="amd")
        assert isinstance(info.value, ValueError)
        assert str(info.value).startswith(
            "argument 'x_ptr' of add_kernel: the DeviceArray of shape (64,) and dtype float32 "
            "was freed (DeviceArray.free())"
        )
    assert len(fake_hip.launches) == launches


def test_a_wrong_argument_names_the_parameter(fake_hip, private_cache):
    compiled = tilec.compile(
        add_kernel(), VECTOR_ADD, {"BLOCK_SIZE": 64}, backend="amd", target="gfx942"
    )
    with pytest.raises(TypeError, match="argument 'y_ptr' of add_kernel: cannot pass a str"):
        compiled.run((1,), [np.ones(4, np.float32), "y", np.ones(4, np.float32), 4])
    assert not fake_hip.buffers


def test_load_errors_name_the_call_and_kernel(fake_hip):
    hip_driver = driver.get_driver()
    with pytest.raises(HipError, match="hipModuleLoadData failed for kernel 'k': hipErrorInvalid"):
        hip_driver.load(b"not an elf", "k")
    with pytest.raises(HipError, match=r"needs 70000 bytes of LDS.*at most 65536"):
        hip_driver.load(b"\x7fELF k", "k", shared_bytes=70000)


def test_grid_and_block_limits(fake_hip):
    hip_driver = driver.get_driver()
    kernel = hip_driver.load(b"\x7fELF k", "k", signature=["i32"])
    with pytest.raises(HipError, match=r"65536 programs along y.*at most 65535"):
        hip_driver.launch(kernel, (1, 65536), 1, 64, [1])
    with pytest.raises(HipError, match="2048 work-items"):
        hip_driver.launch(kernel, (1,), 32, 64, [1])
    hip_driver.launch(kernel, (0,), 1, 64, [1])  # an empty grid launches nothing
    assert not fake_hip.launches


def test_packer_lays_out_one_slot_a_parameter():
    packer = Packer(["*fp32", "i1", "bf16", "fp16", "i64", "u8"])
    address = packer.pack([0x1234, True, 1.0, 0.5, -2, 255])
    pointers = (ctypes.c_void_p * 6).from_address(address)
    assert struct.unpack("<Q", ctypes.string_at(pointers[0], 8))[0] == 0x1234
    assert ctypes.string_at(pointers[1], 1) == b"\x01"
    assert struct.unpack("<H", ctypes.string_at(pointers[2], 2))[0] == 0x3F80  # bf16 1.0
    assert packer.unpack()[3:] == (0.5, -2, 255)
    with pytest.raises(TypeError, match="cannot pass"):
        packer.pack([0, True, 1.0, 0.5, "x", 0])
    with pytest.raises(TypeError, match="cannot pass to an AMD kernel"):
        Packer(["tensor"])


# Launch options --------------------------------------------------------------------------------


def test_stream_option_reaches_copies_launch_and_wait(fake_hip, private_cache):
    n = 64
    x, out = np.arange(n, dtype=np.float32), np.zeros(n, np.float32)
    handle = add_kernel()[(1,)](x, x, out, n, BLOCK_SIZE=64, backend="amd", stream=0x7000)
    np.testing.assert_array_equal(out, 2 * x)
    assert fake_hip.launches[-1].stream == 0x7000
    assert fake_hip.synchronized and set(fake_hip.synchronized) == {0x7000}
    assert handle.metadata["shared"] == 0 and "hsaco" in handle.asm
    add_kernel()[(1,)](x, x, out, n, BLOCK_SIZE=64, backend="amd")
    assert fake_hip.launches[-1].stream is None  # the default stream
    assert len(fake_hip.images) == 1


@pytest.mark.parametrize(
    ("stream", "cause"),
    [(0x7000, None), (None, None), (0x5000, "hipErrorStreamCaptureUnsupported")],
    ids=["the-launch-stream-captures", "the-null-stream-joins-a-capture", "malloc-refused"],
)
def test_numpy_arguments_during_a_hip_graph_capture_are_an_error(
    fake_hip, private_cache, stream, cause
):
    """A GraphCaptureError that is a HipError too, whether the launch stream captures, the
    null stream would join another stream's capture (hipErrorStreamCaptureImplicit) or the
    copy's allocation is refused during it."""
    fake_hip.capturing.add(0x7000)
    x = np.arange(64, dtype=np.float32)
    with pytest.raises(tilec.GraphCaptureError) as info:
        add_kernel()[(1,)](x, x, x, 64, BLOCK_SIZE=64, backend="amd", stream=stream)
    assert isinstance(info.value, HipCaptureError) and isinstance(info.value, HipError)
    assert re.search(r"argument 'x_ptr' .* capturing a graph.*ROCm tensor", str(info.value))
    assert cause is None or cause in str(info.value.__cause__)
    assert not fake_hip.buffers and not fake_hip.launches


def test_a_launch_runs_on_the_device_of_set_device(private_cache):
    """Two HIP devices: `tilec.set_device(1)` loads the kernel on rocm:1 and launches it there,
    its NumPy copies are allocated there, and the thread's current device (torch's) is rocm:0
    again after the launch; rocm:0 keeps its own module."""
    hip = FakeHip(kernels={"add_kernel": play_vector_add}, device_count=2)
    hip.signatures["add_kernel"] = ("<Q", "<Q", "<Q", "<i")
    driver.reset_driver(HipDriver(hip))
    x = np.arange(64, dtype=np.float32)
    out = np.zeros(64, np.float32)
    try:
        with pytest.MonkeyPatch.context() as patch:
            patch.setattr(AmdBackend, "is_available", lambda self: runtime_availability(hip))
            patch.setattr(compiler, "_availability", {})
            tilec.set_device(1)
            try:
                add_kernel()[(1,)](x, x, out, 64, BLOCK_SIZE=64, backend="amd")
            finally:
                tilec.set_device(None)
            assert [launch.device for launch in hip.launches] == [1]
            assert hip.module_devices == [1] and set(hip.buffer_devices.values()) == {1}
            assert hip.current == 0  # restored
            np.testing.assert_array_equal(out, 2 * x)
            add_kernel()[(1,)](x, x, out, 64, BLOCK_SIZE=64, backend="amd")
            assert [launch.device for launch in hip.launches] == [1, 0]
            assert hip.module_devices == [1, 0] and hip.current == 0
            tilec.set_device(5)
            try:
                with pytest.raises(tilec.DeviceNotFoundError) as info:
                    add_kernel()[(1,)](x, x, out, 64, BLOCK_SIZE=64, backend="amd")
                assert isinstance(info.value, HipDeviceNotFoundError)
                assert isinstance(info.value, HipError) and not isinstance(info.value, ValueError)
                assert "there is no rocm:5: this machine has 2 HIP device(s)" in str(info.value)
            finally:
                tilec.set_device(None)
    finally:
        driver.reset_driver(None)
