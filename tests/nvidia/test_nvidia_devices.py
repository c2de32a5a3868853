"""Several GPUs against a fake cuda.bindings with two devices: one primary context per device, a
launch runs on its arguments' device (else `tilec.set_device`'s, else torch's current device) in
that device's context, and arguments on different devices are named together."""

from __future__ import annotations

import sys
import types

import pytest
from fake_cuda import PRIMARY_CONTEXT, FakeCu
from test_nvidia_runner import FakeDeviceArray, scale_kernel

import tilec
from tilec.backend import Availability
from tilec.runtime import cache, compiler
from tilec_nvidia import driver as cuda
from tilec_nvidia.backend import NvidiaBackend

CTX0, CTX1 = PRIMARY_CONTEXT, PRIMARY_CONTEXT + 1


@pytest.fixture
def two_gpus(monkeypatch, tmp_path):
    fake = FakeCu(device_count=2)
    first = cuda.CudaDriver(cu=fake)  # no current context: device 0's primary one, made current
    second = cuda.CudaDriver(cu=fake, ordinal=1)
    cuda.reset_driver(first, second)
    monkeypatch.setattr(NvidiaBackend, "is_available", lambda self: Availability(True, "fake"))
    monkeypatch.setenv("TILEC_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv("TILEC_BACKEND", raising=False)
    compiler._availability.clear()
    cache.clear_memory()
    yield fake
    tilec.set_device(None)
    cuda.reset_driver(None)
    compiler._availability.clear()
    cache.clear_memory()


def launch(x, out):
    return scale_kernel[(1,)](x, out, 128, 2.0, BLOCK=128, backend="nvidia")


def test_each_device_has_its_primary_context(two_gpus):
    assert int(cuda.get_driver(0).context) == CTX0 and int(cuda.get_driver(1).context) == CTX1
    assert two_gpus.current == CTX0  # making device 1's driver left the current context


def test_set_device_picks_the_device_and_its_context(two_gpus):
    x, out = FakeDeviceArray(0x10000, 128), FakeDeviceArray(0x20000, 128)
    tilec.set_device(1)
    handle = launch(x, out)
    assert two_gpus.launch_contexts[-1] == CTX1 and two_gpus.image_contexts == [CTX1]
    assert two_gpus.current == CTX0  # pushed and popped: the thread's context is unchanged
    tilec.set_device(0)
    launch(x, out)
    assert two_gpus.launch_contexts[-1] == CTX0 and two_gpus.image_contexts == [CTX1, CTX0]
    assert set(handle.runtime["loaded_on"]) == {0, 1}
    with pytest.raises(ValueError, match="device index"):
        tilec.set_device(-1)


class Tensor:
    """Enough of a torch CUDA tensor for the launch path (`sys.modules['torch'].Tensor`)."""

    dtype = "torch.float32"
    is_cuda = True

    def __init__(self, address: int, index: int):
        self.address, self.index = address, index
        self.device = f"cuda:{index}"

    def get_device(self) -> int:
        return self.index

    def data_ptr(self) -> int:
        return self.address


@pytest.fixture
def fake_torch(monkeypatch):
    asked = []
    torch = types.SimpleNamespace(
        Tensor=Tensor,
        _C=types.SimpleNamespace(
            _cuda_getCurrentRawStream=lambda index: asked.append(index) or 0x900 + index
        ),
        cuda=types.SimpleNamespace(is_initialized=lambda: True, current_device=lambda: 1),
    )
    monkeypatch.setitem(sys.modules, "torch", torch)
    return asked


def test_torch_tensors_launch_on_their_device_and_its_current_stream(two_gpus, fake_torch):
    launch(Tensor(0x10000, 1), Tensor(0x20000, 1))
    assert two_gpus.launch_contexts[-1] == CTX1
    assert int(two_gpus.launches[-1][4]) == 0x901 and fake_torch[-1] == 1
    launch(Tensor(0x10000, 0), Tensor(0x20000, 0))
    assert two_gpus.launch_contexts[-1] == CTX0 and int(two_gpus.launches[-1][4]) == 0x900


def test_torch_current_device_is_followed_without_set_device(two_gpus, fake_torch):
    launch(FakeDeviceArray(0x10000, 128), FakeDeviceArray(0x20000, 128))
    assert two_gpus.launch_contexts[-1] == CTX1  # torch.cuda.current_device() is 1
    tilec.set_device(0)  # tilec.set_device wins
    launch(FakeDeviceArray(0x10000, 128), FakeDeviceArray(0x20000, 128))
    assert two_gpus.launch_contexts[-1] == CTX0


def test_arguments_on_different_devices_are_named(two_gpus, fake_torch):
    with pytest.raises(TypeError, match=r"different devices \('x_ptr' on cuda:0, 'out_ptr' on"):
        launch(Tensor(0x10000, 0), Tensor(0x20000, 1))
    assert two_gpus.launches == []
