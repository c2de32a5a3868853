"""`tile.dot` with a `#gpu.mma` result -> the target's tensor-core instruction (`TargetInfo.mma`).

The operands are in `#gpu.dot_op` layouts of the result's `#gpu.mma` (`accelerate-matmul` puts
them there), so every lane already holds its fragments, in the register order of
`tilec_nvidia.tensor_core_mapping`: per (M repetition, K step) `4 kWidth` A elements (`a0..a3`), per
(N repetition, K step) `2 kWidth` B elements (`b0, b1`), per (M, N repetition) 4 accumulators
(`c0..c3`). The lowering packs each `kWidth` elements into an i32 register (two f16/bf16, four
i8, or one f32) and issues one instruction per (K step, M repetition, N repetition), K
outermost, accumulating in registers.

f32 inputs (the instruction's operand "tf32") are passed as their f32 bits: the tensor cores
read them as tf32, dropping the 13 low mantissa bits (truncation toward zero, what Triton's
kernels get and the interpreter's `tf32_truncate` emulates). With `input_precision =
"tf32x3"` each input `x` is split into `big = tf32(x)` (`tf32_truncate`) and `small = x - big`
(exact; the tensor cores truncate it in turn), and
the dot is Triton's 3xTF32: `small_a big_b + big_a small_b` accumulated from zero over all of K,
then `big_a big_b` on top, then `acc` added, as the interpreter computes it.
"""

from __future__ import annotations

from llvmlite import ir

from tilec.dialects.gpu import layout_of
from tilec.dialects.tile import DotOp
from tilec.ir.types import element_type
from tilec.layout.accelerate_matmul import mma_operand
from tilec.lowering.context import F32, LoweringContext, LoweringError, LTensor, location_prefix
from tilec.lowering.matrix_units import lowers_dot, pack_registers, tf32_truncate
from tilec_nvidia.tensor_core_instructions import TensorCoreInstruction
from tilec_nvidia.tensor_core_layouts import DotOperandEncodingAttr, MmaEncodingAttr

K_WIDTHS = {"f16": 2, "bf16": 2, "tf32": 1, "i8": 4}
"""The operand elements one 32-bit register holds, by instruction operand type."""


@lowers_dot(MmaEncodingAttr)
def lower_mma_dot(ctx: LoweringContext, op: DotOp) -> None:
    a, b, acc = ctx.get(op.a), ctx.get(op.b), ctx.get(op.acc)
    layout = layout_of(op.result.type)
    a_layout, b_layout = layout_of(a.type), layout_of(b.type)
    assert isinstance(layout, MmaEncodingAttr)
    operand = mma_operand(op)
    k_width = K_WIDTHS.get(operand)
    if not (
        k_width is not None
        and isinstance(a_layout, DotOperandEncodingAttr)
        and isinstance(b_layout, DotOperandEncodingAttr)
        and a_layout.parent == layout == b_layout.parent
        and (a_layout.op_idx, b_layout.op_idx) == (0, 1)
        and a_layout.k_width == b_layout.k_width == k_width
    ):
        raise LoweringError(
            f"{location_prefix(op)}a tile.dot of {operand} operands with a {layout} result needs "
            f"#gpu.dot_op operands (opIdx 0 and 1, kWidth {k_width}) of that layout; got "
            f"{a.type} and {b.type}"
        )
    (m_size, k_size), n_size = a.type.shape, b.type.shape[1]
    tile_m, tile_n = layout.tile()
    reps_m, reps_n = max(1, m_size // tile_m), max(1, n_size // tile_n)
    instr_k = a_layout.instr_k
    reps_k = k_size // instr_k
    if m_size % 16 or n_size % 8 or k_size % instr_k:
        raise LoweringError(
            f"{location_prefix(op)}tile.dot {m_size}x{n_size}x{k_size} is not made of whole "
            f"m16n8k{instr_k} instructions"
        )
    instruction = TensorCoreInstruction(
        layout.version, (16, 8, instr_k), operand, str(element_type(op.acc.type))
    )
    a_step, b_step = 4 * k_width, 2 * k_width
    expected = (reps_m * reps_k * a_step, reps_n * reps_k * b_step, reps_m * reps_n * 4)
    if (len(a.values), len(b.values), len(acc.values)) != expected:
        raise LoweringError(f"{location_prefix(op)}tile.dot fragments do not match the mma layout")

    def run(a_values: list[ir.Value], b_values: list[ir.Value], start: list[ir.Value]):
        results = list(start)
        for rk in range(reps_k):
            for rm in range(reps_m):
                a_at = (rm * reps_k + rk) * a_step
                a_regs = pack_registers(ctx, a_values[a_at : a_at + a_step], k_width)
                for rn in range(reps_n):
                    b_at = (rn * reps_k + rk) * b_step
                    b_regs = pack_registers(ctx, b_values[b_at : b_at + b_step], k_width)
                    at = (rm * reps_n + rn) * 4
                    results[at : at + 4] = ctx.target.mma(
                        ctx.builder, instruction, a_regs, b_regs, results[at : at + 4]
                    )
        return results

    if operand == "tf32" and op.precision == "tf32x3":
        a_big, a_small = _split(ctx, a.values)
        b_big, b_small = _split(ctx, b.values)
        zeros = [ir.Constant(F32, 0.0)] * len(acc.values)
        results = run(a_big, b_small, run(a_small, b_big, zeros))
        results = run(a_big, b_big, results)
        results = [ctx.builder.fadd(r, c) for r, c in zip(results, acc.values, strict=True)]
    else:
        results = run(list(a.values), list(b.values), list(acc.values))
    ctx.set(op.result, LTensor(op.result.type, results))


def _split(ctx: LoweringContext, values: list[ir.Value]) -> tuple[list[ir.Value], list[ir.Value]]:
    """3xTF32's `big = tf32(x)` and `small = x - big` of each f32 value."""
    b = ctx.builder
    big = [tf32_truncate(b, v) for v in values]
    return big, [b.fsub(v, h) for v, h in zip(values, big, strict=True)]


__all__ = ["K_WIDTHS", "lower_mma_dot"]
