"""`LoweringContext.shared_tail`: shared memory of a user's own, placed above every other use
once the body is lowered and counted in `shared_bytes` (the launch's allocation and the arch's
limit check; NVIDIA's TMA barrier and the map a kernel builds for a made descriptor use it)."""

from __future__ import annotations

from llvmlite import ir

from tilec.lowering.context import LoweringContext
from tilec_nvidia.target_info import NvidiaTargetInfo


def _context() -> LoweringContext:
    module = ir.Module("m")
    fn = ir.Function(module, ir.FunctionType(ir.VoidType(), []), "k")
    fn.append_basic_block("entry")
    builder = ir.IRBuilder(fn.append_basic_block("body"))
    return LoweringContext(module, fn, builder, NvidiaTargetInfo("sm_90a", 32), 4)


def test_the_tail_lies_above_every_use_aligned_and_counted():
    ctx = _context()
    ctx.shared_scratch(1000)  # a use before the tail's is asked for
    first = ctx.shared_tail("map", 128, 128)
    assert ctx.shared_tail("map", 128, 128) is first  # one a key
    ctx.shared_tail("barrier", 8, 8)
    ctx.shared_scratch(2000)  # and one after: the tail still lies above it
    assert ctx.shared_bytes == 2000
    ctx.place_tail()
    assert ctx.shared_bytes == 2048 + 128 + 8
    text = str(ctx.module)
    assert "i32 2048" in text and "i32 2176" in text
    assert [g.name for g in ctx.module.global_values if isinstance(g, ir.GlobalVariable)] == [
        "global_smem"
    ]  # no static buffer


def test_without_a_tail_nothing_changes():
    ctx = _context()
    ctx.shared_scratch(100)
    ctx.place_tail()
    assert ctx.shared_bytes == 112
