"""Launch options of the nvidia runner against a fake cuda.bindings (no GPU): `stream=`, the
returned launch handle, NumPy copies on the launch stream, graph capture, threads."""

from __future__ import annotations

import ctypes
import sys
import threading
import time
import types

import numpy as np
import pytest
from fake_cuda import CUstream
from test_nvidia_runner import FakeDeviceArray, launched_values, scale_kernel

from tilec.interop.streams import launch_stream
from tilec.runtime import cache
from tilec.runtime.compiler import CompiledKernel
from tilec_nvidia import driver as cuda


class TorchLikeStream:
    """A stream as torch and CuPy present one: `.cuda_stream`."""

    def __init__(self, handle: int):
        self.cuda_stream = handle


def launch(stream=None, x=0x10000, n=1000, **options):
    out = FakeDeviceArray(0x20000, n)
    if stream is not None:
        options["stream"] = stream
    return scale_kernel[(8,)](
        FakeDeviceArray(x, n), out, n, 2.0, BLOCK=128, backend="nvidia", **options
    )


@pytest.mark.parametrize("stream", [0x5000, CUstream(0x5000), TorchLikeStream(0x5000)])
def test_stream_option_picks_the_launch_stream(fake_gpu, stream):
    launch()
    assert int(fake_gpu.launches[-1][4]) == 0  # no stream, no torch tensors: the default stream
    launch(stream)
    assert int(fake_gpu.launches[-1][4]) == 0x5000
    launch(TorchLikeStream(0x6000))
    assert int(fake_gpu.launches[-1][4]) == 0x6000
    assert len(fake_gpu.images) == 1  # a launch option: no new compile, no new cache entry
    assert len([c for c in cache.memory.values() if c.name == "scale_kernel"]) == 1


def test_a_bad_stream_is_rejected(fake_gpu):
    with pytest.raises(TypeError, match="stream must be an int handle"):
        launch("s1")


def test_launch_returns_the_compiled_kernel_with_resource_usage(fake_gpu):
    handle = launch()
    assert isinstance(handle, CompiledKernel)
    assert ".entry scale_kernel" in handle.asm["ptx"]
    assert handle.metadata["num_regs"] == 32 and handle.metadata["n_spills"] == 0
    assert handle.metadata["shared"] == handle.metadata["shared_bytes"]
    assert launch() is handle  # the hot path returns the same handle


def test_numpy_copies_and_waits_go_to_the_launch_stream(fake_gpu):
    x, out = np.arange(256, dtype=np.float32), np.zeros(256, np.float32)
    scale_kernel[(2,)](x, out, 256, 2.0, BLOCK=128, backend="nvidia", stream=0x7000)
    assert fake_gpu.stream_calls, "NumPy arguments are copied in and out"
    assert {stream for _, stream in fake_gpu.stream_calls} == {0x7000}
    assert ("sync", 0x7000) in fake_gpu.stream_calls
    assert int(fake_gpu.launches[-1][4]) == 0x7000


def test_numpy_arguments_during_a_graph_capture_are_an_error(fake_gpu):
    fake_gpu.capturing.add(0x7000)
    x, out = np.arange(256, dtype=np.float32), np.zeros(256, np.float32)
    with pytest.raises(cuda.CudaError, match=r"argument 'x_ptr' .* capturing a graph.*allocated"):
        scale_kernel[(2,)](x, out, 256, 2.0, BLOCK=128, backend="nvidia", stream=0x7000)
    assert fake_gpu.stream_calls == [] and fake_gpu.memory == {}  # no copy, no allocation
    launch(0x7000)  # device arrays launch while capturing
    assert int(fake_gpu.launches[-1][4]) == 0x7000


def test_launch_stream_takes_torchs_current_stream_for_torch_tensors(monkeypatch):
    class Tensor:
        is_cuda = True

    asked = []
    torch = types.SimpleNamespace(
        Tensor=Tensor,
        _C=types.SimpleNamespace(_cuda_getCurrentRawStream=lambda i: asked.append(i) or 0x9000),
    )
    monkeypatch.setitem(sys.modules, "torch", torch)
    assert launch_stream(None, [Tensor(), 3], ordinal=1) == 0x9000 and asked == [1]
    assert launch_stream(0x42, [Tensor()], ordinal=1) == 0x42  # stream= wins
    assert launch_stream(None, [np.zeros(1), 3], ordinal=1) == 0  # no tensor: default stream


def test_concurrent_launches_never_swap_arguments(fake_gpu):
    """Each thread launches with its own (x, n) pair; the fake reads the packed parameters
    inside cuLaunchKernel, where another thread's packing would show as a mismatched pair."""
    seen, errors = [], []

    def read(params):
        pointers = (ctypes.c_void_p * 4).from_address(params)
        x = ctypes.c_uint64.from_address(pointers[0]).value
        time.sleep(0)  # let other threads run (and pack, were there no lock) in between
        n = ctypes.c_int32.from_address(pointers[2]).value
        seen.append((x, n))

    fake_gpu.on_launch = read
    launch()  # compile and prepare the runner once

    def worker(t):
        try:
            for _ in range(200):
                launch(x=0x100000 + t * 0x1000, n=1024 + 16 * t)
        except Exception as error:
            errors.append(error)

    old = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    try:
        threads = [threading.Thread(target=worker, args=(t,)) for t in range(8)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    finally:
        sys.setswitchinterval(old)
    assert errors == []
    pairs = seen[1:]
    assert len(pairs) == 8 * 200
    assert all(x == 0x100000 + (n - 1024) // 16 * 0x1000 for x, n in pairs)
    assert launched_values(fake_gpu.launches[-1])[3] == 2.0
