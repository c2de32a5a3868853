"""A kernel whose loop reads global memory is also assembled at the most registers its block may
have, for launches that fill at most one wave (`tilec_nvidia.one_wave`); the driver launches that
cubin where the grid fits it and the plain one otherwise (`CudaKernel.function_for`). No GPU:
ptxas where there is one, and a fake cuda.bindings (`fake_cuda.FakeCu`)."""

from __future__ import annotations

import contextlib
import multiprocessing
from concurrent.futures import Future

import pytest
from fake_cuda import FakeCu

import tilec
import tilec.language as tl
from tilec.runtime import cache
from tilec_nvidia import codegen, one_wave
from tilec_nvidia import driver as cuda
from tilec_nvidia.codegen import PtxasInfo, find_ptxas, ptx_to_cubin


@tilec.jit
def column_sum(part_ptr, out_ptr, rows, N, BLOCK_ROWS: tl.constexpr, BLOCK_COLS: tl.constexpr):
    """The sweep's layer-norm-backward column sum: eight 16-byte loads an iteration at 4 warps."""
    cols = tl.program_id(0) * BLOCK_COLS + tl.arange(0, BLOCK_COLS)
    acc = tl.zeros([BLOCK_ROWS, BLOCK_COLS], dtype=tl.float32)
    for first in range(0, rows, BLOCK_ROWS):
        lines = first + tl.arange(0, BLOCK_ROWS)
        inside = (lines[:, None] < rows) & (cols[None, :] < N)
        acc += tl.load(part_ptr + lines[:, None] * N + cols[None, :], mask=inside, other=0.0)
    tl.store(out_ptr + cols, tl.sum(acc, axis=0), mask=cols < N)


@tilec.jit
def row_scale(x_ptr, y_ptr, N, BLOCK: tl.constexpr):
    """No loop: one row a program."""
    cols = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + tl.program_id(0) * N + cols, mask=cols < N, other=0.0)
    tl.store(y_ptr + tl.program_id(0) * N + cols, x * 2.0, mask=cols < N)


@tilec.jit
def dot_loop(a_ptr, b_ptr, c_ptr, K, BLOCK: tl.constexpr):
    """A loop of loads feeding a dot (matrix units: left to their pipelines)."""
    r = tl.arange(0, BLOCK)
    acc = tl.zeros([BLOCK, BLOCK], dtype=tl.float32)
    for k in range(0, K, BLOCK):
        a = tl.load(a_ptr + r[:, None] * K + k + r[None, :])
        b = tl.load(b_ptr + (k + r[:, None]) * BLOCK + r[None, :])
        acc += tl.dot(a, b)
    tl.store(c_ptr + r[:, None] * BLOCK + r[None, :], acc)


SUM_SIGNATURE = dict(part_ptr="*fp32", out_ptr="*fp32", rows="i32", N="i32")
SUM_CONSTANTS = dict(BLOCK_ROWS=32, BLOCK_COLS=128)


def compiled_sum(target="sm_90a", **options):
    return tilec.compile(column_sum, SUM_SIGNATURE, SUM_CONSTANTS, backend="nvidia",
                         target=target, num_warps=4, divisibility=["part_ptr", "out_ptr", "N"],
                         **options)  # fmt: skip


def test_the_budget_is_the_register_file_over_the_block_at_most_255():
    assert [one_wave.budget(t) for t in (32, 128, 256, 512, 1024)] == [255, 255, 255, 128, 64]


def test_it_applies_to_a_loop_that_reads_global_memory_only():
    assert one_wave.applies(compiled_sum().asm["ptx"]) == 128
    row = tilec.compile(row_scale, dict(x_ptr="*fp32", y_ptr="*fp32", N="i32"),
                        dict(BLOCK=1024), backend="nvidia", target="sm_90a", num_warps=4)  # fmt: skip
    assert one_wave.applies(row.asm["ptx"]) is None  # no loop
    capped = compiled_sum(maxnreg=64).asm["ptx"]
    assert ".maxnreg 64" in capped and one_wave.applies(capped) is None  # the user's registers
    for target in ("sm_80", "sm_90a"):
        dot = tilec.compile(dot_loop, dict(a_ptr="*fp16", b_ptr="*fp16", c_ptr="*fp32", K="i32"),
                            dict(BLOCK=64), backend="nvidia", target=target, num_warps=4)  # fmt: skip
        assert one_wave.applies(dot.asm["ptx"]) is None, target  # mma / wgmma, cp.async
    plain = compiled_sum().asm["ptx"]
    for marker in ("setmaxnreg.inc.sync.aligned.u32 240;", "cp.async.wait_all;"):
        assert one_wave.applies(plain.replace("ret;", f"{marker}\n\tret;")) is None, marker


def test_the_budget_follows_the_block_size():
    ptx = compiled_sum().asm["ptx"]
    budgeted = one_wave.with_budget(ptx, 255)
    assert ".reqntid 128\n.maxnreg 255\n" in budgeted
    assert budgeted.replace("\n.maxnreg 255", "", 1) == ptx


@pytest.mark.skipif(find_ptxas() is None, reason="no ptxas here")
def test_the_column_sum_gets_a_second_cubin_with_more_registers():
    compiled = compiled_sum()
    assert compiled.asm["cubin_one_wave"] != compiled.asm["cubin"]
    plain: dict[str, PtxasInfo] = {}
    ptx_to_cubin(compiled.asm["ptx"], "sm_90a", info=plain)
    wide: dict[str, PtxasInfo] = {}
    ptx_to_cubin(one_wave.with_budget(compiled.asm["ptx"], 255), "sm_90a", info=wide)
    (name,) = plain
    assert wide[name].registers > plain[name].registers  # 93 against 56 with ptxas 13.0
    assert codegen.spilled(wide) == codegen.spilled(plain) == 0


@pytest.mark.skipif(find_ptxas() is None, reason="no ptxas here")
def test_no_second_cubin_without_more_registers_or_with_more_spills():
    ptx = compiled_sum().asm["ptx"]
    name = "column_sum"
    assert one_wave.one_wave_cubin(ptx, "sm_90a", {name: PtxasInfo(registers=40)}) is not None
    assert one_wave.one_wave_cubin(ptx, "sm_90a", {name: PtxasInfo(registers=255)}) is None
    assert one_wave.one_wave_cubin(ptx, "sm_90a", {}) is None  # the plain one was not assembled
    spills_less = PtxasInfo(registers=40, spill_stores=0, stack_bytes=0)
    assert one_wave.one_wave_cubin(ptx, "sm_90a", {"other": spills_less}) is None


@pytest.mark.skipif(find_ptxas() is None, reason="no ptxas here")
def test_one_wave_off_and_kernels_it_leaves_have_one_cubin(monkeypatch, tmp_path):
    row = tilec.compile(row_scale, dict(x_ptr="*fp32", y_ptr="*fp32", N="i32"),
                        dict(BLOCK=1024), backend="nvidia", target="sm_90a", num_warps=4)  # fmt: skip
    assert "cubin" in row.asm and "cubin_one_wave" not in row.asm
    monkeypatch.setenv("TILEC_CACHE_DIR", str(tmp_path / "off"))
    monkeypatch.setattr(one_wave, "ONE_WAVE", False)
    cache.clear_memory()
    try:
        assert "cubin_one_wave" not in compiled_sum().asm
    finally:
        cache.clear_memory()


class Loaded:
    """The CudaKernel of a compiled column sum on a fake driver."""

    def __init__(self, fake, compiled, threads=128):
        self.driver = cuda.CudaDriver(cu=fake)
        self.kernel = self.driver.load(compiled.asm["cubin"], "column_sum", is_ptx=False,
                                       signature=["*fp32", "*fp32", "i32", "i32"])  # fmt: skip
        self.driver.add_one_wave(self.kernel, compiled.asm["cubin_one_wave"], threads)

    def launched(self, fake, grid):
        self.driver.launch(self.kernel, grid, 4, 32, [0x1000, 0x2000, 264, 4096])
        return fake.launches[-1][0]


@pytest.mark.skipif(find_ptxas() is None, reason="no ptxas here")
def test_the_driver_launches_the_one_wave_function_where_the_grid_fits_it():
    fake = FakeCu(num_regs=56)
    fake.function_registers[0xF01] = 96  # the second module's function
    loaded = Loaded(fake, compiled_sum())
    kernel = loaded.kernel
    assert int(kernel.function) == 0xF00 and int(kernel.one_wave_function) == 0xF01
    # 96 registers x 128 threads: 5 blocks an SM, 132 SMs
    assert kernel.one_wave_programs == 5 * 132
    assert int(loaded.launched(fake, (32,))) == 0xF01
    assert int(loaded.launched(fake, (660, 1, 1))) == 0xF01
    assert int(loaded.launched(fake, (661,))) == 0xF00
    assert int(loaded.launched(fake, (2, 331))) == 0xF00
    assert kernel.function_for(1) is kernel.one_wave_function
    plain = Loaded(fake, compiled_sum())
    plain.kernel.one_wave_function = None
    assert plain.kernel.function_for(1) is plain.kernel.function


@pytest.mark.skipif(find_ptxas() is None, reason="no ptxas here")
def test_launches_of_the_jit_pick_the_function_by_grid(fake_gpu):
    import ctypes

    fake_gpu.function_registers[0xF01] = 96
    part = (ctypes.c_float * (64 * 256))()
    out = (ctypes.c_float * 256)()

    class DeviceArray:  # device arrays as CuPy presents them
        def __init__(self, address, n):
            self.__cuda_array_interface__ = {
                "shape": (n,), "typestr": "<f4", "data": (address, False), "version": 3}  # fmt: skip

    a = DeviceArray(ctypes.addressof(part), 64 * 256)
    b = DeviceArray(ctypes.addressof(out), 256)
    for grid in ((2,), (2,), (700,), (700,), (660,)):  # twice each: the general path, then hot
        column_sum[grid](a, b, 64, 256, BLOCK_ROWS=32, BLOCK_COLS=128, backend="nvidia")
    functions = [int(launch[0]) for launch in fake_gpu.launches]
    assert functions == [0xF01, 0xF01, 0xF00, 0xF00, 0xF01]


@pytest.mark.skipif(find_ptxas() is None, reason="no ptxas here")
def test_the_second_assembly_runs_beside_the_first_once_a_text(monkeypatch):
    ptx = compiled_sum().asm["ptx"]
    first = one_wave.start(ptx, "sm_90a")
    assert first is not None and one_wave.start(ptx, "sm_90a") is first
    assert (
        one_wave.start(ptx.replace(".reqntid 128", ".reqntid 128\n.maxnreg 64"), "sm_90a") is None
    )
    plain = {"column_sum": PtxasInfo(registers=40)}
    assert one_wave.one_wave_cubin(ptx, "sm_90a", plain) == first.result()[0]
    assert one_wave.start(ptx, "sm_90a") is not first  # taken: a later compile assembles anew

    def rejected(text, arch):
        raise codegen.CodegenError("ptxas rejected it")

    monkeypatch.setattr(one_wave, "_assemble", rejected)
    other = ptx.replace("ret;", "ret;\n", 1)
    assert one_wave.one_wave_cubin(other, "sm_90a", plain) is None  # the plain cubin stands


def forked(work, before_fork=contextlib.nullcontext) -> bool:
    """`work()` (a bool) in a forked child started inside `before_fork()`; fails where the
    child has not ended in 30 s (it waits for ever) or did not return True."""
    context = multiprocessing.get_context("fork")
    queue = context.Queue()
    with before_fork():
        process = context.Process(target=lambda: queue.put(work()))
        process.start()
    process.join(30)
    alive = process.is_alive()
    if alive:
        process.kill()
    return not alive and process.exitcode == 0 and queue.get(timeout=5) is True


@pytest.mark.skipif(find_ptxas() is None, reason="no ptxas here")
def test_a_forked_child_assembles_with_threads_of_its_own():
    """The autotuner forks its compile workers: an assembly the parent was running when it
    forked has no thread in the child, which must assemble the text anew, not wait for it."""
    ptx = compiled_sum().asm["ptx"]
    key = codegen.assembly_key(ptx, "sm_90a")
    with one_wave._PENDING_LOCK:
        one_wave._PENDING[key] = Future()  # running in the parent at the fork: never done there
    plain = {"column_sum": PtxasInfo(registers=40)}
    try:
        assert forked(lambda: one_wave.one_wave_cubin(ptx, "sm_90a", plain) is not None)
    finally:
        with one_wave._PENDING_LOCK:
            one_wave._PENDING.pop(key, None)


@pytest.mark.skipif(find_ptxas() is None, reason="no ptxas here")
def test_a_child_forked_while_the_cubin_memo_is_locked_assembles():
    """A one-wave assembly's thread may hold `codegen`'s cubin-memo lock when the autotuner
    forks: the child gets a lock of its own."""
    ptx = compiled_sum().asm["ptx"]
    # held across the fork, as by another thread
    assert forked(lambda: ptx_to_cubin(ptx, "sm_90a") is not None, lambda: codegen._ASSEMBLED_LOCK)
