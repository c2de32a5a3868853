"""The launch fast path (`tilec.runtime.hot_path`) on the nvidia runner, against a fake
cuda.bindings and a fake torch (no GPU): a launch like an earlier one skips the general path,
and every change the specialization depends on (dtype, 16-byte alignment, an int's divisibility
or `== 1`, the device, a constexpr, a launch option, the backend, a rebound global) still
compiles anew; streams, threads and errors behave as on the general path."""

from __future__ import annotations

import ctypes
import sys
import threading
import time
import types

import pytest
from test_nvidia_runner import scale_kernel

import tilec
import tilec.language as tl
from tilec.runtime import cache, launcher

FLOAT32, FLOAT16 = "torch.float32", "torch.float16"


class Tensor:
    """Enough of a torch CUDA tensor for the launch path (`sys.modules['torch'].Tensor`)."""

    is_cuda = True

    def __init__(self, address: int, dtype: str = FLOAT32, index: int = 0):
        self.address, self.dtype, self.index = address, dtype, index
        self.device = f"cuda:{index}"

    def get_device(self) -> int:
        return self.index

    def data_ptr(self) -> int:
        return self.address


@pytest.fixture
def torch_stream(monkeypatch):
    """A fake torch whose current stream of every device is `current[0]`."""
    current = [0x900]
    torch = types.SimpleNamespace(
        Tensor=Tensor,
        _C=types.SimpleNamespace(_cuda_getCurrentRawStream=lambda index: current[0]),
        cuda=types.SimpleNamespace(is_initialized=lambda: True, current_device=lambda: 0),
    )
    monkeypatch.setitem(sys.modules, "torch", torch)
    return current


@pytest.fixture
def general(monkeypatch):
    """Counts the launches that took the general path."""
    calls = []
    original = launcher.Launcher._launch

    def counted(self, args, meta):
        calls.append(args)
        return original(self, args, meta)

    monkeypatch.setattr(launcher.Launcher, "_launch", counted)
    return calls


def values(launch) -> tuple[int, int, int, float]:
    """x, out, n and factor as the fake driver received them (through the void*[])."""
    pointers = (ctypes.c_void_p * 4).from_address(launch[5])
    return (
        ctypes.c_uint64.from_address(pointers[0]).value,
        ctypes.c_uint64.from_address(pointers[1]).value,
        ctypes.c_int32.from_address(pointers[2]).value,
        ctypes.c_float.from_address(pointers[3]).value,
    )


def run(x=0x10000, out=0x20000, n=1024, factor=2.0, grid=(8,), **meta):
    meta.setdefault("BLOCK", 128)
    x = x if isinstance(x, Tensor) else Tensor(x)
    return scale_kernel[grid](x, Tensor(out), n, factor, backend="nvidia", **meta)


def test_a_launch_like_an_earlier_one_takes_the_fast_path(fake_gpu, torch_stream, general):
    run()
    run(x=0x30000, out=0x40000, n=2048, factor=-1.5, grid=(3, 2))
    assert len(general) == 1  # the second launch: no key, no look-up
    last = fake_gpu.launches[-1]
    assert values(last) == (0x30000, 0x40000, 2048, -1.5)
    assert last[1] == (3, 2, 1) and int(last[4]) == 0x900
    assert len(fake_gpu.images) == 1


@pytest.mark.parametrize(
    "change",
    [
        {"x": Tensor(0x30000, FLOAT16)},  # dtype
        {"x": 0x30004},  # 16-byte alignment
        {"n": 1000},  # no multiple of 16
        {"n": 1},  # == 1
        {"n": 2**31},  # no longer i32
        {"factor": 2},  # int, not float
        {"BLOCK": 256},  # a constexpr
        {"num_warps": 2},  # a launch option
    ],
)
def test_what_the_specialization_depends_on_misses_the_fast_path(
    fake_gpu, torch_stream, general, change
):
    run()
    run()
    assert len(general) == 1
    run(**change)
    assert len(general) == 2 and len(fake_gpu.images) == 2  # compiled anew
    run(**change)
    run()
    assert len(general) == 2  # both now have a fast launch
    assert len(fake_gpu.images) == 2


def test_a_tensor_on_another_device_misses(fake_gpu, torch_stream, general):
    run()
    with pytest.raises(TypeError, match="cuda:1"):
        run(x=Tensor(0x10000, index=1))
    assert len(general) == 2


def test_streams_get_through(fake_gpu, torch_stream, general):
    run()
    torch_stream[0] = 0x777  # `with torch.cuda.stream(s):` changes torch's current stream
    run()
    assert int(fake_gpu.launches[-1][4]) == 0x777
    run(stream=0x5000)
    assert int(fake_gpu.launches[-1][4]) == 0x5000
    run(stream=types.SimpleNamespace(cuda_stream=0x6000))
    assert int(fake_gpu.launches[-1][4]) == 0x6000
    assert len(general) == 1


def test_no_capture_check_copy_or_wait_on_the_fast_path(fake_gpu, torch_stream):
    run()
    fake_gpu.stream_calls.clear()
    fake_gpu.capturing.add(0x900)
    for _ in range(3):
        run()
    assert fake_gpu.stream_calls == [] and len(fake_gpu.launches) == 4


def test_errors_after_a_fast_launch_are_still_named(fake_gpu, torch_stream, general):
    run()
    with pytest.raises(TypeError, match="argument 'n' of scale_kernel"):
        run(n="1024")
    with pytest.raises(TypeError, match="unknown keyword 'BLOK'"):
        scale_kernel[(1,)](Tensor(0x10000), Tensor(0x20000), 16, 1.0, BLOK=128)
    with pytest.raises(TypeError, match="missing argument 'factor'"):
        scale_kernel[(1,)](Tensor(0x10000), Tensor(0x20000), 16, BLOCK=128, backend="nvidia")


def test_check_and_a_new_cache_generation_take_the_general_path(
    fake_gpu, torch_stream, general, monkeypatch
):
    run()
    cache.clear_memory()
    run()
    assert len(general) == 2
    checked = []
    monkeypatch.setattr("tilec.runtime.check.enabled", True)
    monkeypatch.setattr("tilec.runtime.check.run_checked", lambda *args: checked.append(args))
    run()
    assert len(general) == 3 and len(checked) == 1


def test_the_backend_is_chosen_on_every_launch(fake_gpu, torch_stream, general, monkeypatch):
    def launch():
        return scale_kernel[(1,)](Tensor(0x10000), Tensor(0x20000), 16, 1.0, BLOCK=128)

    launch()
    launch()
    assert len(general) == 1
    monkeypatch.setenv("TILEC_BACKEND", "interp")
    with pytest.raises(TypeError, match="must be a NumPy array"):  # interp takes no CUDA tensor
        launch()
    assert len(general) == 2
    monkeypatch.delenv("TILEC_BACKEND")
    tilec.set_backend("interp")
    try:
        with pytest.raises(TypeError, match="must be a NumPy array"):
            launch()
    finally:
        tilec.set_backend(None)
    assert len(general) == 3


SCALE = 2.0


@tilec.jit
def global_scale_kernel(x_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(x_ptr + offs, tl.load(x_ptr + offs, mask=offs < n) * SCALE, mask=offs < n)


def test_a_rebound_global_compiles_anew(fake_gpu, torch_stream, general):
    global SCALE
    global_scale_kernel[(1,)](Tensor(0x10000), 16, BLOCK=16, backend="nvidia")
    global_scale_kernel[(1,)](Tensor(0x10000), 16, BLOCK=16, backend="nvidia")
    assert len(general) == 1
    SCALE = 3.0
    try:
        global_scale_kernel[(1,)](Tensor(0x10000), 16, BLOCK=16, backend="nvidia")
    finally:
        SCALE = 2.0
    assert len(general) == 2 and len(fake_gpu.images) == 2


def test_arguments_by_keyword_and_constexpr_by_position(fake_gpu, torch_stream, general):
    def launch(x):
        return scale_kernel[(1,)](Tensor(x), Tensor(0x20000), 16, 0.5, 128, backend="nvidia")

    launch(0x10000)
    launch(0x50000)
    assert values(fake_gpu.launches[-1]) == (0x50000, 0x20000, 16, 0.5)
    x = Tensor(0x60000)
    for _ in range(2):
        scale_kernel[(1,)](x, out_ptr=Tensor(0x70000), n=32, factor=4.0, BLOCK=128)
    assert values(fake_gpu.launches[-1]) == (0x60000, 0x70000, 32, 4.0)
    assert len(general) == 2


def test_concurrent_fast_launches_never_swap_arguments(fake_gpu, torch_stream):
    """Threads launch with their own (x, n) pairs; the fake reads the packed parameters inside
    cuLaunchKernel, where another thread's packing would show as a mismatched pair."""
    seen, errors = [], []

    def read(params):
        pointers = (ctypes.c_void_p * 4).from_address(params)
        x = ctypes.c_uint64.from_address(pointers[0]).value
        time.sleep(0)
        seen.append((x, ctypes.c_int32.from_address(pointers[2]).value))

    fake_gpu.on_launch = read
    run()

    def worker(t):
        try:
            for _ in range(200):
                run(x=0x100000 + t * 0x1000, n=1024 + 16 * t)
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
    assert len(seen) == 1 + 8 * 200
    assert all(x == 0x100000 + (n - 1024) // 16 * 0x1000 for x, n in seen[1:])
