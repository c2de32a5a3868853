"""Fuzzing campaigns: random programs from consecutive seeds, checked in a child process
(`Worker`), each finding shrunk and written out as a kernel file that reproduces it.

`run_campaign` is what `tilec fuzz` and the CI slice (tests/fuzz) call.
"""

from __future__ import annotations

import base64
import json
import os
import pickle
import select
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import TextIO

import attrs

from tilec.fuzz.check import Finding
from tilec.fuzz.generate import generate
from tilec.fuzz.program import Program
from tilec.fuzz.shrink import shrink


class Worker:
    """A `python -m tilec.fuzz.worker MODE` child: `check(program)` answers its finding, and a
    child that dies (an LLVM abort, a segfault) or stalls past `timeout` seconds is itself the
    finding (`crash`, `timeout`); the next check starts a new child."""

    def __init__(self, mode: str, timeout: float = 300.0):
        self.mode = mode
        self.timeout = timeout
        self.process: subprocess.Popen | None = None
        self.stderr: TextIO | None = None
        self.command = [sys.executable, "-m", "tilec.fuzz.worker", mode]
        """The child's command line (tests replace it by one that aborts or hangs)."""
        self.cache = tempfile.TemporaryDirectory(prefix="tilec-fuzz-cache-")
        """Every random kernel is new: a cache of their own keeps them out of the user's."""

    def _start(self) -> subprocess.Popen:
        self.stderr = tempfile.TemporaryFile("w+")  # noqa: SIM115  (kept while the child runs)
        env = dict(os.environ, PYTHONFAULTHANDLER="1", TILEC_CACHE_DIR=self.cache.name)
        self.process = subprocess.Popen(
            self.command,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self.stderr,
            text=True,
            env=env,
        )
        return self.process

    def _stderr_tail(self) -> str:
        if self.stderr is None:
            return ""
        self.stderr.seek(0)
        return self.stderr.read()[-2000:]

    def check(self, program: Program) -> Finding | None:
        process = self.process if self.process and self.process.poll() is None else self._start()
        assert process.stdin is not None and process.stdout is not None
        request = base64.b64encode(pickle.dumps(program)).decode()
        try:
            process.stdin.write(request + "\n")
            process.stdin.flush()
        except BrokenPipeError:
            pass
        ready, _, _ = select.select([process.stdout], [], [], self.timeout)
        line = process.stdout.readline() if ready else None
        if line:
            if self.stderr is not None:  # keep only this kernel's messages
                self.stderr.seek(0)
                self.stderr.truncate()
            answer = json.loads(line)["finding"]
            return None if answer is None else Finding(**answer)
        if line is None:
            process.kill()
            process.wait()
            self.process = None
            return Finding("timeout", "timeout", f"no answer within {self.timeout:.0f} s")
        code = process.wait()
        self.process = None
        tail = self._stderr_tail()
        return Finding("crash", f"exit {code}", f"the child process ended with {code}:\n{tail}")

    def close(self) -> None:
        if self.process is not None and self.process.poll() is None:
            assert self.process.stdin is not None
            self.process.stdin.close()
            self.process.wait()
        self.process = None
        if self.stderr is not None:
            self.stderr.close()
        self.cache.cleanup()


@attrs.define
class Result:
    """One finding of a campaign: the seed, the finding, and the shrunk program."""

    seed: int
    finding: Finding
    program: Program


@attrs.define
class Summary:
    mode: str
    kernels: int = 0
    seconds: float = 0.0
    results: list[Result] = attrs.field(factory=list)

    def line(self) -> str:
        keys = sorted({r.finding.key for r in self.results})
        return (
            f"{self.mode}: {self.kernels} kernels in {self.seconds:.1f} s, "
            f"{len(self.results)} findings" + (f" ({'; '.join(keys)})" if keys else "")
        )


def reproducer(result: Result, mode: str) -> str:
    """A kernel file that shows a finding: what went wrong as a comment, then the kernel."""
    program = result.program
    comment = [
        f"# tilec fuzz --mode {mode} --seed {result.seed} --count 1 (shrunk)",
        f"# grid=({program.grid},) n={program.n} m={program.m} {program.constexprs()} "
        f"num_warps={program.num_warps}",
        f"# signature={program.signature()}",
        *("# " + line for line in result.finding.message.splitlines()[:12]),
    ]
    return "\n".join(comment) + "\n" + program.source()


def run_campaign(
    mode: str,
    seed: int,
    count: int | None = None,
    seconds: float | None = None,
    *,
    jobs: int = 1,
    shrink_findings: bool = True,
    shrink_seconds: float = 120.0,
    out_dir: Path | None = None,
    log: Callable[[str], None] = lambda _: None,
    timeout: float = 300.0,
) -> Summary:
    """Check the programs of seeds `seed`, `seed + 1`, ... in `jobs` child processes until
    `count` of them ran or `seconds` passed (one of them is needed); then shrink the first
    finding of each key (for at most `shrink_seconds` each) and write the reproducers."""
    if count is None and seconds is None:
        raise ValueError("give a count, a time, or both")
    summary = Summary(mode)
    start = time.monotonic()
    lock = threading.Lock()
    next_seed = [seed]
    found: list[Result] = []

    def scan(worker: Worker) -> None:
        try:
            while True:
                with lock:
                    if (count is not None and next_seed[0] - seed >= count) or (
                        seconds is not None and time.monotonic() - start >= seconds
                    ):
                        return
                    current = next_seed[0]
                    next_seed[0] += 1
                program = generate(current, bf16=mode != "interp")
                finding = worker.check(program)
                with lock:
                    summary.kernels += 1
                    if finding is not None:
                        log(f"seed {current}: {finding.kind}: {finding.message.splitlines()[0]}")
                        found.append(Result(current, finding, program))
        finally:
            worker.close()

    threads = [threading.Thread(target=scan, args=(Worker(mode, timeout),)) for _ in range(jobs)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    summary.seconds = time.monotonic() - start
    seen: set[str] = set()
    worker = Worker(mode, timeout)
    try:
        for result in sorted(found, key=lambda r: r.seed):
            if shrink_findings and result.finding.key not in seen:
                finding = result.finding
                result.program, tries = shrink(
                    result.program,
                    lambda p, f=finding: f.same_as(worker.check(p)),
                    seconds=shrink_seconds,
                )
                log(f"seed {result.seed}: shrunk in {tries} tries")
            seen.add(result.finding.key)
            summary.results.append(result)
            if out_dir is not None:
                out_dir.mkdir(parents=True, exist_ok=True)
                path = out_dir / f"{mode}-{result.seed}.py"
                path.write_text(reproducer(result, mode))
                log(f"seed {result.seed}: written to {path}")
    finally:
        worker.close()
    return summary
