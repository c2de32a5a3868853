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
   `accelerate-matmul` converts the operands and the accumulator to them.
4. **Lowerings**, registered here by layout class (the most derived registered class of the
   layout's type wins):
   - `lowers_dot(AccumulatorLayout)`: `fn(ctx, op)` lowers a `tile.dot` whose result has that
     layout (it sets `op.result` in `ctx`);
   - `lowers_conversion_to(OperandLayout)`: `fn(ctx, op)` lowers a `gpu.convert_layout` to that
     layout where no register of another thread is needed (`op.result` set in `ctx`);
   - `lowers_shared_read(OperandLayout)`: `fn(ctx, result_type, tile, base) -> registers` reads
     a `gpu.local_load` of a pipelined ring slot (`tile`: its `SwizzledTile`, `base`: the slot's
     address) into that layout.
   A lowering emits its instructions through the backend's own `TargetInfo` (for example its
   `mma` method, `TargetInfo.mma`), so that what it emits stays the backend's business.

A layout without a registered lowering gets the core's generic one (the FMA `tile.dot` through
shared memory; a conversion through shared memory), or a located `LoweringError`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

DotLowering = Callable[[Any, Any], None]
ConversionLowering = Callable[[Any, Any], None]
SharedRead = Callable[[Any, Any, Any, Any], list[Any]]

DOT_LOWERINGS: dict[type, DotLowering] = {}
"""Per accumulator layout class, the lowering of a `tile.dot` with a result in it."""
CONVERSIONS: dict[type, ConversionLowering] = {}
"""Per operand layout class, the lowering of a `gpu.convert_layout` to it."""
SHARED_READS: dict[type, SharedRead] = {}
"""Per operand layout class, the read of a ring slot (`gpu.local_load`) into it."""


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


def registered(table: dict[type, Any], layout: object) -> Any:
    """The function `table` has for `layout`'s class (or a base of it); None if none."""
    for cls in type(layout).__mro__:
        function = table.get(cls)
        if function is not None:
            return function
    return None


__all__ = [
    "CONVERSIONS",
    "DOT_LOWERINGS",
    "SHARED_READS",
    "lowers_conversion_to",
    "lowers_dot",
    "lowers_shared_read",
    "registered",
]
