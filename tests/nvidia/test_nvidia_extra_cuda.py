"""`tl.extra.cuda`'s special registers on NVIDIA, read as Triton reads them (`mov.u64 %globaltimer`,
`mov.u32 %smid`, `griddepcontrol` on sm_90 and later), assembled by ptxas; on the GPU the timer
advances, the SM index is below the device's SM count, and `num_threads()` is num_warps * 32."""

from __future__ import annotations

import re

import numpy as np
import pytest

import tilec
import tilec.language as tl
from tilec.frontend import CompilationError
from tilec_nvidia.codegen import find_ptxas


@tilec.jit
def registers_kernel(times_ptr, sm_ptr, threads_ptr, WAIT: tl.constexpr):
    if WAIT:
        tl.extra.cuda.gdc_wait()
    start = tl.extra.cuda.globaltimer()
    pid = tl.program_id(0)
    tl.store(sm_ptr + pid, tl.extra.cuda.smid())
    offsets = tl.arange(0, tl.extra.cuda.num_threads())
    tl.store(threads_ptr + offsets, tl.extra.cuda.num_warps(), mask=pid == 0)
    end = tl.extra.cuda.globaltimer()
    tl.store(times_ptr + 2 * pid, start)
    tl.store(times_ptr + 2 * pid + 1, end)
    if WAIT:
        tl.extra.cuda.gdc_launch_dependents()


SIGNATURE = {"times_ptr": "*i64", "sm_ptr": "*i32", "threads_ptr": "*i32"}


def _compiled(target: str, wait: bool, warps: int = 4):
    return tilec.compile(registers_kernel, SIGNATURE, {"WAIT": wait}, backend="nvidia",
                         target=target, num_warps=warps)  # fmt: skip


@pytest.mark.parametrize("target", ["sm_80", "sm_90a"])
def test_the_ptx_reads_the_special_registers(target):
    ptx = _compiled(target, wait=False).asm["ptx"]
    assert len(re.findall(r"mov\.u64 %rd\d+, %globaltimer;", ptx)) == 2
    assert re.search(r"mov\.u32 %r\d+, %smid;", ptx)
    if find_ptxas() is not None:
        assert _compiled(target, wait=False).asm.get("cubin")


def test_grid_dependency_control_on_sm_90():
    compiled = _compiled("sm_90a", wait=True)
    ptx = compiled.asm["ptx"]
    assert "griddepcontrol.wait;" in ptx and "griddepcontrol.launch_dependents;" in ptx
    if find_ptxas() is not None:
        assert compiled.asm.get("cubin")


def test_grid_dependency_control_needs_sm_90():
    with pytest.raises(CompilationError, match=r"gdc_wait\(\) needs compute capability 9\.0"):
        _compiled("sm_80", wait=True)


@tilec.jit
def memrealtime_kernel(out_ptr):
    tl.store(out_ptr, tl.extra.hip.memrealtime())


def test_hip_registers_are_refused_on_nvidia():
    with pytest.raises(CompilationError, match=r"memrealtime\(\) reads an AMD GPU register"):
        tilec.compile(memrealtime_kernel, {"out_ptr": "*i64"}, {}, backend="nvidia",
                      target="sm_90")  # fmt: skip


@pytest.mark.gpu
@pytest.mark.parametrize("warps", [2, 4])
def test_registers_on_the_gpu(warps):
    from tilec.plugin.manager import load_backends
    from tilec_nvidia import driver as cuda

    availability = load_backends()["nvidia"].is_available()
    if not availability:
        pytest.skip(f"needs an NVIDIA GPU ({availability.reason})")
    programs = 64
    times = np.zeros(2 * programs, np.int64)
    sms = np.full(programs, -1, np.int32)
    threads = np.zeros(warps * 32 + 1, np.int32)
    wait = cuda.get_driver().properties.compute_capability >= (9, 0)  # no-ops without PDL
    registers_kernel[(programs,)](times, sms, threads, WAIT=wait, num_warps=warps,
                                  backend="nvidia")  # fmt: skip
    assert (times[1::2] >= times[0::2]).all() and (times > 0).all()
    sm_count = cuda.get_driver().properties.sm_count
    assert ((sms >= 0) & (sms < sm_count)).all()
    assert (threads[:-1] == warps).all() and threads[-1] == 0
