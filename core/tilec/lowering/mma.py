"""`tile.dot` with a `#gpu.mma` result -> the target's tensor-core instruction (`TargetInfo.mma`).

The operands are in `#gpu.dot_op` layouts of the result's `#gpu.mma` (`accelerate-matmul` puts
them there), so every lane already holds its fragments, in the register order of
`tilec.layout.mma_mapping`: per (M repetition, K step) 8 A elements (`a0..a3` as pairs), per
(N repetition, K step) 4 B elements (`b0, b1`), per (M, N repetition) 4 accumulators
(`c0..c3`). The lowering packs each pair of 16-bit elements into an i32 register and issues one
instruction per (K step, M repetition, N repetition), K outermost, accumulating in registers.
"""

from __future__ import annotations

from llvmlite import ir

from tilec.dialects.gpu import layout_of
from tilec.dialects.gpu_mma import DotOperandEncodingAttr, MmaEncodingAttr
from tilec.dialects.tile import DotOp
from tilec.ir.types import element_type
from tilec.layout.rules import MmaInstruction
from tilec.lowering.context import I32, LoweringContext, LoweringError, LTensor, _where


def lower_mma_dot(ctx: LoweringContext, op: DotOp) -> None:
    a, b, acc = ctx.get(op.a), ctx.get(op.b), ctx.get(op.acc)
    layout = layout_of(op.result.type)
    a_layout, b_layout = layout_of(a.type), layout_of(b.type)
    assert isinstance(layout, MmaEncodingAttr)
    if not (
        isinstance(a_layout, DotOperandEncodingAttr)
        and isinstance(b_layout, DotOperandEncodingAttr)
        and a_layout.parent == layout == b_layout.parent
        and (a_layout.op_idx, b_layout.op_idx) == (0, 1)
        and a_layout.k_width == b_layout.k_width == 2
    ):
        raise LoweringError(
            f"{_where(op)}a tile.dot with a {layout} result needs #gpu.dot_op operands "
            f"(opIdx 0 and 1, kWidth 2) of that layout; got {a.type} and {b.type}"
        )
    (m_size, k_size), n_size = a.type.shape, b.type.shape[1]
    tile_m, tile_n = layout.tile()
    reps_m, reps_n = max(1, m_size // tile_m), max(1, n_size // tile_n)
    instr_k = a_layout.instr_k
    reps_k = k_size // instr_k
    if m_size % 16 or n_size % 8 or k_size % instr_k:
        raise LoweringError(
            f"{_where(op)}tile.dot {m_size}x{n_size}x{k_size} is not made of whole "
            f"m16n8k{instr_k} instructions"
        )
    instruction = MmaInstruction(
        layout.version,
        (16, 8, instr_k),
        str(element_type(op.a.type)),
        str(element_type(op.acc.type)),
    )
    expected = (reps_m * reps_k * 8, reps_n * reps_k * 4, reps_m * reps_n * 4)
    if (len(a.values), len(b.values), len(acc.values)) != expected:
        raise LoweringError(f"{_where(op)}tile.dot fragments do not match the mma layout")
    results = list(acc.values)
    for rk in range(reps_k):
        for rm in range(reps_m):
            a_regs = _pack(ctx, a.values[(rm * reps_k + rk) * 8 :][:8])
            for rn in range(reps_n):
                b_regs = _pack(ctx, b.values[(rn * reps_k + rk) * 4 :][:4])
                at = (rm * reps_n + rn) * 4
                results[at : at + 4] = ctx.target.mma(
                    ctx.builder, instruction, a_regs, b_regs, results[at : at + 4]
                )
    ctx.set(op.result, LTensor(op.result.type, results))


def _pack(ctx: LoweringContext, values: list[ir.Value]) -> list[ir.Value]:
    """Pairs of 16-bit elements as i32 registers, the first of a pair in the low half."""
    b = ctx.builder
    registers = []
    for i in range(0, len(values), 2):
        pair: ir.Value = ir.Constant(ir.VectorType(values[i].type, 2), None)
        pair = b.insert_element(pair, values[i], I32(0))
        pair = b.insert_element(pair, values[i + 1], I32(1))
        registers.append(b.bitcast(pair, I32))
    return registers


__all__ = ["lower_mma_dot"]
