"""The `accelerate-matmul` pass: tensor-core layouts for the `tile.dot`s the target can run so.

After Triton's AccelerateMatmul. For each `tile.dot` whose element types match one of the
target's `LayoutRules.mma_instructions` (those for its warp size) and whose shapes are whole
instructions (M, N and K multiples of the instruction's; tensor shapes are powers of two), the
instruction gives the layouts (`MmaInstruction.layouts`, the backend's: NVIDIA's `#gpu.mma` and
`#gpu.dot_op`, AMD's `#gpu.amd_mfma` / `#gpu.amd_wmma` and `#gpu.amd_dot_op`):

- the accumulator is converted to the accumulator layout (warps placed as Triton's
  `warpsPerTileV2` does), the result stays in it, and a conversion back to the old layout
  serves the result's uses;
- the operands are converted to the operand layouts, conversions the backend lowers
  (`tilec.lowering.matrix_units`) or the core does through shared memory.

Then accumulators stay in their layout across loops: an `scf.for` that yields the conversion of
an accumulator-layout value carries that value instead (its init is converted once before the
loop, its result converted once after it, and the conversions inside the loop cancel in
`remove-layout-conversions`, which runs next).

An instruction may instead rewrite the dot itself (`MmaInstruction.rewrites_dot`): NVIDIA's
wgmma (`tilec_nvidia.wgmma_rewrite`) makes a `gpu.warp_group_dot` of it, its operands in shared
memory, which `pipeline-loops` may then keep in flight; its accumulator is carried across loops
in the same way. An instruction may also refuse a dot its types and shapes fit
(`MmaInstruction.computes`: wgmma's warp arrangements), and arrange the layouts of chained dots
its own way (`MmaInstruction.chained_layouts`).

Dots the target has no instruction for (f64, integers other than i8, f32 inputs with
`input_precision = "ieee"`, an f16 accumulator) or whose shapes are smaller than one instruction
keep their blocked layouts: the FMA lowering.
"""

from __future__ import annotations

from tilec.dialects.func import FuncOp
from tilec.dialects.gpu import ConvertLayoutOp
from tilec.dialects.scf import ForOp
from tilec.dialects.tile import DotOp
from tilec.ir.core import Operation, OpResult, Value
from tilec.ir.types import TensorType
from tilec.layout.assign_layouts import with_layout
from tilec.layout.rules import GpuTarget, MmaInstruction, warps_per_tile
from tilec.passes.base import ModulePass, PassContext


class AccelerateMatmul(ModulePass):
    name = "accelerate-matmul"
    stage = "gir"
    description = "give tile.dot the layouts of the target's matrix instructions where it can"
    after = ("assign-layouts",)
    before = ("remove-layout-conversions",)

    def run(self, module: Operation, context: PassContext) -> bool:
        target = context.target
        if not isinstance(target, GpuTarget) or not target.rules.mma_instructions:
            return False
        lanes = target.rules.threads_per_warp
        instructions = tuple(i for i in target.rules.mma_instructions if i.lanes == lanes)
        dots = [op for op in module.walk() if isinstance(op, DotOp)]
        chained = {id(op) for op in dots if _has_chained_dot(op)}
        accumulators = set()
        for op in dots:
            num_warps = _num_warps(op, target.num_warps)
            instruction = choose_instruction(op, instructions, num_warps)
            if instruction is None:
                continue
            layout = instruction.rewrites_dot(op, num_warps)
            if layout is None:
                layout = _accelerate(op, instruction, num_warps, id(op) in chained)
            accumulators.add(layout)
        if accumulators:
            _carry_accumulators(module, accumulators)
        return bool(accumulators)


def choose_instruction(
    op: DotOp, instructions: tuple[MmaInstruction, ...], num_warps: int = 4
) -> MmaInstruction | None:
    """The first of `instructions` that computes `op`: its types, whole-instruction shapes, and
    what the instruction checks itself (`MmaInstruction.computes`)."""
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
        if m % im or n % in_ or k % ik:
            continue
        if instruction.computes(op, num_warps):
            return instruction
    return None


def mma_operand(op: DotOp) -> str:
    """The operand type name an instruction must take to compute `op`: its inputs' element
    type, but "tf32" for f32 inputs with `input_precision` "tf32" or "tf32x3" (as "ieee", f32
    inputs have no tensor-core instruction)."""
    name = str(op.a.type.element_type)  # type: ignore[attr-defined]
    if name == "f32" and op.precision in ("tf32", "tf32x3"):
        return "tf32"
    return name


def _num_warps(op: Operation, default: int) -> int:
    func = op.parent_op
    while func is not None and not isinstance(func, FuncOp):
        func = func.parent_op
    attr = func.attributes.get("gpu.num_warps") if func is not None else None
    return int(attr.value) if attr is not None else default  # type: ignore[attr-defined]


def _has_chained_dot(op: DotOp) -> bool:
    """Whether another `tile.dot` of `op`'s block uses its result or feeds its operands, through
    any ops of that block (Triton's `hasChainedDot`: attention's two dots)."""
    block = op.parent
    for forward in (True, False):
        seen, work = {id(op)}, [op]
        while work:
            current = work.pop()
            if current is not op and isinstance(current, DotOp):
                return True
            if forward:
                nexts = [user for r in current.results for user, _ in r.uses]
            else:
                nexts = [v.op for v in current.operands if isinstance(v, OpResult)]
            for other in nexts:
                if other.parent is block and id(other) not in seen:
                    seen.add(id(other))
                    work.append(other)
    return False


def _accelerate(op: DotOp, instruction: MmaInstruction, num_warps: int, chained: bool) -> object:
    """Rewrite `op` to compute with `instruction`; returns its accumulator layout."""
    a, b, acc = op.a, op.b, op.acc
    result = op.result
    old_type: TensorType = result.type  # type: ignore[assignment]
    shape: tuple[int, int] = old_type.shape  # type: ignore[assignment]
    layouts = instruction.layouts(shape, num_warps, element_bytes(a.type))  # type: ignore[arg-type]
    if chained:
        layouts = instruction.chained_layouts(layouts, shape, num_warps)
    mma, a_layout, b_layout = layouts
    op.set_operand(0, convert_before(op, a, a_layout))
    op.set_operand(1, convert_before(op, b, b_layout))
    op.set_operand(2, convert_before(op, acc, mma))
    result.type = with_layout(old_type, mma)
    back = ConvertLayoutOp(result, old_type)
    back.location = op.location
    op.parent.insert_after(back, op)  # type: ignore[union-attr]
    _replace_uses_except(result, back.results[0], back)
    return mma


def element_bytes(t: TensorType) -> int:
    """The bytes of one element of `t` (1 for i1)."""
    return max(1, t.element_type.width // 8)  # type: ignore[attr-defined]


def convert_before(op: Operation, value: Value, layout: object) -> Value:
    """`value` converted to `layout` by a `gpu.convert_layout` inserted before `op`."""
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
    """Loops carry values in the `accumulators` layouts rather than their
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
    loop.set_operand(3 + i, convert_before(loop, loop.operands[3 + i], new_type.encoding))  # type: ignore[attr-defined]
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


__all__ = [
    "AccelerateMatmul",
    "choose_instruction",
    "convert_before",
    "element_bytes",
    "mma_operand",
    "warps_per_tile",
]
