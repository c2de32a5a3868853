"""A second cubin for launches that fill at most one wave (issue 23).

Without `.maxnreg`, ptxas keeps a kernel's registers under a budget of its own that leaves room
for several blocks an SM, and in a loop under that budget it issues fewer of the loop's loads
before it uses the first one's data: the layer norm backward's 128-thread column sum (a [32, 128]
float32 accumulator, eight 16-byte loads an iteration) gets 56 registers and issues one load
ahead, where at `.maxnreg 255` it takes 93 and issues all eight back to back (sm_90a SASS). The
registers cost blocks an SM, which only matter where the grid has more blocks than the SMs hold
at once: giving ptxas every register the column sum made the layer norm backward 1.19-1.40x
Triton's speed where it was 0.97-1.03x, and giving them to the layer norm forward, the cross
entropy or the backward's row loop (grids that need several blocks an SM at once) cost 5-26%
(benchmarks/RESULTS.md, tenth session, `benchmarks/register_budget_ab.py`).

So a kernel with a loop that reads global memory (`ld.global`) is also assembled with `.maxnreg`
at the most registers its block may have (`budget`: 65536 / threads, at most 255), and that
cubin is kept (the backend's `cubin_one_wave` stage) where ptxas takes more registers for it
than for the plain one and spills no more. The driver loads both and launches the second where
the grid has no more programs than the device runs at once with it (`CudaKernel.function_for`:
SMs times its blocks an SM), the plain one otherwise: the same code, scheduled for the
occupancy the launch can use. Kernels that set their own registers (`maxnreg`, warp
specialization's `setmaxnreg`), matrix-unit kernels (`mma`, `wgmma`: tuned by their pipelines)
and kernels with copies into shared memory (`cp.async`, TMA) keep the one cubin. `ONE_WAVE`
turns it off.

The second ptxas runs on a thread of its own beside the first (`start`): compiled for sm_90a on a
2-core machine, the sweep's column sum, layer norm backward and cross entropy kernels took
0.09-0.12 s with it and 0.08-0.11 s without (0.15-0.25 s with the two run one after the other).
"""

from __future__ import annotations

import os
import re
import threading
from concurrent.futures import Future

from tilec_nvidia import codegen

ONE_WAVE = True
"""Whether the `cubin_one_wave` stage assembles the second cubin. The compile cache does not key
on it: set it before compiling, with a `TILEC_CACHE_DIR` of its own."""

REGISTER_FILE = 65536
"""32-bit registers of an SM (sm_80, sm_86, sm_89, sm_90): the most a block's threads share."""

MOST_REGISTERS = 255
"""The most registers a thread may have (`.maxnreg`'s limit)."""

_SETS_ITS_OWN = re.compile(r"\.maxnreg\b|\bsetmaxnreg\b|\bw?gmma\b|\bmma\.|\bcp\.async\b|tensormap")
_BLOCK = re.compile(r"^\.reqntid\s+(\d+)(?:\s*,\s*1)*\s*$", re.MULTILINE)


def budget(threads: int) -> int:
    """The most registers a thread of a `threads`-thread block may have with the block alone on
    an SM."""
    return min(MOST_REGISTERS, REGISTER_FILE // threads)


def applies(ptx: str) -> int | None:
    """The block's threads where `ptx` is one kernel this applies to (a loop that reads global
    memory, a `.reqntid` block, nothing that sets registers or copies into shared memory
    asynchronously); else None."""
    if ptx.count(".entry") != 1 or _SETS_ITS_OWN.search(ptx):
        return None
    block = _BLOCK.search(ptx)
    if block is None:
        return None
    lines = ptx.split("\n")
    inside = codegen.in_loops(lines)
    if not any(i and "ld.global" in line for line, i in zip(lines, inside, strict=True)):
        return None
    return int(block.group(1))


def with_budget(ptx: str, registers: int) -> str:
    """`ptx` with `.maxnreg registers` after its `.reqntid`."""
    return _BLOCK.sub(lambda m: f"{m.group(0)}\n.maxnreg {registers}", ptx, count=1)


_PENDING: dict[tuple, Future] = {}
_PENDING_LOCK = threading.Lock()
PENDING_KEPT = 8
"""How many assemblies `start` keeps for `one_wave_cubin` (the oldest go)."""


def _forget_threads() -> None:
    """In a forked child (the autotuner's compile workers): the parent's assembling threads do
    not exist there, so their assemblies would never end, and the lock may have been held."""
    global _PENDING_LOCK
    _PENDING_LOCK = threading.Lock()
    _PENDING.clear()


os.register_at_fork(after_in_child=_forget_threads)


def start(ptx: str, arch: str) -> Future | None:
    """Assemble `ptx` at its `budget` on a thread of its own where it `applies` (None where not,
    or without a ptxas, or with `ONE_WAVE` off), so that the second ptxas runs beside the first:
    the `ptx` stage starts it for the text it assembles to decide its form
    (`codegen.keep_widened_unless_it_spills`), the `cubin` stage for its own text, and the same
    text gets the same assembly. The thread ends with its ptxas (no pool stays behind)."""
    if not ONE_WAVE or codegen.find_ptxas() is None:
        return None
    return _start(ptx, arch, codegen.assembly_key(ptx, arch))


def _start(ptx: str, arch: str, key: tuple) -> Future | None:
    with _PENDING_LOCK:
        future = _PENDING.get(key)
    if future is not None:  # started for this text: `applies` held
        return future
    threads = applies(ptx)
    if threads is None:
        return None
    with _PENDING_LOCK:
        future = _PENDING.get(key)
        if future is not None:  # another thread started it meanwhile
            return future
        future = _PENDING[key] = Future()
        codegen.keep_newest(_PENDING, PENDING_KEPT)
    text = with_budget(ptx, budget(threads))
    threading.Thread(target=_run, args=(future, text, arch), name="tilec-one-wave").start()
    return future


def _run(future: Future, ptx: str, arch: str) -> None:
    future.set_running_or_notify_cancel()
    try:
        future.set_result(_assemble(ptx, arch))
    except BaseException as error:  # given to the waiting compile
        future.set_exception(error)


def _assemble(ptx: str, arch: str) -> tuple[bytes | None, dict[str, codegen.PtxasInfo]]:
    info: dict[str, codegen.PtxasInfo] = {}
    return codegen.ptx_to_cubin(ptx, arch, info=info), info


def one_wave_cubin(ptx: str, arch: str, plain: dict[str, codegen.PtxasInfo]) -> bytes | None:
    """The cubin of `ptx` at `budget` registers (`start`'s) where `applies`, ptxas takes more
    registers for it than `plain` (the plain cubin's `ptx_to_cubin` info) reports and spills no
    more; else None (also where ptxas rejects it, without a ptxas, or with `ONE_WAVE` off)."""
    if not plain or not ONE_WAVE or codegen.find_ptxas() is None:
        return None
    key = codegen.assembly_key(ptx, arch)
    future = _start(ptx, arch, key)
    if future is None:
        return None
    with _PENDING_LOCK:
        _PENDING.pop(key, None)
    try:
        cubin, info = future.result()
    except codegen.CodegenError:  # the plain cubin stands
        return None
    if cubin is None or set(info) != set(plain):
        return None
    wider = all(info[k].registers > plain[k].registers for k in info)
    if not wider or codegen.spilled(info) > codegen.spilled(plain):
        return None
    return cubin
