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

`pack_registers` and `tf32_truncate` below are helpers such lowerings share.

A layout without a registered lowering gets the core's generic one (the FMA `tile.dot` through
shared memory; a conversion through shared memory), or a located `LoweringError`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from llvmlite import ir

from tilec.lowering.context import F32, I32, LoweringContext

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


__all__ = [
    "CONVERSIONS",
    "DOT_LOWERINGS",
    "SHARED_READS",
    "SHARED_TILES",
    "lays_out_shared",
    "lowers_conversion_to",
    "lowers_dot",
    "lowers_shared_read",
    "pack_registers",
    "registered",
    "tf32_truncate",
]
