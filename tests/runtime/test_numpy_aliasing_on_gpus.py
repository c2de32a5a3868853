"""NumPy arguments that share host memory share device memory on the GPU backends (issue 14):
the same array twice, interleaved views, a view and its base, overlapping slices. The launch
path copies each group of them to one device buffer and back once, so the kernel's writes
through every argument survive, as on a real device array. Runs against the fake CUDA driver
(tests/nvidia/fake_cuda.py) and the fake HIP (tests/amd/fake_hip.py), whose "device memory" is
host memory, with each kernel played in NumPy on that memory; the interp backend, which runs on
the arrays in place, gives the reference results."""

from __future__ import annotations

import ctypes
import struct
import sys
from pathlib import Path

import numpy as np
import pytest

import tilec
import tilec.language as tl
from tilec.backend import Availability
from tilec.interop.copies import finish_arguments, prepare_arguments
from tilec.runtime import compiler
from tilec_amd import driver as hip_driver
from tilec_amd.backend import AmdBackend
from tilec_nvidia import driver as cuda_driver
from tilec_nvidia.backend import NvidiaBackend

TESTS = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(TESTS / "nvidia"))
sys.path.insert(0, str(TESTS / "amd"))

from fake_cuda import FakeCu, HostDriver  # noqa: E402
from fake_hip import FakeHip  # noqa: E402

BLOCK = 16


@tilec.jit
def bump_both(a_ptr, b_ptr, a_stride, b_stride, a_count, b_start, b_end, BLOCK: tl.constexpr):
    """a[i] += 1 for i < a_count, b[i] *= 10 for b_start <= i < b_end: each element is read and
    written through one argument only, so the result is defined however a and b alias."""
    i = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    in_a = i < a_count
    in_b = (i >= b_start) & (i < b_end)
    a = tl.load(a_ptr + i * a_stride, mask=in_a)
    b = tl.load(b_ptr + i * b_stride, mask=in_b)
    tl.store(a_ptr + i * a_stride, a + 1, mask=in_a)
    tl.store(b_ptr + i * b_stride, b * 10, mask=in_b)


@tilec.jit
def store_then_reload(out_ptr, in_ptr, stride, n, BLOCK: tl.constexpr):
    """out[i] = 2 * in[i], then (after a barrier) out[n + i] = in[i] + 1: where `in` is `out`,
    the second store sees the first one's values."""
    i = tl.arange(0, BLOCK)
    mask = i < n
    tl.store(out_ptr + i * stride, tl.load(in_ptr + i * stride, mask=mask) * 2, mask=mask)
    tl.debug_barrier()
    tl.store(out_ptr + (n + i) * stride, tl.load(in_ptr + i * stride, mask=mask) + 1, mask=mask)


def element(address: int, index: int, stride: int) -> ctypes.c_float:
    """The float32 at `address + index * stride` elements ("device" memory is host memory)."""
    return ctypes.c_float.from_address(address + 4 * index * stride)


def play_bump_both(a, b, a_stride, b_stride, a_count, b_start, b_end):
    a_values = [element(a, i, a_stride).value for i in range(a_count)]
    b_values = [element(b, i, b_stride).value for i in range(b_start, b_end)]
    for i, value in enumerate(a_values):
        element(a, i, a_stride).value = value + 1
    for i, value in zip(range(b_start, b_end), b_values, strict=True):
        element(b, i, b_stride).value = value * 10


def play_store_then_reload(out, inp, stride, n):
    for i in range(n):
        element(out, i, stride).value = element(inp, i, stride).value * 2
    for i in range(n):
        element(out, n + i, stride).value = element(inp, i, stride).value + 1


LAUNCHED: list[list[int]] = []
"""The parameter values of every played launch."""

PLAYS = {
    "bump_both": (("<Q", "<Q") + ("<i",) * 5, play_bump_both),
    "store_then_reload": (("<Q", "<Q", "<i", "<i"), play_store_then_reload),
}
"""Kernel name -> the struct codes of its parameters and a NumPy play of it on device memory."""


def play(name: str, values: list[int]) -> None:
    LAUNCHED.append(values)
    PLAYS[name][1](*values)


class PlayingCu(FakeCu):
    """FakeCu that plays each launched kernel on its host-memory "device"."""

    def __init__(self):
        super().__init__()
        self.function_names: dict[int, str] = {}

    def cuModuleGetFunction(self, module, name):
        result, _ = super().cuModuleGetFunction(module, name)
        handle = 0x2000 + len(self.function_names)
        self.function_names[handle] = name.decode()
        return result, type(_)(handle)

    def cuLaunchKernel(self, f, gx, gy, gz, bx, by, bz, shared, stream, params, extra):
        name = self.function_names[int(f)]
        codes = PLAYS[name][0]
        pointers = (ctypes.c_void_p * len(codes)).from_address(params)
        values = [
            struct.unpack(code, ctypes.string_at(pointer, struct.calcsize(code)))[0]
            for code, pointer in zip(codes, pointers, strict=True)
        ]
        play(name, values)
        return super().cuLaunchKernel(f, gx, gy, gz, bx, by, bz, shared, stream, params, extra)


def playing_hip() -> FakeHip:
    hip = FakeHip(
        kernels={name: lambda hip, launch: play(launch.name, launch.values) for name in PLAYS}
    )
    hip.signatures.update({name: codes for name, (codes, _) in PLAYS.items()})
    return hip


@pytest.fixture(params=["nvidia", "amd"])
def gpu(request, monkeypatch):
    """The backend's name, on its fake runtime; yields the runtime's host-to-device copy sizes."""
    copied: list[int] = []
    monkeypatch.setattr(compiler, "_availability", {})
    if request.param == "nvidia":
        cu = PlayingCu()
        copy_in = cu.cuMemcpyHtoDAsync
        cu.cuMemcpyHtoDAsync = lambda d, h, n, s: copied.append(n) or copy_in(d, h, n, s)
        cuda_driver.reset_driver(cuda_driver.CudaDriver(cu=cu))
        monkeypatch.setattr(NvidiaBackend, "is_available", lambda self: Availability(True, "fake"))
        yield "nvidia", copied
        cuda_driver.reset_driver(None)
        return
    hip = playing_hip()
    copy_in = hip.hipMemcpyHtoDAsync
    hip.hipMemcpyHtoDAsync = lambda d, h, n, s: copied.append(n) or copy_in(d, h, n, s)
    hip_driver.reset_driver(hip_driver.HipDriver(hip))
    monkeypatch.setattr(
        AmdBackend, "is_available", lambda self: hip_driver.runtime_availability(hip)
    )
    yield "amd", copied
    assert not hip.buffers  # every device buffer was freed
    hip_driver.reset_driver(None)


def stride(view: np.ndarray) -> int:
    return view.strides[0] // view.itemsize


def run_bump_both(backend, make_views, a_count, b_start, b_end, base):
    """`bump_both` on the views `make_views(base)` of a copy of `base`: the copy afterwards,
    and the views."""
    base = base.copy()
    a, b = make_views(base)
    grid = (tilec.cdiv(max(a_count, b_end), BLOCK),)
    bump_both[grid](
        a, b, stride(a), stride(b), a_count, b_start, b_end, BLOCK=BLOCK, backend=backend
    )
    return base, (a, b)


BASE = np.arange(64, dtype=np.float32)
GRID = np.arange(64, dtype=np.float32).reshape(8, 8)

CASES = {
    "the same array twice": (lambda x: (x, x), 32, 32, 64, BASE),
    "a[::2] and a[1::2]": (lambda x: (x[::2], x[1::2]), 32, 0, 32, BASE),
    "a view and its base": (lambda x: (x[10:40], x), 30, 40, 64, BASE),
    "a base and its strided view": (lambda x: (x, x[::3]), 20, 7, 21, BASE),
    "overlapping slices x and x[1:]": (lambda x: (x[:40], x[1:]), 20, 25, 63, BASE),
    "a reversed view and a slice": (lambda x: (x[::-1], x[8:]), 16, 0, 40, BASE),
    "a column and a row of one matrix": (lambda x: (x[:, 1], x[2]), 8, 2, 8, GRID),
    "two columns of one matrix": (lambda x: (x[:, 0], x[:, 5]), 8, 0, 8, GRID),
}


@pytest.mark.parametrize("case", CASES)
def test_aliased_arguments_keep_the_writes_through_each(gpu, case):
    backend, _ = gpu
    make_views, a_count, b_start, b_end, base = CASES[case]
    expected, _ = run_bump_both("interp", make_views, a_count, b_start, b_end, base)
    assert np.count_nonzero(expected != base) == a_count + (b_end - b_start)  # both wrote
    result, _ = run_bump_both(backend, make_views, a_count, b_start, b_end, base)
    np.testing.assert_array_equal(result, expected)


@pytest.mark.parametrize("view", [slice(None), slice(None, None, 2)], ids=["x", "a[::2]"])
def test_one_array_as_input_and_output_reads_back_what_was_stored(gpu, view):
    backend, _ = gpu
    results = []
    for run_on in ("interp", backend):
        base = np.arange(32, dtype=np.float32)
        v = base[view]
        n = len(v) // 2
        store_then_reload[(1,)](v, v, stride(v), n, BLOCK=16, backend=run_on)
        results.append(base)
    expected, result = results
    v = np.arange(32, dtype=np.float32)[view]
    np.testing.assert_array_equal(expected[view][len(v) // 2 :], 2 * v[: len(v) // 2] + 1)
    np.testing.assert_array_equal(result, expected)


def test_views_of_one_base_that_do_not_overlap_are_copied_alone(gpu):
    """Two disjoint slices of a big base: each is copied, not the memory between them, and
    each keeps its host address modulo 16 bytes on the device (what its specialization
    assumed)."""
    backend, copied = gpu
    base = np.arange(4096, dtype=np.float32)

    def make_views(x):
        return x[1:17], x[-17:-1]

    expected, _ = run_bump_both("interp", make_views, 16, 0, 16, base)
    result, views = run_bump_both(backend, make_views, 16, 0, 16, base)
    np.testing.assert_array_equal(result, expected)
    assert sorted(copied) == [64, 64]
    assert [address % 16 for address in LAUNCHED[-1][:2]] == [v.ctypes.data % 16 for v in views]


def test_a_shared_span_is_copied_in_once(gpu):
    backend, copied = gpu
    run_bump_both(backend, lambda x: (x[::2], x[1::2]), 32, 0, 32, BASE)
    assert copied == [BASE.nbytes]


# The copy path itself, on a host-memory runtime ----------------------------------------------


def test_a_group_is_one_buffer_where_each_argument_keeps_its_alignment():
    """Within one device buffer each argument keeps its host address modulo 16 bytes, so an
    argument specialized as 16-byte aligned (by its host address) is aligned on the device; a
    group no argument of which is written is not copied back."""
    runtime = HostDriver()
    base = np.arange(64, dtype=np.float32)
    args = [base[1:], base[4:], base[7:][::-1]]
    prepared = prepare_arguments(runtime, "k", ("a", "b", "c"), ("*fp32",) * 3, args)
    a, b, c = prepared.values
    assert len(runtime.live) == 1  # one device buffer for the three
    assert [a % 16, b % 16, c % 16] == [arg.ctypes.data % 16 for arg in args]
    assert (b - a, c - a) == (base[4:].ctypes.data - base[1:].ctypes.data, 62 * 4)
    ctypes.c_float.from_address(b).value = -1.0  # a store nobody declared
    finish_arguments(runtime, prepared)
    np.testing.assert_array_equal(base, np.arange(64, dtype=np.float32))


def test_a_written_group_is_copied_back_whole():
    """A store through the address of an argument the kernel does not write, where that
    argument shares memory with one it writes, reaches the host: the group is copied back."""
    runtime = HostDriver()
    base = np.zeros(16, np.float32)
    prepared = prepare_arguments(
        runtime, "k", ("x", "y"), ("*fp32",) * 2, [base[:8], base[4:]], written={1}
    )
    x, y = prepared.values
    ctypes.c_float.from_address(x).value = 1.0  # x[0], through x
    ctypes.c_float.from_address(x + 4 * 5).value = 2.0  # x[5] is y[1]
    ctypes.c_float.from_address(y + 4 * 11).value = 3.0  # y[11], through y
    finish_arguments(runtime, prepared)
    np.testing.assert_array_equal(np.flatnonzero(base), [0, 5, 15])
