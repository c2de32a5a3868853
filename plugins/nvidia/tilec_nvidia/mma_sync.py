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
from tilec.lowering.matrix_units import (
    dot_operands,
    dot_tiling,
    issue_dot,
    lowers_dot,
    pack_registers,
    tf32_truncate,
)
from tilec_nvidia.float8_dots import FLOAT8_PTX
from tilec_nvidia.tensor_core_instructions import TensorCoreInstruction
from tilec_nvidia.tensor_core_layouts import DotOperandEncodingAttr, MmaEncodingAttr
from tilec_nvidia.tensor_cores import FLOAT8_MMA_OPERANDS

K_WIDTHS = {"f16": 2, "bf16": 2, "tf32": 1, "i8": 4, **dict.fromkeys(FLOAT8_MMA_OPERANDS, 4)}
"""The operand elements one 32-bit register holds, by instruction operand type."""


def _operand(op: DotOp) -> str:
    """The instruction's operand type: `mma_operand`'s, but for float8 inputs (which
    `Float8TensorCoreInstruction` gives the dot) the PTX types of A and B, "e4m3.e5m2"."""
    a, b = (str(element_type(v.type)) for v in (op.a, op.b))
    if a in FLOAT8_PTX and b in FLOAT8_PTX:
        return f"{FLOAT8_PTX[a]}.{FLOAT8_PTX[b]}"
    return mma_operand(op)


@lowers_dot(MmaEncodingAttr)
def lower_mma_dot(ctx: LoweringContext, op: DotOp) -> None:
    operand = _operand(op)
    k_width = K_WIDTHS.get(operand)
    if k_width is None:
        raise LoweringError(
            f"{location_prefix(op)}mma.sync has no {operand} operands (it takes "
            f"{', '.join(K_WIDTHS)})"
        )
    a, b, acc = dot_operands(ctx, op, DotOperandEncodingAttr, k_width)
    layout = layout_of(op.result.type)
    assert isinstance(layout, MmaEncodingAttr)
    instr_k = 8 * k_width
    tiling = dot_tiling(op, a, b, acc, (16, 8, instr_k), (4 * k_width, 2 * k_width, 4))
    instruction = TensorCoreInstruction(
        layout.version, (16, 8, instr_k), operand, str(element_type(op.acc.type))
    )

    def run(a_values: list[ir.Value], b_values: list[ir.Value], start: list[ir.Value]):
        return issue_dot(
            ctx,
            tiling,
            instruction,
            a_values,
            b_values,
            start,
            lambda elements: pack_registers(ctx, elements, k_width),
        )

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
