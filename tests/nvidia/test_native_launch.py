"""Native fast launches (`tilec.runtime.native_launch`) against a fake CUDA driver whose
`cuLaunchKernel` entry point is a ctypes callback: launches like an earlier one go through the
JIT-compiled guards and pack the arguments the kernel receives; every guard that does not hold
leaves the launch to the Python path (which then launches through cuda-bindings' call, here the
fake's `cuLaunchKernel`); references are not leaked; threads do not mix arguments."""

from __future__ import annotations

import ctypes
import gc
import sys
import threading
import types
from concurrent.futures import ThreadPoolExecutor

import pytest
from fake_cuda import CUresult, FakeCu

import tilec
import tilec.language as tl
from tilec.backend import Availability
from tilec.runtime import compiler, hot_path, native_launch
from tilec_nvidia import driver as cuda
from tilec_nvidia.backend import NvidiaBackend
from tilec_nvidia.codegen import find_ptxas

ENTRY = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p, *[ctypes.c_uint] * 7, ctypes.c_void_p,
                         ctypes.c_void_p, ctypes.c_void_p)  # fmt: skip

if native_launch._host() is None:
    pytest.skip("this interpreter takes no native launches", allow_module_level=True)


class Tensor:
    """A CUDA tensor as the launch path sees one: dtype, device index, address."""

    def __init__(self, address: int, dtype: str = "float32", device: int = 0):
        self.address, self.dtype, self.device_index = address, dtype, device
        self.is_cuda = device >= 0
        self.device = f"cuda:{device}" if device >= 0 else "cpu"

    def get_device(self) -> int:
        return self.device_index

    def data_ptr(self) -> int:
        return self.address


class Recorder:
    """The native entry point: records the grid, block, shared bytes, stream and the 4 packed
    8-byte parameters; returns `result`."""

    def __init__(self):
        self.launches: list[tuple] = []
        self.functions: list[int] = []
        """The function each launch called."""
        self.result = 0
        self.lock = threading.Lock()
        self.callback = ENTRY(self._entry)
        self.address = ctypes.cast(self.callback, ctypes.c_void_p).value

    def _entry(self, function, gx, gy, gz, bx, by, bz, shared, stream, params, extra):
        pointers = (ctypes.c_void_p * 4).from_address(params)
        values = [ctypes.c_uint64.from_address(p).value for p in pointers]
        with self.lock:
            self.launches.append(((gx, gy, gz), (bx, by, bz), shared, stream or 0, values))
            self.functions.append(function)
        return self.result


@pytest.fixture
def gpu(monkeypatch):
    """The nvidia backend on a fake driver with a native entry point, and a fake torch."""
    recorder = Recorder()
    python_launches: list[tuple] = []

    class NativeCu(FakeCu):
        def cuDriverGetVersion(self):
            return (CUresult.CUDA_SUCCESS, 12080)

        def cuGetProcAddress(self, symbol, version, flags):
            assert symbol == b"cuLaunchKernel"
            return (CUresult.CUDA_SUCCESS, recorder.address, 0)

        def cuLaunchKernel(self, *args):
            python_launches.append(args)
            return (CUresult.CUDA_SUCCESS,)

    streams = {"current": 0}
    torch = types.SimpleNamespace(
        Tensor=Tensor,
        _C=types.SimpleNamespace(_cuda_getCurrentRawStream=lambda index: streams["current"]),
        cuda=types.SimpleNamespace(is_initialized=lambda: True, current_device=lambda: 0),
    )
    monkeypatch.setitem(sys.modules, "torch", torch)
    monkeypatch.setattr(hot_path, "native_in_background", False)  # built by the 2nd launch
    monkeypatch.setattr(compiler, "_availability", {})  # the fake's availability stays here
    monkeypatch.delenv("TILEC_BACKEND", raising=False)
    monkeypatch.setattr(NvidiaBackend, "is_available", lambda self: Availability(True, "fake"))
    cuda.reset_driver(cuda.CudaDriver(cu=NativeCu()))
    tilec.set_backend("nvidia")
    yield types.SimpleNamespace(native=recorder.launches, recorder=recorder,
                                python=python_launches, streams=streams)  # fmt: skip
    tilec.set_backend(None)
    cuda.reset_driver(None)


def make_kernel():
    @tilec.jit
    def add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
        offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        mask = offsets < n
        tl.store(
            out_ptr + offsets,
            tl.load(x_ptr + offsets, mask=mask) + tl.load(y_ptr + offsets, mask=mask),
            mask=mask,
        )

    return add_kernel


def tensors(base: int, dtype: str = "float32") -> tuple[Tensor, Tensor, Tensor]:
    return Tensor(base, dtype), Tensor(base + 0x1000, dtype), Tensor(base + 0x2000, dtype)


def test_stream_launches_after_plain_ones_go_native(gpu):
    """The shape made by a launch without `stream=` takes later launches with an int handle."""
    kernel = make_kernel()
    launch = kernel[(2,)]
    launch(*tensors(0x10000), 4096, BLOCK=1024)
    launch(*tensors(0x10000), 4096, BLOCK=1024, stream=0x61)
    assert len(gpu.python) == 1 and gpu.native[-1][3] == 0x61


def test_the_native_code_is_built_by_the_second_launch_of_a_shape(gpu, monkeypatch):
    """The first launch (a new process's, from the disk cache) waits for no JIT: it records the
    shape; the second launch builds the native code, launches through it and puts it in the
    stand-in's place, so that later launches find it first."""
    builds = []
    real = native_launch.build

    def counting(*args, **kwargs):
        builds.append(args[1])
        return real(*args, **kwargs)

    monkeypatch.setattr(native_launch, "build", counting)
    kernel = make_kernel()
    launch = kernel[(2,)]
    launch(*tensors(0x10000), 4096, BLOCK=1024)
    stand_in = kernel._launch_info.fast[0]
    assert not builds and len(kernel._launch_info.fast) == 2
    launch(*tensors(0x20000), 4096, BLOCK=1024)
    assert len(builds) == 1 and len(gpu.python) == 1 and len(gpu.native) == 1
    native = kernel._launch_info.fast[0]
    assert native is not stand_in and stand_in not in kernel._launch_info.fast
    assert [native in fs for fs in kernel._launch_info.fast_shapes.values()] == [True]
    launch(*tensors(0x30000), 4096, BLOCK=1024)
    assert len(builds) == 1 and len(gpu.native) == 2
    assert builds[0].positional[3][1] == ("int", False, True, True)  # n = 4096, recorded first


def hold_builds(monkeypatch) -> tuple[threading.Event, threading.Event]:
    """Native builds on threads of their own, each held until `release` is set; `started` is
    set when one begins."""
    monkeypatch.setattr(hot_path, "native_in_background", True)
    started, release = threading.Event(), threading.Event()
    real = native_launch.build

    def held(*args, **kwargs):
        started.set()
        release.wait(30)
        return real(*args, **kwargs)

    monkeypatch.setattr(native_launch, "build", held)
    return started, release


def test_the_native_code_is_built_on_a_thread_while_launches_go_on(gpu, monkeypatch):
    """In the background (the default), the second launch starts the build and launches through
    the Python fast launch at once; the launches that come before the code is in place do too,
    and once it is (`wait_for_native_launches`) they go native."""
    started, release = hold_builds(monkeypatch)
    kernel = make_kernel()
    launch = kernel[(2,)]
    launch(*tensors(0x10000), 4096, BLOCK=1024)
    launch(*tensors(0x20000), 4096, BLOCK=1024)  # starts the build, launches through Python
    assert started.wait(30)
    launch(*tensors(0x30000), 4096, BLOCK=1024)  # the build still held: Python again
    assert len(gpu.python) == 3 and gpu.native == []
    release.set()
    hot_path.wait_for_native_launches(30)
    launch(*tensors(0x40000), 4096, BLOCK=1024)
    assert len(gpu.python) == 3 and len(gpu.native) == 1
    assert gpu.native[0][4][:3] == [0x40000, 0x41000, 0x42000]


def test_without_new_threads_the_python_fast_launch_stays(gpu, monkeypatch):
    """At the interpreter's shutdown no thread starts: the launch goes on, the stand-in goes."""
    monkeypatch.setattr(hot_path, "native_in_background", True)

    def refused(self):
        raise RuntimeError("can't create new thread at interpreter shutdown")

    monkeypatch.setattr(threading.Thread, "start", refused)
    kernel = make_kernel()
    launch = kernel[(2,)]
    for base in (0x10000, 0x20000, 0x30000):
        launch(*tensors(base), 4096, BLOCK=1024)
    assert len(gpu.python) == 3 and gpu.native == []
    assert len(kernel._launch_info.fast) == 1


def test_a_child_forked_during_a_build_builds_none(gpu, monkeypatch):
    """The fork hooks, called as a fork calls them while a build runs: the child's shapes keep
    the Python fast launch (the parent's build may have held the JIT's locks)."""
    monkeypatch.setattr(hot_path, "_builds", [])
    monkeypatch.setattr(hot_path, "_builds_lock", threading.Lock())
    monkeypatch.setattr(hot_path, "_building_at_fork", False)
    monkeypatch.setattr(hot_path, "_no_builds", False)
    _started, release = hold_builds(monkeypatch)
    kernel = make_kernel()
    launch = kernel[(2,)]
    launch(*tensors(0x10000), 4096, BLOCK=1024)
    launch(*tensors(0x20000), 4096, BLOCK=1024)  # a build, held
    hot_path._before_fork()
    release.set()
    hot_path.wait_for_native_launches(30)
    hot_path._after_fork_in_child()  # as in the child
    other = make_kernel()
    for base in (0x10000, 0x20000, 0x30000):
        other[(2,)](*tensors(base), 4096, BLOCK=1024)
    assert len(other._launch_info.fast) == 1  # no native stand-in left, no build
    assert gpu.native == [] and len(gpu.python) == 5


def test_a_failed_build_leaves_the_python_fast_launch(gpu, monkeypatch, caplog):
    def failing(*args, **kwargs):
        raise RuntimeError("no JIT today")

    monkeypatch.setattr(native_launch, "build", failing)
    kernel = make_kernel()
    launch = kernel[(2,)]
    for base in (0x10000, 0x20000, 0x30000):
        launch(*tensors(base), 4096, BLOCK=1024)
    assert len(gpu.python) == 3 and gpu.native == []
    assert len(kernel._launch_info.fast) == 1  # the stand-in dropped, the Python launch kept
    assert "the native fast launch was not built" in caplog.text


def test_launches_like_the_first_go_native_with_their_own_arguments(gpu):
    kernel = make_kernel()
    launch = kernel[(2,)]
    launch(*tensors(0x10000), 4096, BLOCK=1024)
    assert len(gpu.python) == 1 and not gpu.native  # the first: the general path
    assert callable(kernel._launch_info.fast[0]) and len(kernel._launch_info.fast) == 2
    for base in (0x20000, 0x30000, 0x40000):
        launch(*tensors(base), 8192, BLOCK=1024)
    assert len(gpu.python) == 1
    assert [v for *_, v in gpu.native] == [
        [b, b + 0x1000, b + 0x2000, 8192] for b in (0x20000, 0x30000, 0x40000)
    ]
    grid, block, _shared, stream, _ = gpu.native[0]
    assert grid == (2, 1, 1) and block == (128, 1, 1) and stream == 0
    # a new grid tuple is read and checked; torch's current stream is asked on every launch
    gpu.streams["current"] = 0x77
    kernel[(5, 3)](*tensors(0x50000), 8192, BLOCK=1024)
    assert gpu.native[-1][0] == (5, 3, 1) and gpu.native[-1][3] == 0x77


@pytest.mark.parametrize(
    "change",
    ["dtype", "misaligned", "device", "n_is_1", "n_not_16", "n_over_i32", "block", "keyword",
     "stream", "grid_function", "grid_too_large", "env", "failed_call", "float_for_int"],
)  # fmt: skip
def test_a_guard_that_fails_leaves_the_launch_to_python(gpu, monkeypatch, change):
    kernel = make_kernel()
    launch = kernel[(2,)]
    launch(*tensors(0x10000), 4096, BLOCK=1024)
    launch(*tensors(0x20000), 4096, BLOCK=1024)
    assert len(gpu.native) == 1 and len(gpu.python) == 1
    args, meta, grid = list(tensors(0x30000)), {"BLOCK": 1024}, (2,)
    n = 4096
    if change == "dtype":
        args = list(tensors(0x30000, "float16"))
    elif change == "misaligned":
        args[1] = Tensor(0x31004)
    elif change == "device":
        args[2] = Tensor(0x32000, device=-1)
    elif change == "n_is_1":
        n = 1
    elif change == "n_not_16":
        n = 4100
    elif change == "n_over_i32":
        n = 2**33
    elif change == "block":
        meta["BLOCK"] = 512
    elif change == "keyword":
        meta["num_warps"] = 8
    elif change == "stream":
        meta["stream"] = types.SimpleNamespace(cuda_stream=0x99)  # not an int handle
    elif change == "grid_function":
        grid = lambda meta: (2,)  # noqa: E731
    elif change == "grid_too_large":
        grid = (1, 2**17)
    elif change == "env":
        monkeypatch.setenv("TILEC_BACKEND", "nvidia")
    elif change == "failed_call":
        gpu.recorder.result = 999
    elif change == "float_for_int":
        n = 4096.0
    try:
        kernel[grid](*args, n, **meta)
    except tilec.errors.TilecError:
        assert change in ("device", "grid_too_large", "float_for_int")  # the general path said why
    attempted = 2 if change == "failed_call" else 1  # the entry point was called, and failed
    assert len(gpu.native) == attempted, f"{change}: launched natively"
    if change not in ("device", "grid_too_large", "float_for_int"):
        assert len(gpu.python) == 2, f"{change}: the Python path did not launch"


def test_no_reference_is_leaked(gpu):
    kernel = make_kernel()
    launch = kernel[(2,)]
    compiled = launch(*tensors(0x10000), 4096, BLOCK=1024)
    args = tensors(0x20000)
    launch(*args, 4096, BLOCK=1024)  # the second launch builds the native code (its references)
    gc.collect()  # earlier tests' kernels, which hold `compiled` too
    before = sys.getrefcount(compiled), sys.getrefcount(hot_path.MISS), sys.getrefcount(args[0])
    for _ in range(500):
        launch(*args, 4096, BLOCK=1024)
    stream = types.SimpleNamespace(cuda_stream=0)
    for _ in range(500):
        launch(*args, 4096, BLOCK=1024, stream=stream)  # a native MISS each time
    after = sys.getrefcount(compiled), sys.getrefcount(hot_path.MISS), sys.getrefcount(args[0])
    assert after == before and len(gpu.native) == 501


def test_threads_launching_one_kernel_keep_their_arguments(gpu):
    kernel = make_kernel()
    launch = kernel[(2,)]
    launch(*tensors(0x10000), 4096, BLOCK=1024)
    launch(*tensors(0x10000), 4096, BLOCK=1024)  # the second launch builds the native code
    del gpu.native[:]

    def worker(t: int) -> None:
        for i in range(300):
            base = 0x100000 * (t + 1) + 0x10000 * (i % 7)
            launch(*tensors(base), 16 * (t + 2), BLOCK=1024)

    with ThreadPoolExecutor(8) as pool:
        list(pool.map(worker, range(8)))  # re-raises a worker's exception
    assert len(gpu.native) == 8 * 300
    for *_, (x, y, out, n) in gpu.native:
        t = x // 0x100000 - 1
        assert y == x + 0x1000 and out == x + 0x2000 and n == 16 * (t + 2)


def test_disabled_native_launches_keep_the_python_fast_path(gpu, monkeypatch):
    """The second launch finds no native code to build: the stand-in leaves the fast launches."""
    monkeypatch.setattr(native_launch, "enabled", False)
    kernel = make_kernel()
    launch = kernel[(2,)]
    for base in (0x10000, 0x20000):
        launch(*tensors(base), 4096, BLOCK=1024)
    assert len(kernel._launch_info.fast) == 1 and not gpu.native and len(gpu.python) == 2


def test_stream_handles_go_native_and_stream_objects_take_the_python_path(gpu):
    kernel = make_kernel()
    launch = kernel[(2,)]
    for handle in (0x51, 0x52, 0x53):
        launch(*tensors(0x10000), 4096, BLOCK=1024, stream=handle)
    assert len(gpu.python) == 1 and [s for _, _, _, s, _ in gpu.native] == [0x52, 0x53]
    launch(*tensors(0x10000), 4096, BLOCK=1024)  # one native launch serves both call shapes
    assert len(gpu.python) == 1 and gpu.native[-1][3] == 0

    class Stream:
        cuda_stream = 0x54

    launch(*tensors(0x10000), 4096, BLOCK=1024, stream=Stream())
    assert len(gpu.native) == 3 and len(gpu.python) == 2
    assert int(gpu.python[-1][8]) == 0x54  # the Python path's CUstream


@pytest.mark.skipif(find_ptxas() is None, reason="no ptxas: no cubins")
def test_a_kernel_with_a_one_wave_cubin_launches_it_natively_where_the_grid_fits(gpu):
    """The column sum's loop reads global memory: it has a one-wave function (the fake's second
    module, 0xF01; 32 registers, 128 threads: 16 blocks an SM, 132 SMs), which the native launch
    calls for grids of up to 2112 programs, the plain one (0xF00) above."""

    @tilec.jit
    def column_sum(part_ptr, out_ptr, rows, N, BLOCK_ROWS: tl.constexpr):
        cols = tl.program_id(0) * 128 + tl.arange(0, 128)
        acc = tl.zeros([BLOCK_ROWS, 128], dtype=tl.float32)
        for first in range(0, rows, BLOCK_ROWS):
            lines = first + tl.arange(0, BLOCK_ROWS)
            inside = (lines[:, None] < rows) & (cols[None, :] < N)
            acc += tl.load(part_ptr + lines[:, None] * N + cols[None, :], mask=inside, other=0.0)
        tl.store(out_ptr + cols, tl.sum(acc, axis=0), mask=cols < N)

    part, out, _ = tensors(0x10000)
    for grid in ((2,), (2,), (2112,), (2113,), (7, 2)):
        column_sum[grid](part, out, 64, 256, BLOCK_ROWS=32)
    assert len(gpu.python) == 1 and int(gpu.python[0][0]) == 0xF01  # the first launch
    assert [int(f) for f in gpu.recorder.functions] == [0xF01, 0xF01, 0xF00, 0xF01]
    assert [g for g, *_ in gpu.native] == [(2, 1, 1), (2112, 1, 1), (2113, 1, 1), (7, 2, 1)]
