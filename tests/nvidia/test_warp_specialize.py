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
from tilec.dialects import arith
from tilec.dialects.gpu_bulk import (
    AsyncBulkCopyGlobalToLocalOp,
    BarrierExpectOp,
    InitBarriersOp,
    WaitBarrierOp,
)
from tilec.dialects.gpu_warp_specialize import ArriveBarrierOp, WarpSpecializeOp
from tilec.dialects.scf import ForOp, IfOp, YieldOp
from tilec.dialects.tile import ProgramIdOp
from tilec.ir import parse_module
from tilec_nvidia.codegen import find_ptxas

PREDICATES.setdefault("sgt", lambda x, y: x > y)


@pytest.fixture
def ws_on(tma_on, monkeypatch):
    """TMA on, a fresh cache, and `TILEC_NVIDIA_WARP_SPECIALIZE` on (the default, set here so
    that an environment setting it to `0` does not change the tests)."""
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
    the K loop inside is the pipelined one, specialized in its tile-loop form."""
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
        self.reads = 0

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


SCALARS = {
    **EVALUATED,
    arith.SubIOp: lambda x, y: x - y,
    arith.DivSIOp: lambda x, y: int(x / y),
    arith.RemSIOp: lambda x, y: x - int(x / y) * y,
}


def _scalar(op, env) -> None:
    if type(op) in SCALARS and op.results and all(v in env for v in op.operands):
        env[op.results[0]] = SCALARS[type(op)](*[env[v] for v in op.operands])
    else:
        _evaluate(op, env)


def _execute(block, env: dict, model: Model, names: dict, role: str, pid: int):
    """A generator running `block` (scf.for and scf.if by their scalar operands, the barrier ops
    on `model`); yields (kind, slot, parity) at each wait; returns its yield's values."""
    for op in block.ops:
        if isinstance(op, WarpSpecializeOp):  # the consumers pass over it
            continue
        if isinstance(op, ProgramIdOp):
            env[op.results[0]] = pid
        elif isinstance(op, ForOp):
            body = op.regions[0].block
            values = [env.get(v) for v in op.init_args]
            lb, ub, step = (env[v] for v in (op.lower_bound, op.upper_bound, op.step))
            for i in range(lb, ub, step):
                inner = {**env, body.args[0]: i, **dict(zip(body.args[1:], values, strict=True))}
                values = yield from _execute(body, inner, model, names, role, pid)
            env.update(zip(op.results, values, strict=True))
        elif isinstance(op, IfOp):
            taken = op.regions[0 if env[op.condition] else 1].block
            values = yield from _execute(taken, dict(env), model, names, role, pid)
            env.update(zip(op.results, values, strict=True))
        elif isinstance(op, YieldOp):
            return [env.get(v) for v in op.operands]
        elif isinstance(op, WaitBarrierOp):
            yield names[op.barriers], env[op.slot], env[op.phase]
            if role == "consumer":
                model.read(env[op.slot], model.reads)
                model.reads += 1
        elif isinstance(op, BarrierExpectOp):
            assert env[op.pred] and role == "producer", "the consumers issue a copy"
            model.fill(env[op.slot])
        elif isinstance(op, ArriveBarrierOp):
            assert role == "consumer", "the producer releases a slot"
            if env[op.pred]:
                model.release(env[op.slot])
        else:
            _scalar(op, env)
    return []


def run_protocol(gir: str, trips: int, seed: int, tiles: int = 1, programs: int = 1) -> Model:
    """Run the producer and the consumers of program 0 (`tiles` tiles of `trips` K iterations,
    in the persistent kernel `programs` programs) interleaved at random (`seed`) at their
    waits; a deadlock or a misuse of a slot raises."""
    func = next(iter(parse_module(gir).regions[0].block.ops))
    entry = func.regions[0].block
    full, empty = (op.result for op in entry.ops if isinstance(op, InitBarriersOp))
    names = {full: "full", empty: "empty"}
    specialize = next(op for op in entry.ops if isinstance(op, WarpSpecializeOp))
    params = {a.name_hint: a for a in entry.args}
    values = {"M": 64 * tiles * programs, "N": 64, "K": 64 * trips}
    env = {params[name]: value for name, value in values.items()}
    model = Model(full.type.slots)
    rng = random.Random(seed)
    runners = {
        "producer": _execute(specialize.body, dict(env), model, names, "producer", 0),
        "consumer": _execute(entry, dict(env), model, names, "consumer", 0),
    }
    pending = {role: next(runner, None) for role, runner in runners.items()}
    while any(w is not None for w in pending.values()):
        ready = [r for r, w in pending.items() if w is not None and model.passes(*w)]
        assert ready, f"deadlock at {pending}, phases {model.phases}"
        role = rng.choice(ready)
        pending[role] = next(runners[role], None)
    assert model.reads == model.copies == trips * tiles
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


def test_setting_off_nothing_changes(tma_on, monkeypatch):
    """With `TILEC_NVIDIA_WARP_SPECIALIZE=0` the hint changes nothing in the PTX."""
    monkeypatch.setenv("TILEC_NVIDIA_WARP_SPECIALIZE", "0")
    assert compile_ws(True).asm["ptx"] == compile_ws(False).asm["ptx"]


def test_on_by_default(tma_on, monkeypatch):
    """Unset, `TILEC_NVIDIA_WARP_SPECIALIZE` is on: the hinted kernel has the producer's warps."""
    monkeypatch.delenv("TILEC_NVIDIA_WARP_SPECIALIZE", raising=False)
    hinted, plain = compile_ws(True).asm["ptx"], compile_ws(False).asm["ptx"]
    assert "setmaxnreg" in hinted and "setmaxnreg" not in plain


@pytest.mark.parametrize(
    ("block", "warps", "stages", "threads", "registers"),
    [
        ((64, 64, 64), 4, 3, 256, (128, 216, 40)),  # two blocks an SM: half the registers
        ((128, 128, 64), 8, 4, 384, (168, 232, 40)),
        ((128, 256, 64), 8, 3, 384, (168, 232, 40)),
        ((128, 128, 64), 4, 2, 256, (128, 216, 40)),
        ((128, 128, 64), 4, 4, 256, None),  # one block an SM: 255 registers for every thread
        ((256, 128, 64), 16, 3, 640, (96, 112, 40)),  # 4 consumer warpgroups
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


@pytest.mark.parametrize("stages", [2, 3, 4])
def test_a_persistent_kernels_producer_runs_ahead_across_tiles(ws_on, stages):
    """The hint on the loop over tiles (Triton's persistent tutorial): the rings and barriers
    live across it, the slot and phase go on from tile to tile, the last slot of a tile is
    released after its K loop; the model runs 1-3 tiles of 0-7 K iterations."""
    compiled = compile_ws(True, stages=stages, kernel=ws_persistent)
    gir = compiled.asm["gir"]
    assert "gpu.warp_specialize" in gir and compiled.metadata["num_warps"] == 8
    for tiles in (1, 2, 3):
        for trips in range(8):
            for seed in range(4):
                run_protocol(gir, trips, seed, tiles=tiles, programs=8)
    if find_ptxas() is not None:
        assert compiled.asm["cubin"]


def test_the_model_catches_a_tile_without_its_last_release(ws_on):
    gir = compile_ws(True, stages=3, kernel=ws_persistent).asm["gir"]
    broken = re.sub(r"gpu\.arrive_barrier [^\n]*, %\d+\n(?=\s*scf\.yield %\d+, %\d+, %\d+\n\s*\} \{)",
                    "", gir)  # fmt: skip
    assert broken != gir
    run_protocol(broken, 3, 0, tiles=1, programs=8)
    with pytest.raises(AssertionError, match="deadlock"):
        run_protocol(broken, 3, 0, tiles=2, programs=8)


def test_a_persistent_kernel_over_the_shared_memory_is_not_specialized(ws_on, caplog):
    """With the rings beside the epilogue the 128x256x64 three-stage kernel needs more than the
    SM's shared memory: left alone, the reason logged."""
    with caplog.at_level("INFO", logger="tilec.layout.warp_specialize"):
        compiled = compile_ws(True, (128, 256, 64), 8, 3, kernel=ws_persistent)
    assert compiled.metadata["num_warps"] == 8
    assert "over the target's" in caplog.text


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
    monkeypatch.setenv("TILEC_NVIDIA_WARP_SPECIALIZE", "0")
    off = backend.hash()
    assert backend.bulk_copies("sm_90a").producer_warps == 0
    for value in ("false", "no"):
        monkeypatch.setenv("TILEC_NVIDIA_WARP_SPECIALIZE", value)
        assert backend.bulk_copies("sm_90a").producer_warps == 0 and backend.hash() == off
    monkeypatch.setenv("TILEC_NVIDIA_WARP_SPECIALIZE", "1")
    assert backend.bulk_copies("sm_90a").producer_warps == 4
    assert backend.hash() != off
    monkeypatch.delenv("TILEC_NVIDIA_WARP_SPECIALIZE")  # unset: on
    assert backend.bulk_copies("sm_90a").producer_warps == 4
    assert backend.bulk_copies("sm_80") is None  # no TMA: no ring, nothing to specialize


def test_a_kernel_given_maxnreg_keeps_it_and_sets_no_registers(ws_on):
    """`maxnreg` (Triton's option) is the kernel's limit for every warp: no `setmaxnreg`."""
    compiled = tilec.compile(ws_matmul, signature(128, 128, 64), backend="nvidia",
                             constexprs={"BM": 128, "BN": 128, "BK": 64, "WS": True},
                             target="sm_90a", num_warps=8, num_stages=3, maxnreg=128)  # fmt: skip
    ptx = compiled.asm["ptx"]
    assert ".maxnreg 128" in ptx and ".reqntid 384" in ptx and "setmaxnreg" not in ptx


def test_triton_names_report_the_warps_a_program_runs(ws_on):
    """`compiled.num_warps` and `packed_metadata` count the producer warpgroup, as Triton's
    `metadata.num_warps` (`ttg.total-num-warps`) and `pack_metadata` do: what a launcher given
    them must start (the option alone would start no producer)."""
    specialized, plain = compile_ws(True), compile_ws(False)
    assert specialized.options.num_warps == 4 and specialized.num_warps == 8
    assert specialized.packed_metadata[0] == 8 == specialized.metadata["num_warps"]
    assert plain.num_warps == 4 and plain.packed_metadata[0] == 4
