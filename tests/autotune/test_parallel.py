"""Configs compiled in worker processes: the same binaries as a serial compile; the parent's
compiles are then cache hits; progress bars only on a terminal with TILEC_PRINT_AUTOTUNING."""

from __future__ import annotations

import io
import multiprocessing
import os

import numpy as np
import pytest
from kernels import accumulate, grid, limited

import tilec
from tilec.driver import Availability
from tilec.runtime import cache, compiler
from tilec.runtime.autotune import parallel
from tilec.runtime.autotune.spec import compile_job

needs_fork = pytest.mark.skipif(
    "fork" not in multiprocessing.get_all_start_methods(), reason="needs os.fork"
)


def _jobs(kernel, blocks):
    x, out = np.zeros(100, np.float32), np.zeros(100, np.float32)
    return [compile_job(kernel, (x, out, 100), {"BLOCK": b, "num_warps": 4}) for b in blocks]


@needs_fork
def test_parallel_compile_gives_the_serial_binaries(tmp_path, monkeypatch):
    blocks = (16, 32, 64, 128)
    results = parallel.compile_parallel(_jobs(accumulate, blocks), workers=2)
    assert results is not None and [status for status, _ in results] == ["ok"] * 4
    cache.clear_memory()
    hits = [compiled.key for compiled in (job() for job in _jobs(accumulate, blocks))]
    assert all(cache.read(key) is not None for key in hits), "workers wrote the disk cache"
    monkeypatch.setenv("TILEC_CACHE_DIR", str(tmp_path / "serial"))
    cache.clear_memory()
    serial = [parallel.digest(job()) for job in _jobs(accumulate, blocks)]
    assert [d for _, d in results] == serial


@needs_fork
def test_worker_failures_are_reported_not_trusted():
    results = parallel.compile_parallel(_jobs(limited, (32, 128)), workers=2)
    assert results[0][0] == "ok"
    assert results[1][0] == "error" and "BLOCK too large" in results[1][1]


def test_no_parallelism_for_one_job_or_one_core():
    assert parallel.compile_parallel(_jobs(accumulate, (16,)), workers=4) is None
    assert parallel.compile_parallel(_jobs(accumulate, (16, 32)), workers=1) is None


class _SerialPool:
    """A stand-in for a worker pool that records its size and runs the jobs in this process."""

    sizes: list[int] = []

    def __init__(self, processes, initializer=None):
        self.sizes.append(processes)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False

    def imap(self, fn, items):
        return map(fn, items)


@needs_fork
@pytest.mark.parametrize(("cores", "jobs", "workers"), [(2, 4, 2), (8, 3, 3), (1, 3, None)])
def test_workers_are_bounded_by_the_cores(monkeypatch, cores, jobs, workers):
    monkeypatch.setattr(parallel, "cores", lambda: cores)
    monkeypatch.setattr(_SerialPool, "sizes", [])
    context = type("Context", (), {"Pool": _SerialPool})
    monkeypatch.setattr(parallel.multiprocessing, "get_context", lambda method: context)
    results = parallel.compile_parallel(_jobs(accumulate, (16, 32, 64, 128)[:jobs]))
    assert _SerialPool.sizes == ([] if workers is None else [workers])
    assert (results is None) == (workers is None)


class _Stream(io.StringIO):
    def __init__(self, tty: bool):
        super().__init__()
        self.tty = tty

    def isatty(self) -> bool:
        return self.tty


@pytest.mark.parametrize(
    ("tty", "setting", "bar", "times"),
    [(True, "1", True, True), (False, "1", False, True), (True, None, False, False)],
)
def test_progress_only_on_a_terminal(monkeypatch, tty, setting, bar, times):
    stream = _Stream(tty)
    monkeypatch.setattr("sys.stderr", stream)
    if setting:
        monkeypatch.setenv("TILEC_PRINT_AUTOTUNING", setting)
    configs = [tilec.Config({"BLOCK": b}) for b in (16, 32)]
    kernel = tilec.autotune(configs, key=["n"], warmup=1, rep=2)(accumulate)
    kernel[grid(100)](np.zeros(100, np.float32), np.zeros(100, np.float32), 100)
    text = stream.getvalue()
    assert ("tilec autotune: timing" in text) is bar
    assert ("tilec autotune: compiling" in text) is bar
    assert ("chose BLOCK: " in text) is times
    assert ("BLOCK: 16, num_warps: 4, num_stages: 3: " in text) is times


def test_builtin_bar_without_tqdm(monkeypatch):
    stream = _Stream(True)
    monkeypatch.setattr("sys.stderr", stream)
    monkeypatch.setenv("TILEC_PRINT_AUTOTUNING", "1")
    monkeypatch.setitem(__import__("sys").modules, "tqdm", None)
    with parallel.progress(3, "work") as bar:
        bar.update(1)
        bar.update(2)
    assert "work: [####################] 3/3" in stream.getvalue()


@needs_fork
def test_workers_compile_for_the_parents_gpu(monkeypatch, tmp_path):
    """A forked worker cannot use the parent's GPU context (CUDA answers NOT_INITIALIZED there,
    as the first device run showed): it compiles with the device facts the parent read."""
    nvidia = compiler.get_backend("nvidia", require_available=False)
    parent = os.getpid()

    def is_available():
        if os.getpid() == parent:
            return Availability(True)
        return Availability(False, "cuInit: CUDA_ERROR_NOT_INITIALIZED")

    def device_target():
        if os.getpid() != parent:
            raise RuntimeError("cuInit: CUDA_ERROR_NOT_INITIALIZED")
        return "sm_90", "sm_90"

    monkeypatch.setattr(nvidia, "is_available", is_available)
    monkeypatch.setattr(nvidia, "device_target", device_target)
    monkeypatch.setitem(compiler._availability, "nvidia", Availability(True))
    x, out = np.zeros(100, np.float32), np.zeros(100, np.float32)
    jobs = [
        compile_job(accumulate, (x, out, 100), {"BLOCK": b, "backend": "nvidia"}) for b in (32, 64)
    ]
    broken = parallel.compile_parallel(jobs, workers=2)
    assert all(status == "error" and "needs a target" in why for status, why in broken)
    results = parallel.compile_parallel(jobs, workers=2, setup=parallel.device_facts(nvidia))
    assert [status for status, _ in results] == ["ok", "ok"], results
    monkeypatch.setenv("TILEC_CACHE_DIR", str(tmp_path / "serial"))
    cache.clear_memory()
    assert [d for _, d in results] == [parallel.digest(job()) for job in jobs]


def test_compile_job_hits_the_launchs_cache_entry():
    """spec.compile_job mirrors the launcher's binding: the same cache key as a real launch
    (this fails if the two drift apart)."""
    x, out = np.zeros(100, np.float32), np.zeros(100, np.float32)
    accumulate[grid(100)](x, out, 100, BLOCK=32, num_warps=2)
    launched = set(cache.memory)
    compiled = compile_job(accumulate, (x, out, 100), {"BLOCK": 32, "num_warps": 2})()
    assert compiled.key in launched and cache.memory[compiled.key] is compiled


def test_serial_compiles_advance_the_bar(monkeypatch):
    stream = _Stream(True)
    monkeypatch.setattr("sys.stderr", stream)
    monkeypatch.setenv("TILEC_PRINT_AUTOTUNING", "1")
    monkeypatch.setitem(__import__("sys").modules, "tqdm", None)
    monkeypatch.setattr(parallel, "cores", lambda: 1)
    configs = [tilec.Config({"BLOCK": b}) for b in (16, 32)]
    kernel = tilec.autotune(configs, key=["n"], warmup=1, rep=2)(accumulate)
    kernel[grid(100)](np.zeros(100, np.float32), np.zeros(100, np.float32), 100)
    assert kernel.compiled_in_parallel is None
    assert "tilec autotune: compiling: [####################] 2/2" in stream.getvalue()
