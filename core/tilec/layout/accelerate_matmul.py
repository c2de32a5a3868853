"""The `accelerate-matmul` pass: tensor-core layouts for the `tile.dot`s the target can run so.

After Triton's AccelerateMatmul (mma version 2). For each `tile.dot` whose element types match
one of the target's `LayoutRules.mma_instructions` (those for its warp size) and whose shapes
are whole instructions (M, N and K multiples of the instruction's; tensor shapes are powers of
two), the instruction gives the layouts (`MmaInstruction.layouts`: NVIDIA's `#gpu.mma` and
`#gpu.dot_op`, AMD's `#gpu.amd_mfma` / `#gpu.amd_wmma` and `#gpu.amd_dot_op`):

- the accumulator is converted to the accumulator layout (warps placed as Triton's
  `warpsPerTileV2` does), the result stays in it, and a conversion back to the old layout
  serves the result's uses;
- the operands are converted to the operand layouts, conversions the lowering implements
  through shared memory (`ldmatrix` on NVIDIA, vector LDS reads on AMD).

Then accumulators stay in their layout across loops: an `scf.for` that yields the conversion of
an accumulator-layout value carries that value instead (its init is converted once before the
loop, its result converted once after it, and the conversions inside the loop cancel in
`remove-layout-conversions`, which runs next).

Dots the target has no instruction for (f64, integers, f32 inputs, an f16 accumulator) or whose
shapes are smaller than one instruction keep their blocked layouts: the FMA lowering.
"""

from __future__ import annotations

from tilec.dialects.func import FuncOp
from tilec.dialects.gpu import ConvertLayoutOp
from tilec.dialects.scf import ForOp
from tilec.dialects.tile import DotOp
from tilec.ir.core import Operation, Value
from tilec.ir.types import TensorType
from tilec.layout.assign_layouts import with_layout
from tilec.layout.rules import GpuTarget, MmaInstruction, warps_per_tile
from tilec.passes.base import ModulePass, PassContext


class AccelerateMatmul(ModulePass):
    name = "accelerate-matmul"
    stage = "gir"
    description = "give tile.dot tensor-core layouts (#gpu.mma, #gpu.dot_op) where the target can"
    after = ("assign-layouts",)
    before = ("remove-layout-conversions",)

    def run(self, module: Operation, context: PassContext) -> bool:
        target = context.target
        if not isinstance(target, GpuTarget) or not target.rules.mma_instructions:
            return False
        lanes = target.rules.threads_per_warp
        instructions = tuple(i for i in target.rules.mma_instructions if i.lanes == lanes)
        accumulators = set()
        for op in list(module.walk()):
            if not isinstance(op, DotOp):
                continue
            instruction = choose_instruction(op, instructions)
            if instruction is not None:
                accumulators.add(_accelerate(op, instruction, _num_warps(op, target.num_warps)))
        if accumulators:
            _carry_accumulators(module, accumulators)
        return bool(accumulators)


def choose_instruction(
    op: DotOp, instructions: tuple[MmaInstruction, ...]
) -> MmaInstruction | None:
    """The first of `instructions` that computes `op` (types and whole-instruction shapes)."""
    a, b, acc = op.a.type, op.b.type, op.acc.type
    if not all(isinstance(t, TensorType) for t in (a, b, acc)):
        return None
    (m, k), n = a.shape, b.shape[1]  # type: ignore[attr-defined]
    for instruction in instructions:
        im, in_, ik = instruction.shape
        if str(a.element_type) != instruction.operand:  # type: ignore[attr-defined]
            continue
        if str(acc.element_type) != instruction.accumulator:  # type: ignore[attr-defined]
            continue
        if m % im == 0 and n % in_ == 0 and k % ik == 0:
            return instruction
    return None


def _num_warps(op: Operation, default: int) -> int:
    func = op.parent_op
    while func is not None and not isinstance(func, FuncOp):
        func = func.parent_op
    attr = func.attributes.get("gpu.num_warps") if func is not None else None
    return int(attr.value) if attr is not None else default  # type: ignore[attr-defined]


def _accelerate(op: DotOp, instruction: MmaInstruction, num_warps: int) -> object:
    """Rewrite `op` to compute with `instruction`; returns its accumulator layout."""
    a, b, acc = op.a, op.b, op.acc
    result = op.result
    old_type: TensorType = result.type  # type: ignore[assignment]
    shape: tuple[int, int] = old_type.shape  # type: ignore[assignment]
    mma, a_layout, b_layout = instruction.layouts(shape, num_warps, _element_bytes(a.type))  # type: ignore[arg-type]
    op.set_operand(0, _convert_before(op, a, a_layout))
    op.set_operand(1, _convert_before(op, b, b_layout))
    op.set_operand(2, _convert_before(op, acc, mma))
    result.type = with_layout(old_type, mma)
    back = ConvertLayoutOp(result, old_type)
    back.location = op.location
    op.parent.insert_after(back, op)  # type: ignore[union-attr]
    _replace_uses_except(result, back.results[0], back)
    return mma


def _element_bytes(t: TensorType) -> int:
    return max(1, t.element_type.width // 8)  # type: ignore[attr-defined]


def _convert_before(op: Operation, value: Value, layout: object) -> Value:
    convert = ConvertLayoutOp(value, with_layout(value.type, layout))  # type: ignore[arg-type]
    convert.location = op.location
    convert.results[0].name_hint = value.name_hint
    op.parent.insert_before(convert, op)  # type: ignore[union-attr]
    return convert.results[0]


def _replace_uses_except(value: Value, new: Value, keep: Operation) -> None:
    for user, index in list(value.uses):
        if user is not keep:
            user.set_operand(index, new)


def _carry_accumulators(module: Operation, accumulators: set[object]) -> None:
    """Loops carry values in the `accumulators` layouts (`#gpu.mma`, ...) rather than their
    conversions (module doc); inner loops first, so that an outer loop then sees the inner
    loop's accumulator-layout result."""
    for loop in reversed([op for op in module.walk() if isinstance(op, ForOp)]):
        block = loop.regions[0].block
        terminator = block.last_op
        for i, yielded in enumerate(terminator.operands):  # type: ignore[union-attr]
            producer = getattr(yielded, "op", None)
            if not isinstance(producer, ConvertLayoutOp):
                continue
            source = producer.source
            if source.type.encoding not in accumulators:  # type: ignore[attr-defined]
                continue
            _carry(loop, i, source)


def _carry(loop: ForOp, i: int, carried: Value) -> None:
    block = loop.regions[0].block
    arg, result = block.args[1 + i], loop.results[i]
    old_type, new_type = arg.type, carried.type
    loop.set_operand(3 + i, _convert_before(loop, loop.operands[3 + i], new_type.encoding))  # type: ignore[attr-defined]
    arg.type = new_type
    inside = ConvertLayoutOp(arg, old_type)  # type: ignore[arg-type]
    inside.location = loop.location
    if block.first_op is None:
        block.append(inside)
    else:
        block.insert_before(inside, block.first_op)
    _replace_uses_except(arg, inside.results[0], inside)
    block.last_op.set_operand(i, carried)  # type: ignore[union-attr]
    result.type = new_type
    after = ConvertLayoutOp(result, old_type)  # type: ignore[arg-type]
    after.location = loop.location
    loop.parent.insert_after(after, loop)  # type: ignore[union-attr]
    _replace_uses_except(result, after.results[0], after)


__all__ = ["AccelerateMatmul", "choose_instruction", "warps_per_tile"]
