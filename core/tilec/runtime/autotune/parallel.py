"""Compiling configs in worker processes before any is timed, and the progress bar.

Workers are forked (they inherit the kernel and its arguments; nothing is pickled but an index),
at most one per core this process may use. Each compiles one config through the compile cache,
which writes the result to disk; the parent's own compile is then a disk-cache hit. A worker's
failure is never trusted as a result: the parent compiles that config itself and reports its
own error. Where fork is missing, or there is one config or one core, nothing runs in parallel.
"""

from __future__ import annotations

import contextlib
import hashlib
import multiprocessing
import os
import sys
from collections.abc import Callable, Iterator
from typing import Any

from tilec import settings

_jobs: list[Callable[[], Any]] = []


def cores() -> int:
    """The cores this process may run on."""
    with contextlib.suppress(AttributeError, OSError):
        return len(os.sched_getaffinity(0))
    return os.cpu_count() or 1


def digest(compiled: Any) -> str:
    """A digest of a compiled kernel's stages (text and binaries)."""
    hasher = hashlib.sha256()
    for name in sorted(compiled.asm):
        value = compiled.asm[name]
        hasher.update(name.encode() + b"\0")
        hasher.update(value if isinstance(value, bytes) else value.encode())
    return hasher.hexdigest()


def _work(index: int) -> tuple[str, str]:
    try:
        return "ok", digest(_jobs[index]())
    except Exception as error:
        return "error", f"{type(error).__name__}: {error}"


def device_facts(backend: Any) -> Callable[[], None]:
    """A worker set-up that gives `backend`, in the worker, the parent's answers to "is there a
    device" and "which target is it": a forked child cannot use the parent's GPU context (CUDA
    answers CUDA_ERROR_NOT_INITIALIZED there), but compiling for the parent's device needs them."""
    availability = backend.is_available()
    target = None
    if availability and hasattr(backend, "device_target"):
        with contextlib.suppress(Exception):  # no target: the worker's compile reports why
            target = backend.device_target()

    def setup() -> None:
        backend.is_available = lambda: availability
        if target is not None:
            backend.device_target = lambda: target

    return setup


def compile_parallel(
    jobs: list[Callable[[], Any]],
    workers: int | None = None,
    progress: Any = None,
    setup: Callable[[], None] | None = None,
) -> list[tuple[str, str]] | None:
    """Run each job (a compile returning a `CompiledKernel`) in a worker (after `setup()` there):
    ("ok", digest of its stages) or ("error", reason) per job; None where nothing ran in
    parallel."""
    workers = min(len(jobs), workers or cores())
    if workers < 2 or "fork" not in multiprocessing.get_all_start_methods():
        return None
    global _jobs
    _jobs = jobs
    results: list[tuple[str, str]] = []
    try:
        context = multiprocessing.get_context("fork")
        with context.Pool(workers, initializer=setup) as pool:
            for result in pool.imap(_work, range(len(jobs))):
                results.append(result)
                if progress is not None:
                    progress.update(1)
    finally:
        _jobs = []
    return results


def wanted() -> bool:
    """A progress bar is shown on a terminal, when TILEC_PRINT_AUTOTUNING is set."""
    return settings.PRINT_AUTOTUNING.enabled() and sys.stderr.isatty()


class _Bar:
    """A minimal progress bar on stderr, for when tqdm is not installed."""

    def __init__(self, total: int, desc: str):
        self.total, self.desc, self.done = total, desc, 0
        self._draw()

    def _draw(self) -> None:
        filled = int(20 * self.done / max(self.total, 1))
        bar = "#" * filled + "." * (20 - filled)
        sys.stderr.write(f"\r{self.desc}: [{bar}] {self.done}/{self.total}")
        sys.stderr.flush()

    def update(self, count: int = 1) -> None:
        self.done += count
        self._draw()

    def close(self) -> None:
        sys.stderr.write("\n")
        sys.stderr.flush()


@contextlib.contextmanager
def progress(total: int, desc: str) -> Iterator[Any]:
    """A progress bar (tqdm if installed, else a minimal one) when `wanted()`, else None."""
    if not wanted():
        yield None
        return
    try:
        import tqdm  # deferred: an optional extra, only for a progress bar on a terminal

        bar: Any = tqdm.tqdm(total=total, desc=desc, file=sys.stderr, leave=False)
    except ImportError:
        bar = _Bar(total, desc)
    try:
        yield bar
    finally:
        bar.close()
