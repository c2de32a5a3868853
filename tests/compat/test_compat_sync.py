"""Programs that wait on each other run on the interpreter (issue 11): spin locks, flags and grid
barriers run program by program instead of deadlocking in lockstep, and a loop that never ends
stops with an error naming it (file:line) after TILEC_INTERP_HANG_TIMEOUT seconds."""

import threading
import time
from pathlib import Path

import compat_sync_kernels as kernels
import numpy as np
import pytest
from compat_helpers import run_interp

import tilec
from tilec_interp.interpreter import InterpreterError
from tilec_interp.waiting import waiting_loops

KERNELS_FILE = kernels.__file__.rsplit("/", 1)[-1]


def _line_of(kernel, text: str) -> int:
    """The file line of the first line of `kernel`'s source that contains `text`."""
    source = kernel.fn.__code__
    lines = Path(source.co_filename).read_text().splitlines()
    start = source.co_firstlineno
    return next(i + 1 for i in range(start - 1, len(lines)) if text in lines[i])


def _tir(kernel, signature, **constexprs):
    return tilec.compile(kernel, signature=signature, constexprs=constexprs, backend="interp")


@pytest.mark.parametrize(("M", "N", "group"), [(37, 50, 4), (64, 128, 8), (5, 16, 16)])
def test_tutorial_layer_norm_backward_matches_numpy(rng, M, N, group):
    x = rng.standard_normal((M, N)).astype(np.float32)
    w = rng.standard_normal(N).astype(np.float32)
    dy = rng.standard_normal((M, N)).astype(np.float32)
    mean = x.mean(axis=1).astype(np.float32)
    rstd = (1 / np.sqrt(x.var(axis=1) + 1e-5)).astype(np.float32)
    dx = np.zeros_like(x)
    partial_dw = np.zeros((group, N), np.float32)
    partial_db = np.zeros((group, N), np.float32)
    locks = np.zeros(2 * group, np.int32)
    block_n = 1 << (N - 1).bit_length()
    kernels.layer_norm_bwd_dx_fused[(M,)](
        dx, dy, partial_dw, partial_db, x, w, mean, rstd, locks, N, N,
        GROUP_SIZE_M=group, BLOCK_SIZE_N=block_n, backend="interp",
    )  # fmt: skip
    dw, db = np.zeros(N, np.float32), np.zeros(N, np.float32)
    kernels.layer_norm_bwd_dwdb[(N + 31) // 32,](
        partial_dw, partial_db, dw, db, group, N,
        BLOCK_SIZE_M=16, BLOCK_SIZE_N=32, backend="interp",
    )  # fmt: skip

    xhat = (x - mean[:, None]) * rstd[:, None]
    wdy = w * dy
    c1 = (xhat * wdy).sum(axis=1, keepdims=True) / N
    c2 = wdy.sum(axis=1, keepdims=True) / N
    np.testing.assert_allclose(dx, (wdy - (xhat * c1 + c2)) * rstd[:, None], rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(dw, (dy * xhat).sum(axis=0), rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(db, dy.sum(axis=0), rtol=1e-4, atol=1e-4)
    np.testing.assert_array_equal(locks[:group], 0)  # every lock released
    np.testing.assert_array_equal(locks[group:], 1 if group <= M else (np.arange(group) < M))


@pytest.mark.parametrize("programs", [1, 7, 300])
def test_spin_lock_counter_counts_every_program_once(programs):
    lock, count = np.zeros(1, np.int32), np.zeros(1, np.int32)
    order = np.full(programs, -1, np.int32)
    kernels.locked_counter[(programs,)](lock, count, order, backend="interp")
    assert count[0] == programs and lock[0] == 0
    np.testing.assert_array_equal(np.sort(order), np.arange(programs))


def test_a_spin_lock_inside_a_loop_counts_every_round():
    lock, count = np.zeros(1, np.int32), np.zeros(1, np.int32)
    kernels.locked_rounds[(9,)](lock, count, ROUNDS=3, backend="interp")
    assert count[0] == 27 and lock[0] == 0


def test_a_program_may_wait_for_a_later_one():
    flag, out = np.zeros(1, np.int32), np.zeros(2, np.int32)
    kernels.wait_for_last[(5,)](flag, out, backend="interp")
    assert out[0] == 42 and out[1] > 0


@pytest.mark.parametrize("programs", [1, 3, 64])
def test_grid_barrier_releases_every_program(programs):
    count, seen = np.zeros(1, np.int32), np.zeros(programs, np.int32)
    kernels.grid_barrier[(programs,)](count, seen, backend="interp")
    np.testing.assert_array_equal(seen, programs)


def test_an_error_in_one_program_stops_the_programs_that_wait():
    before = threading.active_count()
    count, seen = np.zeros(1, np.int32), np.zeros(3, np.int32)  # too small for 4 programs
    with pytest.raises(InterpreterError, match=r"out-of-bounds tile.store in program \(3,\)"):
        kernels.grid_barrier[(4,)](count, seen, backend="interp")
    assert threading.active_count() == before  # the paused programs' threads ended
    np.testing.assert_array_equal(seen, 0)  # programs 0 to 2 still waited when 3 failed


def test_a_lock_never_released_is_a_located_error_not_a_hang(monkeypatch):
    monkeypatch.setenv("TILEC_INTERP_HANG_TIMEOUT", "0.3")
    lock, out = np.ones(1, np.int32), np.zeros(4, np.int32)
    start = time.monotonic()
    with pytest.raises(InterpreterError) as info:
        kernels.lock_never_released[(4,)](lock, out, backend="interp")
    assert time.monotonic() - start < 20
    line = _line_of(kernels.lock_never_released, "while")
    message = str(info.value)
    assert f"{KERNELS_FILE}:{line}:" in message, message
    assert "this while loop never ends" in message
    assert "program(s) (0,), (1,), (2,), (3,)" in message
    assert "TILEC_INTERP_HANG_TIMEOUT" in message
    np.testing.assert_array_equal(out, 0)


def test_a_loop_that_never_ends_is_a_located_error_not_a_hang(monkeypatch):
    monkeypatch.setenv("TILEC_INTERP_HANG_TIMEOUT", "0.3")
    x, out = np.ones(1, np.int32), np.zeros(1, np.int32)
    with pytest.raises(InterpreterError) as info:
        kernels.loop_never_ends[(3,)](x, out, backend="interp")
    line = _line_of(kernels.loop_never_ends, "while")
    message = str(info.value)
    assert f"{KERNELS_FILE}:{line}:" in message, message
    assert "no program left it for 0.3 s; program(s) (0,), (1,), (2,) still run it" in message


@pytest.mark.parametrize("value", ["0", "-1", "soon", "nan"])
def test_a_bad_hang_timeout_names_the_variable(monkeypatch, value):
    monkeypatch.setenv("TILEC_INTERP_HANG_TIMEOUT", value)
    with pytest.raises(ValueError, match=r"TILEC_INTERP_HANG_TIMEOUT=.* is not a positive number"):
        kernels.loop_never_ends[(1,)](
            np.zeros(1, np.int32), np.zeros(1, np.int32), backend="interp"
        )


def test_loops_whose_exit_reads_no_written_memory_run_in_lockstep():
    n, step = np.array([10], np.int32), np.array([3], np.int32)
    out = np.zeros(4, np.int32)
    signature = {"n_ptr": "*i32", "step_ptr": "*i32", "out_ptr": "*i32"}
    run_interp(kernels.loop_reading_constant_memory, signature, [n, step, out], grid=(4,))
    np.testing.assert_array_equal(out, 12)
    compiled = _tir(kernels.loop_reading_constant_memory, signature)
    assert not waiting_loops(compiled.module)
    compiled = _tir(kernels.loop_never_ends, {"x_ptr": "*i32", "out_ptr": "*i32"})
    assert not waiting_loops(compiled.module)


@pytest.mark.parametrize(
    ("kernel", "signature"),
    [
        (kernels.locked_counter, {"lock_ptr": "*i32", "count_ptr": "*i32", "order_ptr": "*i32"}),
        (kernels.wait_for_last, {"flag_ptr": "*i32", "out_ptr": "*i32"}),
        (kernels.grid_barrier, {"count_ptr": "*i32", "seen_ptr": "*i32"}),
    ],
)
def test_loops_whose_exit_reads_written_memory_are_found(kernel, signature):
    loops = waiting_loops(_tir(kernel, signature).module)
    assert len(loops) == 1
    (loop,) = loops
    assert loop.location.line == _line_of(kernel, "while")


def test_a_cooperative_launch_is_honoured_on_the_interpreter():
    """Triton's launch_cooperative_grid=True promises every program resident at once, which the
    interpreter gives any grid: a grid barrier passes."""
    count, seen = np.zeros(1, np.int32), np.zeros(8, np.int32)
    kernels.grid_barrier[(8,)](count, seen, backend="interp", launch_cooperative_grid=True)
    np.testing.assert_array_equal(seen, 8)
