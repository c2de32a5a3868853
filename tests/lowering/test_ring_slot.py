"""The ring slot a pipelined loop's copies fill (`pipeline_loops._slot_ahead`, issue 23):
`(slot + S - 1) mod S` as a compare and a select where S is not a power of two (a remainder by
a power of two stays: LLVM masks it). As `arith.remui` by 3 LLVM divided by a multiply-high, a
shift and a multiply-subtract (`mul.hi.u32`, `shr`, `mul.lo`, `sub`), which ptxas scheduled
between the loop's last wgmma and its `wgmma.wait_group`: 23 more stall cycles on the path from
a tile's arrival to the copies that refill the ring, in the sweep's 128x128x64 matmul
(benchmarks/matmul_ptx_variants.py, `select-slot`); with 4 stages the select cost the 64x128x32
matmul 8 instructions and 5 registers. The slot's values are checked for every stage count; the
loops' results on the CPU emulators are test_lower_pipeline's and test_lower_wgmma's."""

from __future__ import annotations

import re

import pytest
from sweep_matmul_case import compile_case
from test_attention_bwd_sm90 import _ptx_loops

from tilec.dialects.arith import AddIOp, CmpIOp, ConstantOp, RemUIOp, SelectOp
from tilec.ir.core import Block
from tilec.ir.types import i32
from tilec.layout.pipeline_loops import _Emitter, _slot_ahead


@pytest.mark.parametrize("stages", [2, 3, 4, 5])
def test_the_slot_ahead_wraps_as_the_remainder(stages):
    block = Block(arg_types=[i32])
    slot = block.args[0]
    result = _slot_ahead(_Emitter(block, None), slot, stages - 1, stages)
    ops = {op.results[0]: op for op in block.ops}

    def value(v, at):
        if v is slot:
            return at
        op = ops[v]
        if isinstance(op, ConstantOp):
            return op.attributes["value"].value
        args = [value(operand, at) for operand in op.operands]
        if isinstance(op, AddIOp):
            return args[0] + args[1]
        if isinstance(op, RemUIOp):
            return args[0] % args[1]
        if isinstance(op, CmpIOp):
            assert op.attributes["predicate"].value == "uge"
            return args[0] >= args[1]
        assert isinstance(op, SelectOp)
        return args[1] if args[0] else args[2]

    for at in range(stages):
        assert value(result, at) == (at + stages - 1) % stages
    power_of_two = stages in (2, 4)
    assert isinstance(ops[result], RemUIOp if power_of_two else SelectOp)


def test_the_matmul_loop_computes_the_slot_without_a_division():
    compiled = compile_case(
        (1024, 1024, 32768), "bf16", "bf16", (128, 128, 64), 8, 3, False, target="sm_90a"
    )
    loop = max(_ptx_loops(compiled.asm["ptx"]), key=len)
    assert "cp.async.cg.shared.global" in loop
    assert not re.search(r"\b(mul\.hi|rem|div)\.", loop), loop
