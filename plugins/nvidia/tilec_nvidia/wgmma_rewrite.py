"""wgmma in `accelerate-matmul`: a `tile.dot` becomes a `gpu.warp_group_dot` (sm_90a).

`WarpGroupInstruction` (the version 3 instructions of `tilec_nvidia.capabilities.MMA_V3`)
computes a dot whose shape fits a warpgroup arrangement (`wgmma_layout`) and rewrites it
(`MmaInstruction.rewrites_dot`): the accumulator in `#gpu.mma` version 3, the operands converted
to `#gpu.nvmma_shared` (shared memory, which wgmma reads; `pipeline-loops` then fills it with
cp.async) or, for an A computed in the loop (attention's p), to wgmma's register operand. Other
dots fall back to mma.sync (`TensorCoreInstruction`, version 2).

A `tl.dot` of float8 inputs holds f16 conversions of them (`tile.fp_to_fp`, exact) and its
`max_num_imprecise_acc`; `Float8WarpGroupInstruction` rewrites it on the e4m3/e5m2 tensors
themselves (`tilec_nvidia.float8_dots`), both K-major in shared memory (B's ring stored
transposed where B is row-major, as Triton's AccelerateMatmul places float8 operands), with
`m64nNk32`.
"""

from __future__ import annotations

from tilec.dialects.gpu import ConvertLayoutOp, layout_of
from tilec.dialects.scf import ForOp, WhileOp
from tilec.dialects.tile import DescriptorLoadOp, DotOp, LoadOp, TransOp
from tilec.ir.attributes import IntegerAttr
from tilec.ir.core import Operation, Value
from tilec.ir.types import TensorType, i32
from tilec.layout.accelerate_matmul import convert_before as _convert_before
from tilec.layout.accelerate_matmul import element_bytes as _element_bytes
from tilec.layout.assign_layouts import with_layout
from tilec.layout.mapping import thread_mapping
from tilec_nvidia.float8_dots import erase_unused
from tilec_nvidia.tensor_core_layouts import (
    DotOperandEncodingAttr,
    MmaEncodingAttr,
    NvmmaSharedEncodingAttr,
)
from tilec_nvidia.wgmma_ops import WarpGroupDotOp

WGMMA_MAX_N = 256


def wgmma_layout(
    op: DotOp, num_warps: int, element_bytes: int | None = None
) -> MmaEncodingAttr | None:
    """The `#gpu.mma` version 3 layout of `op`'s result, or None where wgmma cannot compute it.

    Triton's `warpsPerTileV3`: 4 warps (a warpgroup) along M, doubled while M has more rows
    than they cover and warps are left; the rest along N. Each warp's instruction is
    `m64nNkK` with N = the columns per warp along N, halved while above 256, and K = 32 bytes of
    elements (16 f16/bf16, 8 tf32). The operands' swizzle must fit: A's K and each warpgroup's N
    span at least 32 bytes (`_swizzle`; tf32 and float8 operands are K-major, so N is free
    there). `element_bytes`: the operands' as wgmma reads them (1 for float8 inputs, which the
    dot holds converted to f16); their own where None."""
    (m, k), n = op.a.type.shape, op.b.type.shape[1]  # type: ignore[attr-defined]
    if element_bytes is None:
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
    16-bit types alone (tf32 and float8 operands are stored with K contiguous)."""
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
    a barrier every iteration. A descriptor's load (`tile.descriptor_load`, which TMA may bring
    into the ring) is a load: its A went to registers through `ldmatrix`, and the wgmma left in
    flight across iterations read registers that the next iteration's `ldmatrix` overwrote
    (wrong results on the H200, issue 23)."""
    producer = getattr(value, "op", None)
    loop = op.parent_op
    if (
        producer is None
        or not isinstance(loop, ForOp | WhileOp)
        or producer.parent is not op.parent
    ):
        return False
    return not isinstance(producer, LoadOp | DescriptorLoadOp | TransOp)


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


def accelerate_wgmma(
    op: DotOp, mma: MmaEncodingAttr, operands: tuple[Value, Value] | None = None
) -> None:
    """`op` -> `gpu.warp_group_dot` (synchronous; `pipeline-loops` may make it asynchronous):
    A and B converted to `#gpu.nvmma_shared`, the accumulator to `mma`, the result converted
    back for its uses. `operands`: the float8 tensors to multiply in place of `op`'s f16
    conversions of them (`tilec_nvidia.float8_dots.float8_sources`); the new op keeps `op`'s
    `max_num_imprecise_acc`."""
    a, b = operands if operands is not None else (op.a, op.b)
    acc = op.acc
    a_bytes = _element_bytes(a.type)  # type: ignore[arg-type]
    if _computed_in_loop(op, a) and a_bytes in (1, 2):
        # attention's P: in registers, as wgmma can read A (16- and 8-bit fragments here)
        a_shared = _convert_before(op, a, DotOperandEncodingAttr(0, mma, 4 // a_bytes))
    else:
        a_shared = _to_shared(op, a, 1, WARPGROUP_ROWS)
    b_shared = _to_shared(op, b, 0, mma.instr_n)
    acc_mma = _convert_before(op, acc, mma)
    old_type: TensorType = op.result.type  # type: ignore[assignment]
    attributes = {"pendings": IntegerAttr(0, i32)}
    if operands is not None:
        attributes["max_num_imprecise_acc"] = op.attributes["max_num_imprecise_acc"]
    dot = WarpGroupDotOp(
        operands=[a_shared, b_shared, acc_mma],
        result_types=[with_layout(old_type, mma)],
        attributes=attributes,
    )
    dot.location = op.location
    dot.results[0].name_hint = op.result.name_hint
    op.parent.insert_before(dot, op)  # type: ignore[union-attr]
    back = ConvertLayoutOp(dot.results[0], old_type)
    back.location = op.location
    op.parent.insert_before(back, op)  # type: ignore[union-attr]
    op.result.replace_all_uses_with(back.results[0])
    read = [op.a, op.b]
    op.erase()
    for value in read:  # a tile.trans looked through by _to_shared, float8's conversions
        producer = getattr(value, "op", None)
        if isinstance(producer, TransOp) and not value.has_uses():
            producer.erase()
        elif operands is not None:
            erase_unused(value)


__all__ = [
    "WGMMA_K_BYTES",
    "WGMMA_MAX_N",
    "accelerate_wgmma",
    "wgmma_layout",
]
