"""Warp specialization of a pipelined TMA loop (`warp-specialize`, docs/tma.md step 5), without a
GPU: the gir's barrier protocol run by a model of the producer and the consumers under many
interleavings, the PTX (block size, registers, named barriers, the producer's loop) assembled
by ptxas, and the loops it leaves alone compiled exactly as without the hint. The GPU runs the
kernels in test_warp_specialize_gpu.py.

The model: an mbarrier counts its completed phases c; `try_wait.parity P` passes when c % 2 != P
(the phase of parity P is the last completed one), as the hardware does, so a waiter that lets a
barrier run two phases ahead would block (and the model reports a deadlock). The producer's
`barrier_expect` + copies of block j into slot s complete a phase of `full[s]` (the bytes landing
at once is the model's simplification: the consumers wait for that phase either way); the
consumers' `arrive_barrier` completes a phase of `empty[s]` (one arrival each). A copy into a slot
whose block the consumers still read (between the wait for it and its release) is an error, as is
a consumer reading a slot that holds another iteration's block.
"""

from __future__ import annotations

import random
import re

import pytest
from test_tma_ring_phases import EVALUATED, PREDICATES, _evaluate

import tilec
import tilec.language as tl
from tilec.dialects.gpu_bulk import (
    AsyncBulkCopyGlobalToLocalOp,
    BarrierExpectOp,
    InitBarriersOp,
    WaitBarrierOp,
)
from tilec.dialects.gpu_warp_specialize import ArriveBarrierOp, WarpSpecializeOp
from tilec.dialects.scf import ForOp, YieldOp
from tilec.ir import parse_module
from tilec_nvidia.codegen import find_ptxas

PREDICATES.setdefault("sgt", lambda x, y: x > y)


@pytest.fixture
def ws_on(tma_on, monkeypatch):
    """TMA on, a fresh cache, and `TILEC_NVIDIA_WARP_SPECIALIZE` on (off by default)."""
    monkeypatch.setenv("TILEC_NVIDIA_WARP_SPECIALIZE", "1")


@tilec.jit
def ws_matmul(a_desc, b_desc, c_ptr, M, N, K, BM: tl.constexpr, BN: tl.constexpr,
              BK: tl.constexpr, WS: tl.constexpr):  # fmt: skip
    """c (fp32) = a @ b^T (b's rows are N), the K loop warp-specialized with `WS`."""
    i, j = tl.program_id(0), tl.program_id(1)
    acc = tl.zeros((BM, BN), tl.float32)
    for k in tl.range(0, tl.cdiv(K, BK), warp_specialize=WS):
        a = a_desc.load([i * BM, k * BK])
        b = b_desc.load([j * BN, k * BK])
        acc = tl.dot(a, b.T, acc)
    rows = i * BM + tl.arange(0, BM)
    cols = j * BN + tl.arange(0, BN)
    mask = (rows[:, None] < M) & (cols[None, :] < N)
    tl.store(c_ptr + rows[:, None] * N + cols[None, :], acc, mask=mask)


@tilec.jit
def ws_persistent(a_desc, b_desc, c_ptr, M, N, K, BM: tl.constexpr, BN: tl.constexpr,
                  BK: tl.constexpr, PROGRAMS: tl.constexpr):  # fmt: skip
    """Programs looping over tiles, the tile loop marked (as Triton's persistent tutorial):
    the K loop inside is the pipelined one, so nothing is specialized."""
    tiles_n = tl.cdiv(N, BN)
    for tile in tl.range(tl.program_id(0), tl.cdiv(M, BM) * tiles_n, PROGRAMS,
                         warp_specialize=True):  # fmt: skip
        i = tile // tiles_n
        j = tile % tiles_n
        acc = tl.zeros((BM, BN), tl.float32)
        for k in range(0, tl.cdiv(K, BK)):
            acc = tl.dot(a_desc.load([i * BM, k * BK]), b_desc.load([j * BN, k * BK]).T, acc)
        rows = i * BM + tl.arange(0, BM)
        cols = j * BN + tl.arange(0, BN)
        mask = (rows[:, None] < M) & (cols[None, :] < N)
        tl.store(c_ptr + rows[:, None] * N + cols[None, :], acc, mask=mask)


def signature(bm: int, bn: int, bk: int, element: str = "fp16") -> dict:
    return {"a_desc": f"tensordesc<{element}[{bm}, {bk}]>",
            "b_desc": f"tensordesc<{element}[{bn}, {bk}]>", "c_ptr": "*fp32", "M": "i32",
            "N": "i32", "K": "i32"}  # fmt: skip


def compile_ws(ws: bool, block=(64, 64, 64), warps: int = 4, stages: int = 3, kernel=ws_matmul):
    bm, bn, bk = block
    constexprs = {"BM": bm, "BN": bn, "BK": bk}
    constexprs.update({"WS": ws} if kernel is ws_matmul else {"PROGRAMS": 8})
    return tilec.compile(kernel, signature(bm, bn, bk), constexprs=constexprs, backend="nvidia",
                         target="sm_90a", num_warps=warps, num_stages=stages)  # fmt: skip


# The barrier protocol ------------------------------------------------------------------------


class Model:
    """The two barrier sets, the ring's contents and who reads which slot (module doc)."""

    def __init__(self, stages: int):
        self.phases = {"full": [0] * stages, "empty": [0] * stages}
        self.block: list[int | None] = [None] * stages
        self.reading: list[int | None] = [None] * stages
        self.copies = 0

    def passes(self, kind: str, slot: int, parity: int) -> bool:
        return self.phases[kind][slot] % 2 != parity

    def fill(self, slot: int) -> None:
        assert self.reading[slot] is None, (
            f"block {self.copies} copied into slot {slot} while the consumers read block "
            f"{self.reading[slot]} there"
        )
        self.block[slot] = self.copies
        self.copies += 1
        self.phases["full"][slot] += 1

    def read(self, slot: int, iteration: int) -> None:
        assert self.block[slot] == iteration, (
            f"iteration {iteration} reads slot {slot}, which holds block {self.block[slot]}"
        )
        self.reading[slot] = iteration

    def release(self, slot: int) -> None:
        assert self.reading[slot] is not None, f"slot {slot} released, but nobody read it"
        self.reading[slot] = None
        self.phases["empty"][slot] += 1


def _loop_run(loop: ForOp, env: dict, trips_env: dict, model: Model, names: dict, role: str):
    """A generator running `loop`'s iterations: yields (kind, slot, parity) at each wait."""
    body = loop.regions[0].block
    iv, *args = body.args
    values = [env.get(v) for v in loop.init_args]
    lb, ub = env[loop.lower_bound], env[loop.upper_bound]
    for i in range(lb, ub):
        env_i = dict(env)
        env_i.update({iv: i, **{a: v for a, v in zip(args, values, strict=True) if v is not None}})
        for op in body.ops:
            _evaluate(op, env_i)
            if isinstance(op, WaitBarrierOp):
                kind = names[op.barriers]
                yield kind, env_i[op.slot], env_i[op.phase]
                if role == "consumer":
                    model.read(env_i[op.slot], i - lb)
            elif isinstance(op, BarrierExpectOp):
                assert env_i[op.pred] and role == "producer"
                model.fill(env_i[op.slot])
            elif isinstance(op, ArriveBarrierOp) and env_i[op.pred]:
                model.release(env_i[op.slot])
            elif isinstance(op, YieldOp):
                values = [env_i.get(v) for v in op.operands]


def run_protocol(gir: str, trips: int, seed: int) -> Model:
    """Run the producer and the consumers' K loop for `trips` iterations, interleaved at random
    (`seed`) at their waits; a deadlock or a misuse of a slot raises."""
    func = next(iter(parse_module(gir).regions[0].block.ops))
    entry = func.regions[0].block
    inits = [op for op in entry.ops if isinstance(op, InitBarriersOp)]
    full, empty = (op.result for op in inits)
    names = {full: "full", empty: "empty"}
    specialize = next(op for op in entry.ops if isinstance(op, WarpSpecializeOp))
    producer_loop = next(op for op in specialize.body.ops if isinstance(op, ForOp))
    consumer_loop = next(
        op
        for op in func.walk()
        if isinstance(op, ForOp) and op is not producer_loop and not specialize.is_ancestor_of(op)
    )
    env: dict = {}
    for op in specialize.body.ops:  # the producer's bounds: K's trips are `trips`
        _evaluate(op, env)
    env[producer_loop.upper_bound] = trips
    cenv: dict = {consumer_loop.upper_bound: trips}
    for op in entry.ops:
        if op is specialize:
            continue
        _evaluate(op, cenv)
    model = Model(full.type.slots)
    rng = random.Random(seed)
    runners = {
        "producer": _loop_run(producer_loop, env, env, model, names, "producer"),
        "consumer": _loop_run(consumer_loop, cenv, cenv, model, names, "consumer"),
    }
    pending = {role: next(runner, None) for role, runner in runners.items()}
    while any(w is not None for w in pending.values()):
        ready = [r for r, w in pending.items() if w is not None and model.passes(*w)]
        assert ready, f"deadlock at {pending}, phases {model.phases}"
        role = rng.choice(ready)
        pending[role] = next(runners[role], None)
    return model


@pytest.mark.parametrize("stages", [2, 3, 4])
def test_the_producer_and_consumers_keep_the_protocol(ws_on, stages):
    gir = compile_ws(True, stages=stages).asm["gir"]
    assert "gpu.warp_specialize" in gir and "gpu.arrive_barrier" in gir
    for trips in range(0, 12):
        for seed in range(6):
            model = run_protocol(gir, trips, seed)
            assert model.copies == trips


def test_the_model_catches_a_missing_release(ws_on):
    """The check can fail: consumers that never release a slot leave the producer waiting
    once the ring is full."""
    gir = compile_ws(True, stages=3).asm["gir"]
    broken = re.sub(r"gpu\.arrive_barrier .*\n", "", gir)
    run_protocol(broken, 3, 0)  # the ring's first round needs no release
    with pytest.raises(AssertionError, match="deadlock"):
        run_protocol(broken, 4, 0)


def test_the_model_catches_an_early_release(ws_on):
    """Releasing the current slot instead of the previous one lets the producer overwrite a
    block the consumers still read (the wgmma of the last iteration is in flight)."""
    gir = compile_ws(True, stages=2).asm["gir"]
    arrive = re.search(r"gpu\.arrive_barrier (%\w+), (%\w+), (%\w+)", gir)
    slot = re.search(r"gpu\.wait_barrier %\w+, (%\w+), %phase\w*\n", gir)  # the consumers'
    assert arrive and slot
    early = gir.replace(arrive.group(0), f"gpu.arrive_barrier {arrive.group(1)}, "
                        f"{slot.group(1)}, {arrive.group(3)}")  # fmt: skip
    with pytest.raises(AssertionError):
        for seed in range(20):
            run_protocol(early, 6, seed)


# The compiled kernel ---------------------------------------------------------------------------


def test_off_by_default_nothing_changes(tma_on, monkeypatch):
    """Without `TILEC_NVIDIA_WARP_SPECIALIZE` the hint changes nothing in the PTX."""
    monkeypatch.delenv("TILEC_NVIDIA_WARP_SPECIALIZE", raising=False)
    assert compile_ws(True).asm["ptx"] == compile_ws(False).asm["ptx"]


@pytest.mark.parametrize(
    ("block", "warps", "stages", "threads", "registers"),
    [
        ((64, 64, 64), 4, 3, 256, None),
        ((128, 128, 64), 8, 4, 384, (168, 232, 40)),
        ((128, 256, 64), 8, 3, 384, (168, 232, 40)),
        ((128, 128, 64), 4, 2, 256, None),
    ],
)
def test_the_specialized_ptx(ws_on, block, warps, stages, threads, registers):
    compiled = compile_ws(True, block, warps, stages)
    assert compiled.metadata["num_warps"] == threads // 32
    ptx = compiled.asm["ptx"]
    assert f".reqntid {threads}" in ptx
    consumers = warps * 32
    assert f"bar.arrive 1, {threads};" in ptx and f"bar.sync 1, {threads};" in ptx
    assert "bar.sync 0;" not in ptx  # every consumer barrier counts the consumers alone
    assert f"bar.sync 0, {consumers};" in ptx
    if registers is None:
        assert "setmaxnreg" not in ptx and ".maxnreg" not in ptx
    else:
        kernel, consumer, producer = registers
        assert f".maxnreg {kernel}" in ptx
        assert f"setmaxnreg.inc.sync.aligned.u32 {consumer};" in ptx
        assert f"setmaxnreg.dec.sync.aligned.u32 {producer};" in ptx
    # the consumers issue no copy; the producer's blocks (after the kernel's body) do all
    producer = ptx[ptx.index(f"bar.sync 1, {threads};") :]
    body = ptx[: ptx.index(f"bar.sync 1, {threads};")]
    assert "cp.async.bulk.tensor" not in body and "expect_tx" not in body
    assert "mbarrier.arrive.shared::cta.b64" in body  # the release of a slot
    assert "cp.async.bulk.tensor.2d" in producer and "mbarrier.try_wait.parity" in producer
    assert body.count("mbarrier.init.shared::cta.b64") == 2 * stages  # full and empty sets
    if find_ptxas() is not None:
        assert compiled.asm["cubin"]


def test_the_ptx_without_the_hint_is_unchanged_when_enabled(ws_on):
    compiled = compile_ws(False)
    assert "setmaxnreg" not in compiled.asm["ptx"] and compiled.metadata["num_warps"] == 4
    assert "gpu.warp_specialize" not in compiled.asm["gir"]


def test_a_persistent_tile_loop_is_not_specialized(ws_on, caplog):
    """The hint on the loop over tiles (the K loop inside is the pipelined one), as Triton's
    persistent tutorial writes it: the plain pipelined kernel, and the reason logged."""
    with caplog.at_level("INFO", logger="tilec.layout.warp_specialize"):
        compiled = compile_ws(True, kernel=ws_persistent)
    assert "gpu.warp_specialize" not in compiled.asm["gir"]
    assert compiled.metadata["num_warps"] == 4
    assert "not specialized: the loop was not pipelined through a bulk ring" in caplog.text


def test_mma_sync_and_odd_warps_are_not_specialized(ws_on, caplog):
    with caplog.at_level("INFO", logger="tilec.layout.warp_specialize"):
        compiled = compile_ws(True, (32, 64, 64), warps=2, stages=3)
    assert "gpu.warp_specialize" not in compiled.asm["gir"]
    assert "num_warps is not a multiple of 4" in caplog.text


def test_the_evaluated_ops_cover_the_loops():
    """The model evaluates every scalar op the loops hold (else a wait's slot is unknown)."""
    assert {"xori", "remui", "extui"} <= {cls.name.split(".")[1] for cls in EVALUATED}


_ = AsyncBulkCopyGlobalToLocalOp  # the copies are counted through their barrier_expect


def test_the_setting_gives_the_producer_warps_and_enters_the_cache_key(monkeypatch):
    from tilec_nvidia.backend import NvidiaBackend

    backend = NvidiaBackend()
    monkeypatch.delenv("TILEC_NVIDIA_WARP_SPECIALIZE", raising=False)
    off = backend.hash()
    assert backend.bulk_copies("sm_90a").producer_warps == 0
    monkeypatch.setenv("TILEC_NVIDIA_WARP_SPECIALIZE", "1")
    assert backend.bulk_copies("sm_90a").producer_warps == 4
    assert backend.hash() != off
    assert backend.bulk_copies("sm_80") is None  # no TMA: no ring, nothing to specialize
