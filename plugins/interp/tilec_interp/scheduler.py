"""Runs a launch whose programs wait on each other one program at a time, switching fairly.

Programs of a kernel with a waiting loop (`tilec_interp.waiting`) cannot run in lockstep: a
program spinning on a lock would wait for one that is stuck in the same loop op. Here each
program runs on a thread of its own, but only one runs at any time (the others are parked on a
semaphore), so memory and atomics see one program at a time, as on Triton's interpreter; the
threads only keep a paused program's Python stack. Programs start in grid order and run until
they finish or go round a waiting loop without leaving it: then they pause, and the next program
starts (it may be the one they wait for), or, when every program has started (or `MAX_PAUSED` are
paused), the paused ones resume in turn, oldest first. A program that finishes hands over to the
oldest paused one.

Progress is a program starting, finishing or leaving a waiting loop. When programs pause and
none made progress for `timeout` seconds, the launch stops with an error that names the loops
they wait in (file:line) and their program ids.
"""

from __future__ import annotations

import threading
import time
from collections import deque
from collections.abc import Callable

import numpy as np

from tilec.ir.core import Operation
from tilec_interp.context import location_text
from tilec_interp.memory import InterpreterError

__all__ = ["MAX_PAUSED", "Scheduler"]

MAX_PAUSED = 1024  # paused programs (threads) at once; a wait on more programs cannot end


class _Cancelled(BaseException):
    """Unwinds a paused program's thread when the launch stops early."""


class _Program:
    """One program of the grid and the thread that runs it."""

    def __init__(self, scheduler: Scheduler, index: int):
        self.scheduler = scheduler
        self.index = index
        self.turn = threading.Semaphore(0)
        self.state = "running"  # then "paused", "done" or "failed"
        self.loop: Operation | None = None
        self.error: BaseException | None = None
        self.cancelled = False
        self.thread = threading.Thread(
            target=self._main, name=f"tilec-interp-program-{index}", daemon=True
        )

    def _main(self) -> None:
        self.turn.acquire()
        try:
            if not self.cancelled:
                with np.errstate(all="ignore"):  # NumPy's error state is per thread
                    self.scheduler.run_program(self.index)
                self.state = "done"
        except _Cancelled:
            self.state = "done"
        except BaseException as error:  # handed to the launching thread, which raises it
            self.state, self.error = "failed", error
        finally:
            self.scheduler.main_turn.release()


class Scheduler:
    """Runs `run_program(index)` for each index of `range(total)`, one program at a time."""

    def __init__(
        self,
        total: int,
        run_program: Callable[[int], None],
        describe: Callable[[int], tuple[int, ...]],
        timeout: float,
    ):
        self.total = total
        self.run_program = run_program
        self.describe = describe
        self.timeout = timeout
        self.main_turn = threading.Semaphore(0)
        self.current: _Program | None = None
        self.last_progress = time.monotonic()

    # Called from the running program's thread ----------------------------------------------

    def pause(self, loop: Operation) -> None:
        """The running program goes round `loop` once more: let another program run."""
        program = self.current
        assert program is not None
        program.state, program.loop = "paused", loop
        self.main_turn.release()
        program.turn.acquire()
        if program.cancelled:
            raise _Cancelled
        program.state = "running"

    def progress(self) -> None:
        """The running program left a waiting loop."""
        self.last_progress = time.monotonic()

    # Called from the launching thread ------------------------------------------------------

    def run(self) -> None:
        paused: deque[_Program] = deque()
        started = 0
        resume = False
        try:
            while started < self.total or paused:
                if paused and (resume or started == self.total or len(paused) >= MAX_PAUSED):
                    program = paused.popleft()
                else:
                    program = _Program(self, started)
                    started += 1
                    program.thread.start()
                    self.last_progress = time.monotonic()
                self._switch_to(program)
                if program.state == "failed":
                    assert program.error is not None
                    raise program.error
                resume = program.state == "done"
                if program.state == "done":
                    self.last_progress = time.monotonic()
                    program.thread.join()
                    continue
                paused.append(program)
                if time.monotonic() - self.last_progress > self.timeout:
                    raise InterpreterError(self._hang_message(paused))
        finally:
            running = self.current is not None and self.current.state == "running"
            for program in () if running else paused:  # running: interrupted (Ctrl-C) mid-turn
                program.cancelled = True
                self._switch_to(program)
                program.thread.join()

    def _switch_to(self, program: _Program) -> None:
        self.current = program
        program.turn.release()
        self.main_turn.acquire()

    def _hang_message(self, paused: deque[_Program]) -> str:
        by_loop: dict[Operation, list[tuple[int, ...]]] = {}
        for program in reversed(paused):  # the loop the last paused program is in first
            assert program.loop is not None
            by_loop.setdefault(program.loop, []).append(self.describe(program.index))
        waiting = []
        for loop, pids in by_loop.items():
            shown = ", ".join(str(p) for p in sorted(pids)[:8])
            more = f" and {len(pids) - 8} more" if len(pids) > 8 else ""
            waiting.append(f"program(s) {shown}{more} at {location_text(loop)}")
        return (
            f"{location_text(next(iter(by_loop)))}: this while loop never ends: the programs "
            f"waiting in it made no progress for {self.timeout:g} s (no program started, "
            f"finished or left a waiting loop); waiting: {'; '.join(waiting)}. The interpreter "
            f"runs one program at a time and pauses at most {MAX_PAUSED}: a program that waits "
            f"for one that never runs, or for a lock never released, waits forever. If the loop "
            f"is only slow, raise TILEC_INTERP_HANG_TIMEOUT (seconds)"
        )
