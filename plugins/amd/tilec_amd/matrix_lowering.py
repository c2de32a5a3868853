"""AMD matrix cores: `tile.dot` with an `#gpu.amd_mfma` / `#gpu.amd_wmma` result, and the
`gpu.convert_layout`s that give its operands their `#gpu.amd_dot_op` layouts.

**Operands through LDS.** An operand is staged as `[nonK][K]` (A as it is, B transposed), K
contiguous, rows padded: a row of `R` bytes is stored `R + V` bytes apart when `R` is a larger
power of two than the lane's read `V` (`kWidth` elements, at most 16 bytes). Every lane then
reads its `kWidth` K elements of row `lane % nonK` with one `V`-byte vector load
(`ds_read_b64` / `ds_read_b128`), and the rows of neighbouring lanes are `R + V` bytes apart:
`(R + V) / 4` is `V / 4` times an odd number of 4-byte banks, so the lanes one LDS cycle serves
fall in different banks (without the padding every row would start in the same bank). Sources
store their registers as vectors where their layout holds consecutive K elements, else one by
one. The conversion uses the block's scratch buffer (`ctx.shared_scratch`), so its LDS counts
in the kernel's size, which `make_llir` checks against the arch's limit.

**The dot.** The lane's registers are in `tilec_amd.matrix_mapping`'s order: per (M
repetition, K step) `kWidth` A elements, per (N repetition, K step) `kWidth` B elements, per (M,
N repetition) the instruction's accumulator registers. One instruction (the target's `mma`
hook, with the `kWidth` A and B elements and the accumulator elements) runs per (K step, M
repetition, N repetition), K outermost. A transposed MFMA layout computes `D^T = B^T A^T`: its
operands are passed to the instruction the other way round.
"""

from __future__ import annotations

from llvmlite import ir

from tilec.dialects.gpu import ConvertLayoutOp, layout_of
from tilec.dialects.gpu_shared import LocalLoadOp
from tilec.dialects.tile import DotOp
from tilec.ir.types import TensorType, element_type
from tilec.lowering.context import (
    I8,
    I32,
    LoweringContext,
    LTensor,
    memory_type,
)
from tilec.lowering.matrix_units import (
    dot_operands,
    dot_tiling,
    issue_dot,
    lowers_conversion_to,
    lowers_dot,
    lowers_shared_read,
)
from tilec.lowering.memory import byte_size
from tilec.lowering.swizzle import CHUNK_BYTES, SwizzledTile
from tilec_amd.matrix_instructions import instruction_of
from tilec_amd.matrix_layouts import (
    AmdDotOperandEncodingAttr,
    AmdMatrixLayout,
    AmdMfmaEncodingAttr,
)
from tilec_amd.matrix_mapping import instruction_offsets

MAX_ACCESS_BYTES = 16


@lowers_dot(AmdMatrixLayout)
def lower_amd_matrix_dot(ctx: LoweringContext, op: DotOp) -> None:
    a, b, acc = dot_operands(ctx, op, AmdDotOperandEncodingAttr)
    layout, a_layout = layout_of(op.result.type), layout_of(a.type)
    assert isinstance(layout, AmdMatrixLayout)
    assert isinstance(a_layout, AmdDotOperandEncodingAttr)
    width = a_layout.k_width
    per_acc = len(instruction_offsets(layout))
    tiling = dot_tiling(
        op, a, b, acc, (*layout.instr_mn, a_layout.instr_k), (width, width, per_acc)
    )
    instruction = instruction_of(
        layout, width, str(element_type(op.a.type)), str(element_type(op.acc.type))
    )
    swap = isinstance(layout, AmdMfmaEncodingAttr) and layout.is_transposed
    results = issue_dot(ctx, tiling, instruction, a.values, b.values, acc.values, swap=swap)
    ctx.set(op.result, LTensor(op.result.type, results))


def staged_row_bytes(k_size: int, element_bytes: int, k_width: int) -> int:
    """The padded LDS row pitch of an operand with `k_size` K elements (module doc)."""
    row = k_size * element_bytes
    read = min(k_width * element_bytes, MAX_ACCESS_BYTES)
    return row + read if row > read else row


@lowers_conversion_to(AmdDotOperandEncodingAttr)
def lower_to_amd_dot_operand(ctx: LoweringContext, op: ConvertLayoutOp) -> bool:
    """Lower `op`, whose result is an `#gpu.amd_dot_op`: through padded LDS rows."""
    result_type, layout, element, k_dim = _operand_of(ctx, op)
    nbytes = byte_size(element)
    k_size = result_type.shape[k_dim]
    non_k = result_type.shape[1 - k_dim]
    pitch = staged_row_bytes(k_size, nbytes, layout.k_width)
    vector = max(1, min(layout.k_width * nbytes, MAX_ACCESS_BYTES) // nbytes)
    b = ctx.builder

    def address(coords: list[ir.Value]) -> ir.Value:
        k, row = coords[k_dim], coords[1 - k_dim]
        offset = b.add(b.mul(row, I32(pitch)), b.mul(k, I32(nbytes)))
        return b.gep(base, [offset], source_etype=I8)

    source: LTensor = ctx.get(op.source)
    ctx.target.barrier(b)
    base = ctx.shared_scratch(non_k * pitch)
    mapping = source.mapping
    store_vector = 1
    if mapping.contiguous_dim == k_dim:
        store_vector = max(1, min(mapping.contiguity, vector))
    _access(ctx, ctx.element_coords(mapping), source.values, store_vector, element, address)
    ctx.target.barrier(b)
    mapping = LTensor(result_type, []).mapping
    values = _access(ctx, ctx.element_coords(mapping), None, vector, element, address)
    ctx.set(op.result, LTensor(result_type, values))
    return True


@lowers_shared_read(AmdDotOperandEncodingAttr)
def read_amd_operand(
    ctx: LoweringContext, op: LocalLoadOp, tile: SwizzledTile, base: ir.Value
) -> list[ir.Value]:
    """The registers of `op`'s result (an `#gpu.amd_dot_op`) read from a pipelined ring's slot
    at `base`, a swizzled `tile` (`tilec.lowering.swizzle`): each lane's K elements as one
    vector access where K is the tile's contiguous dimension (A; B stored transposed), element
    by element where it is not (B stored K x N)."""
    result_type, layout, element, k_dim = _operand_of(ctx, op)
    nbytes = byte_size(element)
    vector = 1
    if k_dim == tile.contiguous_dim:  # runs of k_width elements from multiples of k_width
        vector = max(1, min(layout.k_width * nbytes, MAX_ACCESS_BYTES, CHUNK_BYTES) // nbytes)
    b = ctx.builder

    def address(coords: list[ir.Value]) -> ir.Value:
        offset = b.mul(tile.emit_offset(b, coords[0], coords[1]), I32(nbytes))
        return b.gep(base, [offset], source_etype=I8)

    mapping = LTensor(result_type, []).mapping
    return _access(ctx, ctx.element_coords(mapping), None, vector, element, address)


def _operand_of(
    ctx: LoweringContext, op: ConvertLayoutOp | LocalLoadOp
) -> tuple[TensorType, AmdDotOperandEncodingAttr, ir.Type, int]:
    """`op`'s result type, its `#gpu.amd_dot_op` layout, its element type in memory and its K
    dimension (1 for A, 0 for B)."""
    result_type = op.result.type
    assert isinstance(result_type, TensorType)
    layout = result_type.encoding
    assert isinstance(layout, AmdDotOperandEncodingAttr)
    element = memory_type(result_type.element_type, ctx.target)
    return result_type, layout, element, 1 if layout.op_idx == 0 else 0


def _access(
    ctx: LoweringContext,
    coords: list[list[ir.Value]],
    values: list[ir.Value] | None,
    vector: int,
    element: ir.Type,
    address,
) -> list[ir.Value]:
    """Store `values` (or, with None, load) in runs of `vector` consecutive registers, each run
    at the address of its first register's coordinates."""
    b = ctx.builder
    count = len(coords)
    loaded: list[ir.Value] = []
    for first in range(0, count, vector):
        run = min(vector, count - first)
        pointer = address(coords[first])
        align = run * byte_size(element)
        access = ir.VectorType(element, run) if run > 1 else element
        if values is None:
            value = b.load(pointer, typ=access, align=align)
            if run == 1:
                loaded.append(value)
            else:
                loaded.extend(b.extract_element(value, I32(i)) for i in range(run))
            continue
        if run == 1:
            b.store(values[first], pointer, align=align)
            continue
        packed: ir.Value = ir.Constant(access, None)
        for i in range(run):
            packed = b.insert_element(packed, values[first + i], I32(i))
        b.store(packed, pointer, align=align)
    return loaded


__all__ = [
    "lower_amd_matrix_dot",
    "lower_to_amd_dot_operand",
    "read_amd_operand",
    "staged_row_bytes",
]
