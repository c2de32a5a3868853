"""The float8 `tl.dot`s NVIDIA's tensor cores multiply as float8 (e4m3, e5m2 and mixed pairs).

A `tl.dot` of float8 inputs holds them converted to f16 (`tile.fp_to_fp`, exact) and carries its
`max_num_imprecise_acc`; an instruction that multiplies e4m3/e5m2 (wgmma on sm_90a, mma.sync on
sm_89 and later) finds the float8 tensors (`float8_sources`) and computes on them instead.
"""

from __future__ import annotations

from tilec.dialects.float8 import FpToFpOp
from tilec.dialects.gpu import ConvertLayoutOp
from tilec.dialects.tile import DotOp, TransOp
from tilec.ir.core import Value
from tilec.ir.types import element_type

FLOAT8_PTX = {"f8E4M3FN": "e4m3", "f8E5M2": "e5m2"}
"""The float8 types the tensor cores multiply (wgmma, mma.sync), by their PTX names."""


def float8_sources(op: DotOp) -> tuple[Value, Value] | None:
    """The e4m3/e5m2 tensors whose exact f16 conversions `op` multiplies: a `tl.dot` of float8
    inputs (its `max_num_imprecise_acc` marks it) accumulating in f32, each operand a
    `tile.fp_to_fp` (under any `gpu.convert_layout`) of one; None otherwise."""
    if "max_num_imprecise_acc" not in op.attributes or str(element_type(op.acc.type)) != "f32":
        return None
    sources = []
    for value in (op.a, op.b):
        producer = getattr(value, "op", None)
        if isinstance(producer, ConvertLayoutOp):
            producer = getattr(producer.source, "op", None)
        if not isinstance(producer, FpToFpOp):
            return None
        if str(element_type(producer.source.type)) not in FLOAT8_PTX:
            return None
        sources.append(producer.source)
    return sources[0], sources[1]


def replace_float8_operands(op: DotOp, operands: tuple[Value, Value]) -> None:
    """Give `op` the float8 tensors `operands` (`float8_sources`) in place of its f16
    conversions of them, which go where nothing else uses them."""
    read = [op.a, op.b]
    op.set_operand(0, operands[0])
    op.set_operand(1, operands[1])
    for value in read:
        erase_unused(value)


def erase_unused(value: Value) -> None:
    """Erase the producer of `value` if nothing uses it any more (a `tile.trans`, float8's
    `tile.fp_to_fp` and its `gpu.convert_layout` looked through), and so on up."""
    producer = getattr(value, "op", None)
    if not isinstance(producer, TransOp | FpToFpOp | ConvertLayoutOp) or value.has_uses():
        return
    source = producer.operands[0]
    producer.erase()
    erase_unused(source)


__all__ = ["FLOAT8_PTX", "erase_unused", "float8_sources", "replace_float8_operands"]
