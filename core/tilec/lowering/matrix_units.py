"""The matrix-unit contract: how a backend contributes its tensor/matrix cores to the core.

The core knows no vendor's matrix instruction. A backend whose hardware has one contributes,
from its plugin (the modules its backend imports when it loads):

1. **Layouts.** Its accumulator and operand register layouts as attribute classes
   (`tilec.ir.attributes.register_attribute`); operand layouts subclass
   `tilec.dialects.gpu_matrix.OperandEncodingAttr` (`{opIdx, parent, kWidth}`), which the core's
   passes recognise (`pipeline-loops` pipelines the loads that feed them).
2. **Thread mappings.** For each layout class, which elements each lane holds
   (`tilec.layout.mapping.register_thread_mapping`): the fragment tables of its ISA.
3. **Instructions.** `LayoutRules.mma_instructions`: `tilec.layout.rules.MmaInstruction`s
   (subclassed with the vendor's data: lanes, fragment shape, operand width), each giving the
   (accumulator, A, B) layouts of a dot it computes (`MmaInstruction.layouts`);
   `accelerate-matmul` converts the operands and the accumulator to them, unless the
   instruction refuses the dot (`computes`) or rewrites it into an op of its own
   (`rewrites_dot`).
   Such ops subclass `tilec.dialects.gpu_shared.MatrixUnitOp`; an asynchronous dot subclasses
   `AsyncDotOp`, which `pipeline-loops` keeps in flight across a pipelined loop's iterations.
4. **Lowerings**, registered here by layout class (the most derived registered class of the
   layout's type wins):
   - `lowers_dot(AccumulatorLayout)`: `fn(ctx, op)` lowers a `tile.dot` whose result has that
     layout (it sets `op.result` in `ctx`);
   - `lowers_conversion_to(OperandLayout)`: `fn(ctx, op) -> bool` lowers a
     `gpu.convert_layout` to that layout where no register of another thread is needed (it sets
     `op.result` in `ctx` and returns True), or returns False, having emitted nothing, to leave
     the conversion to the core's generic one (through shared memory);
   - `lays_out_shared(SharedEncoding)`: `fn(memdesc_type, element_bytes) -> (tile, alignment)`
     gives the tile of each slot of a `gpu.local_alloc` ring in that shared-memory encoding
     (an object with `rows`, `cols`, `element_bytes`, `nbytes`, `contiguous_dim`,
     `emit_offset(builder, row, col)` and `transpose()`, as `tilec.lowering.swizzle.SwizzledTile`
     has), and the byte alignment of its slots; a `gpu.local_load` into that encoding is a
     `SharedView` of the slot;
   - `lowers_shared_read(OperandLayout)`: `fn(ctx, op, tile, base) -> registers` reads the
     `gpu.local_load` `op` of a pipelined ring slot (`tile`: its `SwizzledTile`, `base`: the
     slot's address) into that layout, or raises a located `LoweringError` where it cannot.
   A lowering emits its instructions through the backend's own `TargetInfo` (for example its
   `mma` method, `TargetInfo.mma`), so that what it emits stays the backend's business.

`pack_registers` and `tf32_truncate` below are helpers such lowerings share; so are
`dot_operands`, `dot_tiling` and `issue_dot`, the parts of a `lowers_dot` lowering that do not
depend on the instruction: the operand checks, the split of the dot into instructions, and the
loop that issues them.

A layout without a registered lowering gets the core's generic one (the FMA `tile.dot` through
shared memory; a conversion through shared memory), or a located `LoweringError`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import attrs
from llvmlite import ir

from tilec.dialects.gpu import layout_of
from tilec.lowering.context import (
    F32,
    I32,
    LoweringContext,
    LoweringError,
    LTensor,
    location_prefix,
)

DotLowering = Callable[[Any, Any], None]
ConversionLowering = Callable[[Any, Any], bool]
SharedRead = Callable[[Any, Any, Any, Any], list[Any]]
SharedTile = Callable[[Any, int], tuple[Any, int]]

DOT_LOWERINGS: dict[type, DotLowering] = {}
"""Per accumulator layout class, the lowering of a `tile.dot` with a result in it."""
CONVERSIONS: dict[type, ConversionLowering] = {}
"""Per operand layout class, the lowering of a `gpu.convert_layout` to it."""
SHARED_READS: dict[type, SharedRead] = {}
"""Per operand layout class, the read of a ring slot (`gpu.local_load`) into it."""
SHARED_TILES: dict[type, SharedTile] = {}
"""Per shared-memory encoding class, the tile of a ring slot in it and the slots' alignment."""


def _register(table: dict[type, Any], layout_class: type) -> Callable[[Any], Any]:
    def register(function: Any) -> Any:
        table[layout_class] = function
        return function

    return register


def lowers_dot(layout_class: type) -> Callable[[DotLowering], DotLowering]:
    """Register the decorated function as the lowering of `tile.dot`s whose result has a
    `layout_class` layout (module doc)."""
    return _register(DOT_LOWERINGS, layout_class)


def lowers_conversion_to(layout_class: type) -> Callable[[ConversionLowering], ConversionLowering]:
    """Register the decorated function as the lowering of `gpu.convert_layout`s to a
    `layout_class` layout (module doc)."""
    return _register(CONVERSIONS, layout_class)


def lowers_shared_read(layout_class: type) -> Callable[[SharedRead], SharedRead]:
    """Register the decorated function as the read of ring slots into a `layout_class` layout
    (module doc)."""
    return _register(SHARED_READS, layout_class)


def lays_out_shared(encoding_class: type) -> Callable[[SharedTile], SharedTile]:
    """Register the decorated function as the layout of ring slots in an `encoding_class`
    shared-memory encoding (module doc)."""
    return _register(SHARED_TILES, encoding_class)


def registered(table: dict[type, Any], layout: object) -> Any:
    """The function `table` has for `layout`'s class (or a base of it); None if none."""
    for cls in type(layout).__mro__:
        function = table.get(cls)
        if function is not None:
            return function
    return None


def tf32_truncate(b: ir.IRBuilder, value: ir.Value) -> ir.Value:
    """An f32 as the tensor cores read it as tf32 (10 mantissa bits): the 13 low mantissa bits
    cleared (truncation toward zero), as the interpreter's `tf32_truncate`; infinities and NaNs
    (exponent all ones) stay as they are."""
    bits = b.bitcast(value, I32)
    truncated = b.and_(bits, I32(-0x2000))
    special = b.icmp_unsigned("==", b.and_(bits, I32(0x7F800000)), I32(0x7F800000))
    return b.bitcast(b.select(special, bits, truncated), F32)


def pack_registers(ctx: LoweringContext, values: list[ir.Value], k_width: int) -> list[ir.Value]:
    """Each `k_width` consecutive elements as one i32 register, the first in the low bits."""
    b = ctx.builder
    registers = []
    for i in range(0, len(values), k_width):
        if k_width == 1:
            registers.append(b.bitcast(values[i], I32))
            continue
        vector: ir.Value = ir.Constant(ir.VectorType(values[i].type, k_width), None)
        for j in range(k_width):
            vector = b.insert_element(vector, values[i + j], I32(j))
        registers.append(b.bitcast(vector, I32))
    return registers


def dot_operands(
    ctx: LoweringContext, op: Any, operand_class: type, k_width: int | None = None
) -> tuple[LTensor, LTensor, LTensor]:
    """The lowered A, B and accumulator of the `tile.dot` `op`, whose operands must be
    `operand_class` fragments (an `OperandEncodingAttr`: opIdx 0 and 1) of the result's layout
    with one kWidth (`k_width` where given); else a located `LoweringError` saying so."""
    a, b, acc = ctx.get(op.a), ctx.get(op.b), ctx.get(op.acc)
    layout = layout_of(op.result.type)
    a_layout, b_layout = layout_of(a.type), layout_of(b.type)
    if not (
        isinstance(a_layout, operand_class)
        and isinstance(b_layout, operand_class)
        and a_layout.parent == layout == b_layout.parent
        and (a_layout.op_idx, b_layout.op_idx) == (0, 1)
        and a_layout.k_width == b_layout.k_width
        and k_width in (None, a_layout.k_width)
    ):
        width = "one kWidth" if k_width is None else f"kWidth {k_width}"
        raise LoweringError(
            f"{location_prefix(op)}a tile.dot with a {layout} result needs "
            f"#{getattr(operand_class, 'name', operand_class.__name__)} operands (opIdx 0 and 1, "
            f"{width}) of that layout; got {a.type} and {b.type}"
        )
    return a, b, acc


@attrs.frozen
class DotTiling:
    """A `tile.dot` as matrix instructions: `reps` (M, N, K) instructions, K outermost, each
    taking `steps` (A, B, accumulator) consecutive registers of the lane's fragments, in the
    order of a fragment of M (N) repetitions of K steps of A (B), and of M repetitions of N
    repetitions of the accumulator."""

    reps: tuple[int, int, int]
    steps: tuple[int, int, int]


def dot_tiling(
    op: Any,
    a: LTensor,
    b: LTensor,
    acc: LTensor,
    instr_shape: tuple[int, int, int],
    steps: tuple[int, int, int],
) -> DotTiling:
    """How the `tile.dot` `op` (its lowered `a`, `b`, `acc`, in the result layout's fragments,
    whose `tile()` its warps cover once) splits into instructions of `instr_shape` (M, N, K),
    each taking `steps` registers of A, B and the accumulator; a located `LoweringError` where
    the dot is not made of whole instructions or the fragments do not hold them."""
    layout = layout_of(op.result.type)
    (m_size, k_size), n_size = a.type.shape, b.type.shape[1]
    instr_m, instr_n, instr_k = instr_shape
    if m_size % instr_m or n_size % instr_n or k_size % instr_k:
        raise LoweringError(
            f"{location_prefix(op)}tile.dot {m_size}x{n_size}x{k_size} is not made of whole "
            f"{instr_m}x{instr_n}x{instr_k} matrix instructions"
        )
    tile_m, tile_n = layout.tile()  # type: ignore[union-attr]
    reps = (max(1, m_size // tile_m), max(1, n_size // tile_n), k_size // instr_k)
    reps_m, reps_n, reps_k = reps
    a_step, b_step, acc_step = steps
    expected = (reps_m * reps_k * a_step, reps_n * reps_k * b_step, reps_m * reps_n * acc_step)
    if (len(a.values), len(b.values), len(acc.values)) != expected:
        raise LoweringError(
            f"{location_prefix(op)}tile.dot fragments do not match the {layout} layout"
        )
    return DotTiling(reps, steps)


def issue_dot(
    ctx: LoweringContext,
    tiling: DotTiling,
    instruction: Any,
    a_values: Sequence[ir.Value],
    b_values: Sequence[ir.Value],
    acc_values: Sequence[ir.Value],
    registers: Callable[[list[ir.Value]], list[ir.Value]] = list,
    swap: bool = False,
) -> list[ir.Value]:
    """The accumulator registers after one target `mma` of `instruction` per (K step, M
    repetition, N repetition) of `tiling`, K outermost: each gets `registers(elements)` of the
    instruction's A and B elements (`pack_registers` for 32-bit registers; the elements
    themselves by default) and its accumulator registers, A and B the other way round with
    `swap` (a transposed accumulator layout computes `D^T = B^T A^T`)."""
    reps_m, reps_n, reps_k = tiling.reps
    a_step, b_step, acc_step = tiling.steps
    results = list(acc_values)
    for rk in range(reps_k):
        for rm in range(reps_m):
            a_at = (rm * reps_k + rk) * a_step
            a_regs = registers(list(a_values[a_at : a_at + a_step]))
            for rn in range(reps_n):
                b_at = (rn * reps_k + rk) * b_step
                b_regs = registers(list(b_values[b_at : b_at + b_step]))
                first, second = (b_regs, a_regs) if swap else (a_regs, b_regs)
                at = (rm * reps_n + rn) * acc_step
                results[at : at + acc_step] = ctx.target.mma(
                    ctx.builder, instruction, first, second, results[at : at + acc_step]
                )
    return results


__all__ = [
    "CONVERSIONS",
    "DOT_LOWERINGS",
    "SHARED_READS",
    "SHARED_TILES",
    "DotTiling",
    "dot_operands",
    "dot_tiling",
    "issue_dot",
    "lays_out_shared",
    "lowers_conversion_to",
    "lowers_dot",
    "lowers_shared_read",
    "pack_registers",
    "registered",
    "tf32_truncate",
]
