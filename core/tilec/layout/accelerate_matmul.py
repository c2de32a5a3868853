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

On a target with wgmma (sm_90a; version 3 first in its `mma_instructions`), a dot whose shape
fits a warpgroup arrangement (`wgmma_layout`) becomes a `gpu.warp_group_dot` instead: the
accumulator in `#gpu.mma` version 3, the operands converted to `#gpu.nvmma_shared` (shared
memory, which wgmma reads; `pipeline-loops` then fills it with cp.async) or, for an A computed
in the loop (attention's p), to wgmma's register operand. Other dots fall back to mma.sync.

Dots the target has no instruction for (f64, integers other than i8, f32 inputs with
`input_precision = "ieee"`, an f16 accumulator) or whose shapes are smaller than one instruction
keep their blocked layouts: the FMA lowering.
"""

from __future__ import annotations

from tilec.dialects.func import FuncOp
from tilec.dialects.gpu import ConvertLayoutOp, layout_of
from tilec.dialects.gpu_mma import DotOperandEncodingAttr, MmaEncodingAttr, NvmmaSharedEncodingAttr
from tilec.dialects.gpu_shared import WarpGroupDotOp
from tilec.dialects.scf import ForOp, WhileOp
from tilec.dialects.tile import DotOp, LoadOp, TransOp
from tilec.ir.attributes import IntegerAttr
from tilec.ir.core import Operation, OpResult, Value
from tilec.ir.types import TensorType, i32
from tilec.layout.assign_layouts import with_layout
from tilec.layout.mapping import thread_mapping
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
        dots = [op for op in module.walk() if isinstance(op, DotOp)]
        chained = {id(op) for op in dots if _has_chained_dot(op)}
        accumulators = set()
        for op in dots:
            num_warps = _num_warps(op, target.num_warps)
            instruction = choose_instruction(op, instructions, num_warps)
            if instruction is None:
                continue
            if is_wgmma(instruction):
                mma = wgmma_layout(op, num_warps)
                _accelerate_wgmma(op, mma)  # type: ignore[arg-type]
                accumulators.add(mma)
            else:
                accumulators.add(_accelerate(op, instruction, num_warps, id(op) in chained))
        if accumulators:
            _carry_accumulators(module, accumulators)
        return bool(accumulators)


def is_wgmma(instruction: MmaInstruction) -> bool:
    """Whether `instruction` is NVIDIA's wgmma (`#gpu.mma` version 3; other families, such as
    AMD's, number their own versions)."""
    return type(instruction) is MmaInstruction and instruction.version == 3


def choose_instruction(
    op: DotOp, instructions: tuple[MmaInstruction, ...], num_warps: int = 4
) -> MmaInstruction | None:
    """The first of `instructions` that computes `op` (types and whole-instruction shapes;
    for wgmma (version 3) also a warp arrangement, `wgmma_layout`)."""
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
        if is_wgmma(instruction) and (
            wgmma_layout(op, num_warps) is None or op.precision == "tf32x3"
        ):
            continue  # 3xTF32 splits its operands in registers: mma.sync
        if m % im == 0 and n % in_ == 0 and k % ik == 0:
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


WGMMA_MAX_N = 256


def wgmma_layout(op: DotOp, num_warps: int) -> MmaEncodingAttr | None:
    """The `#gpu.mma` version 3 layout of `op`'s result, or None where wgmma cannot compute it.

    Triton's `warpsPerTileV3`: 4 warps (a warpgroup) along M, doubled while M has more rows
    than they cover and warps are left; the rest along N. Each warp's instruction is
    `m64nNkK` with N = the columns per warp along N, halved while above 256, and K = 32 bytes of
    elements (16 f16/bf16, 8 tf32). The operands' swizzle must fit: A's K and each warpgroup's N
    span at least 32 bytes (`_swizzle`; tf32 operands are K-major, so N is free there)."""
    (m, k), n = op.a.type.shape, op.b.type.shape[1]  # type: ignore[attr-defined]
    element_bytes = _element_bytes(op.a.type)  # type: ignore[arg-type]
    instr_k = WGMMA_K_BYTES // element_bytes
    if num_warps % 4 or m < 64 or k % instr_k:
        return None
    wm = 4
    while wm < num_warps and m > 16 * wm:
        wm *= 2
    wn = num_warps // wm
    if m % (16 * wm) or n % wn:
        return None
    instr_n = n // wn
    while instr_n > WGMMA_MAX_N:
        instr_n //= 2
    mn_major_b = not _k_major_only(element_bytes)
    if instr_n % 8 or (mn_major_b and instr_n * element_bytes < 32) or k * element_bytes < 32:
        return None
    return MmaEncodingAttr(3, (wm, wn), (16, instr_n, instr_k))


WGMMA_K_BYTES = 32
"""One wgmma instruction's K, in bytes of its operands' elements."""


def _k_major_only(element_bytes: int) -> bool:
    """Whether wgmma reads operands of this size only K-major: its transpose bits exist for
    16-bit types alone (tf32 operands are stored with K contiguous)."""
    return element_bytes != 2


def _swizzle(contiguous_bytes: int) -> int:
    """The widest wgmma swizzle (32, 64 or 128 bytes) that `contiguous_bytes` fill."""
    return min(128, contiguous_bytes)


WARPGROUP_ROWS = 64


def _contiguous_dim(value: Value) -> int:
    """The dimension along which `value`'s layout gives a thread consecutive elements (1 where
    it says nothing)."""
    layout = layout_of(value.type)
    if layout is None:
        return 1
    dim = thread_mapping(layout, value.type.shape).contiguous_dim  # type: ignore[attr-defined]
    return 1 if dim is None else dim


def _to_shared(op: DotOp, value: Value, k_dim: int, instr_extent: int) -> Value:
    """Operand `value` of `op` converted to `#gpu.nvmma_shared`, stored with the dimension its
    layout holds contiguously as the contiguous one (cp.async and vector stores then fill it),
    and swizzled as widely as one instruction's extent along that dimension allows (K for a
    K-major operand; 64 rows of A or the instruction's N of B otherwise). A `tile.trans` is
    looked through: its source goes to shared memory and the transpose is a view of it, so that
    a load under it can be pipelined."""
    element_bytes = _element_bytes(value.type)  # type: ignore[arg-type]
    k_size = value.type.shape[k_dim]  # type: ignore[attr-defined]
    producer = getattr(value, "op", None)
    through = isinstance(producer, TransOp) and len(value.uses) == 1
    source = producer.source if through else value  # type: ignore[union-attr]
    contiguous = _contiguous_dim(source)
    if _k_major_only(element_bytes):  # stored K-major, whatever the load's order
        contiguous = 1 - k_dim if through else k_dim
    operand_contiguous = 1 - contiguous if through else contiguous
    width = k_size if operand_contiguous == k_dim else instr_extent
    swizzle = _swizzle(width * element_bytes)
    encoding = NvmmaSharedEncodingAttr(swizzle, contiguous == 0)
    shared = _convert_before(_outside_loops(op, source), source, encoding)
    if not through:
        return shared
    trans = TransOp(
        operands=[shared],
        result_types=[
            with_layout(value.type, NvmmaSharedEncodingAttr(swizzle, operand_contiguous == 0))  # type: ignore[arg-type]
        ],
        attributes=dict(producer.attributes),  # type: ignore[union-attr]
    )
    trans.location = producer.location  # type: ignore[union-attr]
    op.parent.insert_before(trans, op)  # type: ignore[union-attr]
    return trans.results[0]


def _computed_in_loop(op: DotOp, value: Value) -> bool:
    """Whether A is computed in registers in the loop body around `op` (not loaded there, which
    the pipeline would stage in shared memory, and not loop-invariant, which goes to shared
    memory once): wgmma then reads it from registers instead of a store to shared memory and
    a barrier every iteration."""
    producer = getattr(value, "op", None)
    loop = op.parent_op
    if (
        producer is None
        or not isinstance(loop, ForOp | WhileOp)
        or producer.parent is not op.parent
    ):
        return False
    return not isinstance(producer, LoadOp | TransOp)


def _outside_loops(op: Operation, value: Value) -> Operation:
    """Where to convert `value` for `op`: before the outermost loop around `op` that `value` is
    defined outside of (a loop-invariant operand goes to shared memory once, not every
    iteration), else before `op` itself."""
    defined_in = getattr(value, "op", None) or value.owner.parent_op  # type: ignore[attr-defined]
    inside = set()
    while defined_in is not None:
        inside.add(defined_in)
        defined_in = defined_in.parent_op
    at, parent = op, op.parent_op
    while parent is not None and parent not in inside:
        if isinstance(parent, ForOp | WhileOp):
            at = parent
        parent = parent.parent_op
    return at


def _accelerate_wgmma(op: DotOp, mma: MmaEncodingAttr) -> None:
    """`op` -> `gpu.warp_group_dot` (synchronous; `pipeline-loops` may make it asynchronous):
    A and B converted to `#gpu.nvmma_shared`, the accumulator to `mma`, the result converted
    back for its uses."""
    a, b, acc = op.a, op.b, op.acc
    if _computed_in_loop(op, a) and _element_bytes(a.type) == 2:  # type: ignore[arg-type]
        # attention's P: in registers, as wgmma can read A (16-bit fragments here)
        a_shared = _convert_before(op, a, DotOperandEncodingAttr(0, mma, 2))
    else:
        a_shared = _to_shared(op, a, 1, WARPGROUP_ROWS)
    b_shared = _to_shared(op, b, 0, mma.instr_n)
    acc_mma = _convert_before(op, acc, mma)
    old_type: TensorType = op.result.type  # type: ignore[assignment]
    dot = WarpGroupDotOp(
        operands=[a_shared, b_shared, acc_mma],
        result_types=[with_layout(old_type, mma)],
        attributes={"pendings": IntegerAttr(0, i32)},
    )
    dot.location = op.location
    dot.results[0].name_hint = op.result.name_hint
    op.parent.insert_before(dot, op)  # type: ignore[union-attr]
    back = ConvertLayoutOp(dot.results[0], old_type)
    back.location = op.location
    op.parent.insert_before(back, op)  # type: ignore[union-attr]
    op.result.replace_all_uses_with(back.results[0])
    operands = [a, b]
    op.erase()
    for value in operands:  # a tile.trans looked through by _to_shared
        producer = getattr(value, "op", None)
        if isinstance(producer, TransOp) and not value.has_uses():
            producer.erase()


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
    mma, a_layout, b_layout = instruction.layouts(shape, num_warps, _element_bytes(a.type))  # type: ignore[arg-type]
    if chained and isinstance(mma, MmaEncodingAttr) and shape[0] >= 16 * num_warps:
        # Each warp owns whole rows, so the result, its row reductions (a softmax) and its use
        # as the next dot's A operand stay in the warp's registers (Triton's hasChainedDot).
        mma = MmaEncodingAttr(mma.version, (num_warps, 1))
        k_width = a_layout.k_width  # type: ignore[attr-defined]
        a_layout = DotOperandEncodingAttr(0, mma, k_width)
        b_layout = DotOperandEncodingAttr(1, mma, k_width)
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


__all__ = [
    "AccelerateMatmul",
    "choose_instruction",
    "is_wgmma",
    "mma_operand",
    "warps_per_tile",
    "wgmma_layout",
]
