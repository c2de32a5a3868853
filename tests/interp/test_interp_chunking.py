"""The interpreter runs a grid in chunks of programs whose tensors fit a memory budget (issue 22,
item 6: a cross-entropy-style kernel over 8192 x 32000 grew past 20 GB), with the results of one
chunk for the whole grid, also where programs talk through atomics, barriers and waiting loops."""

from __future__ import annotations

import inspect
import tracemalloc

import numpy as np
import pytest

import tilec
import tilec.language as tl
import tilec_interp.chunking as chunking
import tilec_interp.interpreter as interp
from tilec_interp.memory import InterpreterError


@tilec.jit
def row_loss(logits, targets, losses, n_cols, BLOCK: tl.constexpr):
    """A cross-entropy forward: one program per row, the row's tensors all alive to its end."""
    row = tl.program_id(0).to(tl.int64)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    x = tl.load(logits + row * n_cols + cols, mask=mask, other=-float("inf"))
    m = tl.max(x, axis=0)
    e = tl.exp(x - m)
    s = tl.sum(e, axis=0)
    target = tl.load(targets + row)
    picked = tl.sum(tl.where(cols == target, x, 0.0), axis=0)
    tl.store(losses + row, tl.log(s) + m - picked)


@tilec.jit
def ticket_order(counter, tickets, maxima, values, BLOCK: tl.constexpr):
    """Programs talk through atomics (each takes a ticket: the order programs run in) and a
    barrier; no program waits for another."""
    pid = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    ticket = tl.atomic_add(counter, 1)
    tl.debug_barrier()
    tl.store(tickets + pid, ticket)
    v = tl.load(values + pid * BLOCK + offs)
    tl.atomic_max(maxima + offs, v)


@tilec.jit
def relay(flags, out, BLOCK: tl.constexpr):
    """Program i waits in a while loop until program i + 1 has passed (the last starts), so
    every program must be live at once: a chunk of the grid would wait forever."""
    pid = tl.program_id(0)
    last = tl.num_programs(0) - 1
    offs = tl.arange(0, BLOCK)
    if pid < last:
        while tl.atomic_add(flags + pid + 1, 0) == 0:
            pass
    tl.store(out + pid * BLOCK + offs, offs + pid)
    tl.debug_barrier()
    tl.atomic_xchg(flags + pid, 1)


def unchunked(monkeypatch) -> None:
    """One chunk for the whole grid, as before chunking by memory."""
    monkeypatch.setattr(chunking, "MEMORY_BUDGET", 1 << 62)
    monkeypatch.setattr(interp, "MAX_CHUNK_ELEMENTS", 1 << 62)


def launch_row_loss(logits, targets):
    losses = np.zeros(logits.shape[0], np.float32)
    row_loss[(logits.shape[0],)](
        logits, targets, losses, logits.shape[1], BLOCK=2048, backend="interp"
    )
    return losses


def test_peak_memory_stays_within_the_budget_whatever_the_grid(monkeypatch):
    rows, cols = 512, 2000
    rng = np.random.default_rng(1)
    logits = rng.standard_normal((rows, cols), dtype=np.float32)
    targets = rng.integers(0, cols, rows).astype(np.int32)
    launch_row_loss(logits[:2], targets[:2])  # compiled outside the measurement
    budget = 2 << 20
    monkeypatch.setattr(chunking, "MEMORY_BUDGET", budget)
    tracemalloc.start()
    try:
        losses = launch_row_loss(logits, targets)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    # One chunk for the grid held every row's tensors at once: 512 programs x 2048 elements x
    # about a dozen tensors x 8 bytes, about 90 MiB.
    assert peak < 3 * budget, peak
    unchunked(monkeypatch)
    np.testing.assert_array_equal(losses, launch_row_loss(logits, targets))


def test_a_chunk_runs_as_many_programs_as_fit_the_budget(monkeypatch):
    signature = {"logits": "*fp32", "targets": "*i32", "losses": "*fp32", "n_cols": "i32"}
    module = tilec.compile(row_loss, signature, {"BLOCK": 2048}, backend="interp").module
    program = chunking.ProgramFootprint(module)
    assert program.largest == 2048
    monkeypatch.setattr(chunking, "MEMORY_BUDGET", 10 * program.bytes + 1)
    assert chunking.chunk_size(module, "row_loss", 1000, 1 << 20) == 10
    assert chunking.chunk_size(module, "row_loss", 7, 1 << 20) == 7
    monkeypatch.setattr(chunking, "MEMORY_BUDGET", 1)
    assert chunking.chunk_size(module, "row_loss", 1000, 1 << 20) == 1


@pytest.mark.parametrize("budget", ["one program", "three programs", "unchunked"])
def test_programs_talking_through_atomics_and_barriers_give_one_result(monkeypatch, budget):
    n, block = 37, 64
    values = np.random.default_rng(2).integers(-1000, 1000, (n, block)).astype(np.int32)
    if budget == "unchunked":
        unchunked(monkeypatch)
    else:
        monkeypatch.setattr(
            interp, "MAX_CHUNK_ELEMENTS", block * (1 if budget == "one program" else 3)
        )
    counter = np.zeros(1, np.int32)
    tickets = np.full(n, -1, np.int32)
    maxima = np.full(block, -(2**31), np.int32)
    ticket_order[(n,)](counter, tickets, maxima, values, BLOCK=block, backend="interp")
    # Programs run (and take tickets) in grid order, whatever the chunks.
    np.testing.assert_array_equal(tickets, np.arange(n))
    np.testing.assert_array_equal(maxima, values.max(axis=0))
    assert counter[0] == n


@pytest.mark.parametrize("budget", [1, 1 << 62])
def test_programs_waiting_on_each_other_are_all_live(monkeypatch, budget):
    """A waiting loop runs its programs one at a time, switching between them
    (`tilec_interp.scheduler`): the budget does not split them."""
    n, block = 12, 32
    monkeypatch.setattr(chunking, "MEMORY_BUDGET", budget)
    flags = np.zeros(n, np.int32)
    out = np.zeros((n, block), np.int32)
    relay[(n,)](flags, out, BLOCK=block, backend="interp")
    np.testing.assert_array_equal(out, np.arange(block)[None, :] + np.arange(n)[:, None])
    np.testing.assert_array_equal(flags, np.ones(n))


@pytest.mark.parametrize("kernel", [row_loss, relay])
def test_a_program_larger_than_free_memory_is_a_located_error(monkeypatch, kernel):
    """At the line of one of the program's largest tensors, before any program runs."""
    monkeypatch.setattr(chunking, "available_memory", lambda: 1 << 20)
    if kernel is row_loss:
        args = (np.zeros((4, 8), np.float32), np.zeros(4, np.int32), np.zeros(4, np.float32), 8)
    else:
        args = (np.zeros(4, np.int32), np.zeros((4, 1 << 16), np.int32))
    before = [a.copy() for a in args if isinstance(a, np.ndarray)]
    with pytest.raises(InterpreterError) as info:
        kernel[(4,)](*args, BLOCK=1 << 16, backend="interp")
    lines, first = inspect.getsourcelines(kernel.fn)
    message = str(info.value)
    where = message.split(": ")[0]
    assert where.split(":")[0].endswith("test_interp_chunking.py")
    assert first < int(where.split(":")[1]) < first + len(lines)
    assert "tensor<65536x" in message
    assert "more than the 1 MiB of memory free" in message
    assert "use a smaller BLOCK" in message
    for old, new in zip(before, [a for a in args if isinstance(a, np.ndarray)], strict=True):
        np.testing.assert_array_equal(old, new)
