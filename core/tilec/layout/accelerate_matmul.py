"""The `accelerate-matmul` pass: tensor-core layouts for the `tile.dot`s the target can run so.

After Triton's AccelerateMatmul (mma version 2). For each `tile.dot` whose element types match
one of the target's `LayoutRules.mma_instructions` and whose shapes are whole instructions
(M a multiple of 16, N of 8, K of the instruction's K; tensor shapes are powers of two):

- the accumulator is converted to `#gpu.mma` (warps placed as Triton's `warpsPerTileV2` does),
  the result stays in it, and a conversion back to the old layout serves the result's uses;
- the operands are converted to `#gpu.dot_op` (`kWidth` = the elements of a 32-bit register),
  conversions the lowering implements through shared memory and `ldmatrix`.

Then accumulators stay in `#gpu.mma` across loops: an `scf.for` that yields the conversion of an
`#gpu.mma` value carries that value instead (its init is converted once before the loop, its
result converted once after it, and the conversions inside the loop cancel in
`remove-layout-conversions`, which runs next).

Dots the target has no instruction for (f64, integers other than i8, f32 inputs with
`input_precision = "ieee"`, an f16 accumulator) or whose shapes are smaller than one instruction
keep their blocked layouts: the FMA lowering.
"""

from __future__ import annotations

from tilec.dialects.func import FuncOp
from tilec.dialects.gpu import ConvertLayoutOp
from tilec.dialects.gpu_mma import MMA_LANES, DotOperandEncodingAttr, MmaEncodingAttr
from tilec.dialects.scf import ForOp
from tilec.dialects.tile import DotOp
from tilec.ir.core import Operation, Value
from tilec.ir.types import TensorType
from tilec.layout.assign_layouts import with_layout
from tilec.layout.rules import GpuTarget, MmaInstruction
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
        if target.rules.threads_per_warp != MMA_LANES:
            return False
        changed = False
        for op in list(module.walk()):
            if not isinstance(op, DotOp):
                continue
            instruction = choose_instruction(op, target.rules.mma_instructions)
            if instruction is not None:
                _accelerate(op, instruction, _num_warps(op, target.num_warps))
                changed = True
        if changed:
            _carry_accumulators(module)
        return changed


def choose_instruction(
    op: DotOp, instructions: tuple[MmaInstruction, ...]
) -> MmaInstruction | None:
    """The first of `instructions` that computes `op` (types and whole-instruction shapes)."""
    a, b, acc = op.a.type, op.b.type, op.acc.type
    if not all(isinstance(t, TensorType) for t in (a, b, acc)):
        return None
    (m, k), n = a.shape, b.shape[1]  # type: ignore[attr-defined]
    operand = mma_operand(op)
    for instruction in instructions:
        im, in_, ik = instruction.shape
        if operand != instruction.operand:
            continue
        if str(acc.element_type) != instruction.accumulator:  # type: ignore[attr-defined]
            continue
        if m % im == 0 and n % in_ == 0 and k % ik == 0:
            return instruction
    return None


def mma_operand(op: DotOp) -> str:
    """The operand type name an instruction must take to compute `op`: its inputs' element
    type, but "tf32" for f32 inputs with `input_precision` "tf32" or "tf32x3" (as "ieee", f32
    inputs have no tensor-core instruction)."""
    name = str(op.a.type.element_type)  # type: ignore[attr-defined]
    precision = op.attributes.get("input_precision")
    if name == "f32" and precision is not None and precision.value in ("tf32", "tf32x3"):  # type: ignore[attr-defined]
        return "tf32"
    return name


def warps_per_tile(shape: tuple[int, int], num_warps: int) -> tuple[int, int]:
    """Triton's `warpsPerTileV2`: double the warps along M while M has more 16-row blocks per
    warp than N has 16-column blocks (and M has rows left for them), else along N."""
    warps = [1, 1]
    while warps[0] * warps[1] < num_warps:
        if shape[0] // 16 // warps[0] >= shape[1] // 16 // warps[1]:
            if warps[0] < shape[0] // 16:
                warps[0] *= 2
            else:
                warps[1] *= 2
        else:
            warps[1] *= 2
    return warps[0], warps[1]


def _num_warps(op: Operation, default: int) -> int:
    func = op.parent_op
    while func is not None and not isinstance(func, FuncOp):
        func = func.parent_op
    attr = func.attributes.get("gpu.num_warps") if func is not None else None
    return int(attr.value) if attr is not None else default  # type: ignore[attr-defined]


def _accelerate(op: DotOp, instruction: MmaInstruction, num_warps: int) -> None:
    a, b, acc = op.a, op.b, op.acc
    result = op.result
    old_type: TensorType = result.type  # type: ignore[assignment]
    shape: tuple[int, int] = old_type.shape  # type: ignore[assignment]
    mma = MmaEncodingAttr(instruction.version, warps_per_tile(shape, num_warps))
    k_width = 4 // _element_bytes(a.type)  # type: ignore[arg-type]
    op.set_operand(0, _convert_before(op, a, DotOperandEncodingAttr(0, mma, k_width)))
    op.set_operand(1, _convert_before(op, b, DotOperandEncodingAttr(1, mma, k_width)))
    op.set_operand(2, _convert_before(op, acc, mma))
    result.type = with_layout(old_type, mma)
    back = ConvertLayoutOp(result, old_type)
    back.location = op.location
    op.parent.insert_after(back, op)  # type: ignore[union-attr]
    _replace_uses_except(result, back.results[0], back)


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


def _carry_accumulators(module: Operation) -> None:
    """Loops carry `#gpu.mma` values rather than their conversions (module doc); inner loops
    first, so that an outer loop then sees the inner loop's `#gpu.mma` result."""
    for loop in reversed([op for op in module.walk() if isinstance(op, ForOp)]):
        block = loop.regions[0].block
        terminator = block.last_op
        for i, yielded in enumerate(terminator.operands):  # type: ignore[union-attr]
            producer = getattr(yielded, "op", None)
            if not isinstance(producer, ConvertLayoutOp):
                continue
            source = producer.source
            if not isinstance(source.type.encoding, MmaEncodingAttr):  # type: ignore[attr-defined]
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


__all__ = ["AccelerateMatmul", "choose_instruction", "mma_operand", "warps_per_tile"]
