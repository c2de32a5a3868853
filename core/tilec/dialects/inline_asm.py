"""`tile.elementwise_inline_asm`: Triton's `tl.inline_asm_elementwise`, target assembly run on
the elements of its operands (all of one shape, or all scalars), `pack` elements at a time,
giving one or more results of that shape.

    %r = tile.elementwise_inline_asm %x {asm_string = "shl.b32 $0, $0, 3;",
        constraints = "=r,0", pack = 1 : i32} : tensor<128xi32>

An asm declared pure (`is_pure=True`) is `Pure`: removed when unused, merged with an identical
one, hoisted out of loops. One that is not is `tile.elementwise_inline_asm_effects`, which has no
`Pure` trait, so no pass removes, merges, hoists or duplicates it (it may read or write memory).
Its operands and results share one layout (`assign-layouts`), as element-wise ops' do.
"""

from __future__ import annotations

from tilec.ir.attributes import IntegerAttr, StringAttr
from tilec.ir.core import Operation, VerifyError, attr_def, operand_def, register_op, result_def
from tilec.ir.traits import Pure
from tilec.ir.types import TensorType, shape_of


@register_op
class ElementwiseInlineAsmOp(Operation):
    """Pure inline assembly over elements (`is_pure=True`)."""

    name = "tile.elementwise_inline_asm"
    args = operand_def(variadic=True)
    asm_string = attr_def(StringAttr)
    constraints = attr_def(StringAttr)
    pack = attr_def(IntegerAttr)
    results_ = result_def(variadic=True)
    traits = (Pure(),)

    @property
    def asm_text(self) -> str:
        return self.attributes["asm_string"].value  # type: ignore[attr-defined]

    @property
    def constraints_text(self) -> str:
        return self.attributes["constraints"].value  # type: ignore[attr-defined]

    @property
    def pack_int(self) -> int:
        return self.attributes["pack"].value  # type: ignore[attr-defined]

    @property
    def is_pure(self) -> bool:
        return self.has_trait(Pure)

    def verify_(self) -> None:
        if not self.results:
            raise VerifyError("needs at least one result", self)
        if self.pack_int < 1:
            raise VerifyError(f"pack must be 1 or more, got {self.pack_int}", self)
        values = [*self.operands, *self.results]
        if len({isinstance(v.type, TensorType) for v in values}) > 1:
            raise VerifyError("mixes scalars and tensors; splat the scalars first", self)
        shapes = {shape_of(v.type) for v in values}
        if len(shapes) > 1:
            raise VerifyError(
                f"operands and results must have one shape, got {sorted(shapes)}", self
            )
        layouts = {v.type.encoding for v in values if isinstance(v.type, TensorType)}
        if len(layouts) > 1:
            raise VerifyError("operands and results must have one layout", self)


@register_op
class ElementwiseInlineAsmEffectsOp(ElementwiseInlineAsmOp):
    """Inline assembly with side effects (`is_pure=False`): never removed, merged or moved."""

    name = "tile.elementwise_inline_asm_effects"
    traits = ()


__all__ = ["ElementwiseInlineAsmEffectsOp", "ElementwiseInlineAsmOp"]
