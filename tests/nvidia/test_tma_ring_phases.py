"""The mbarrier protocol of a loop whose ring TMA fills (tma_ring, pipeline-loops), checked on
the gir that the compile leaves, without a GPU: the scalar ops that give each issue's slot and
predicate and the loop's carried slot and phase are evaluated for trip counts 0 to 13, and a
model of the barriers (each issue arms its slot's barrier once, whose phase completes when the
copies land) says whether every wait waits for the phase of the copies of its own iteration.

`try_wait.parity P` returns once the barrier's phase of parity P has completed; with the
barrier's issues counted, the wait of iteration i is right where the last issue on its slot
carried iteration i's block (no later block overwrote it, no earlier one is still taken for
it) and P is (issues - 1) % 2: every earlier phase has completed (waited for in order), so the
phase P is that issue's own.
"""

from __future__ import annotations

import pytest
from tma_kernels import matmul_descriptors

import tilec
from tilec.dialects import arith
from tilec.dialects.gpu_bulk import BarrierExpectOp, InitBarriersOp, WaitBarrierOp
from tilec.dialects.scf import ForOp, IfOp, YieldOp
from tilec.ir import parse_module

SIGNATURE = {"a_desc": "tensordesc<fp16[64, 32]>", "b_desc": "tensordesc<fp16[32, 64]>",
             "c_desc": "tensordesc<fp16[64, 64]>", "K": "i32"}  # fmt: skip

EVALUATED = {
    arith.AddIOp: lambda x, y: x + y,
    arith.RemUIOp: lambda x, y: x % y,
    arith.XOrIOp: lambda x, y: x ^ y,
    arith.AndIOp: lambda x, y: x & y,
    arith.ShLIOp: lambda x, y: x << y,
    arith.MulIOp: lambda x, y: x * y,
    arith.ExtUIOp: int,
    arith.ExtSIOp: int,
    arith.SelectOp: lambda c, x, y: x if c else y,
}
PREDICATES = {"slt": lambda x, y: x < y, "eq": lambda x, y: x == y, "uge": lambda x, y: x >= y}


def _evaluate(op, env) -> None:
    """`op`'s scalar result into `env` where its operands are known and it is evaluated here."""
    if not op.results or op.results[0] in env:
        return
    if isinstance(op, arith.ConstantOp):
        value = getattr(op.value, "value", None)
        if isinstance(value, int):
            env[op.results[0]] = value
        return
    if not all(v in env for v in op.operands):
        return
    args = [env[v] for v in op.operands]
    if isinstance(op, arith.CmpIOp):
        env[op.results[0]] = int(PREDICATES[op.attributes["predicate"].value](*args))
    elif type(op) in EVALUATED:
        env[op.results[0]] = EVALUATED[type(op)](*args)


class Barriers:
    """Each slot's barrier: its issues and the iteration whose block the last one brings."""

    def __init__(self, count: int):
        self.issues = [0] * count
        self.block = [None] * count
        self.waited = 0

    def issue(self, slot: int, iteration: int) -> None:
        previous = self.block[slot]
        assert previous is None or previous < self.waited, (
            f"iteration {iteration}'s copies overwrite slot {slot} before iteration {previous} "
            "waited for it"
        )
        self.issues[slot] += 1
        self.block[slot] = iteration

    def wait(self, slot: int, phase: int, iteration: int) -> None:
        assert self.block[slot] == iteration, (
            f"iteration {iteration} waits on slot {slot}, which holds {self.block[slot]}'s block"
        )
        assert phase == (self.issues[slot] - 1) % 2, (
            f"iteration {iteration} waits for parity {phase}, its copies complete phase "
            f"{self.issues[slot] - 1} of barrier {slot}"
        )
        self.waited = iteration + 1


def _run(gir: str, trips: int) -> int:
    """Run the kernel's barrier protocol for `trips` iterations; the waits it made."""
    func = next(iter(parse_module(gir).regions[0].block.ops))
    entry = func.regions[0].block
    loop = next(op for op in func.walk() if isinstance(op, ForOp))
    init = next(op for op in entry.ops if isinstance(op, InitBarriersOp))
    barriers = Barriers(init.result.type.slots)
    env = {loop.upper_bound: trips}
    for op in entry.ops:  # the prologue, up to the loop (or the scf.if guarding it)
        if op is loop or isinstance(op, IfOp):
            break
        _evaluate(op, env)
        if isinstance(op, BarrierExpectOp) and env[op.pred]:
            barriers.issue(env[op.slot], env[op.slot])  # iteration t into slot t
    body = loop.regions[0].block
    iv, *args = body.args
    stages = init.result.type.slots
    values = [env.get(v) for v in loop.init_args]
    waits = 0
    for i in range(env[loop.lower_bound], trips):
        env_i = dict(env)
        env_i.update({iv: i, **{a: v for a, v in zip(args, values, strict=True) if v is not None}})
        for op in body.ops:
            _evaluate(op, env_i)
            if isinstance(op, WaitBarrierOp):
                barriers.wait(env_i[op.slot], env_i[op.phase], i)
                waits += 1
            elif isinstance(op, BarrierExpectOp) and env_i[op.pred]:
                barriers.issue(env_i[op.slot], i + stages - 1)
            elif isinstance(op, YieldOp):
                values = [env_i.get(v) for v in op.operands]
    return waits


@pytest.mark.parametrize("stages", [2, 3, 4, 5])
def test_each_wait_waits_for_its_own_copies(tma_on, stages):
    compiled = tilec.compile(matmul_descriptors, SIGNATURE, backend="nvidia", target="sm_90a",
                             constexprs={"BM": 64, "BN": 64, "BK": 32}, num_stages=stages)  # fmt: skip
    gir = compiled.asm["gir"]
    assert "gpu.wait_barrier" in gir
    for trips in range(14):
        assert _run(gir, trips) == trips


def test_the_model_catches_a_wrong_phase(tma_on):
    """The check can fail: the phase left at 0 (never flipped) waits for an old phase."""
    compiled = tilec.compile(matmul_descriptors, SIGNATURE, backend="nvidia", target="sm_90a",
                             constexprs={"BM": 64, "BN": 64, "BK": 32}, num_stages=3)  # fmt: skip
    gir = compiled.asm["gir"].replace("arith.xori %phase,", "arith.andi %phase,")
    assert _run(gir, 3) == 3  # the first round of the ring waits for phase 0
    with pytest.raises(AssertionError, match="waits for parity 0"):
        _run(gir, 4)
