"""`tl.dot(a, b, acc, input_precision="bf16x3" | "bf16x6")` of f32 inputs, as Triton 3.6's
`F32DotTC` pass decomposes it (the `BF16xN` pattern), on every backend: each operand is split
into bf16 parts, `hi = bf16(x)`, `mid = bf16(x - hi)` and, for bf16x6, `lo = bf16(x - hi - mid)`
(each rounded to nearest even), and the products are summed from a zero accumulator, smallest
first, by plain dots of bf16 inputs (exact products, an f32 accumulator):

- bf16x6: `mid mid`, `lo hi`, `hi lo`, then bf16x3's;
- bf16x3: `mid hi`, `hi mid`; then NaNs of that sum become 0 (an infinite `x` has a NaN
  `mid`: `inf - inf`), then `hi hi` on top, then `acc` added.

The dots are ordinary `tile.dot`s, so the tensor cores run them where the backend has them."""

from __future__ import annotations

from typing import Any

from tilec.dialects import arith, tile
from tilec.frontend.context import TensorValue
from tilec.ir.attributes import StringAttr
from tilec.ir.types import bf16, f32, i1, like

PARTS = {"bf16x3": 2, "bf16x6": 3}
"""The bf16 parts each f32 operand is split into, by `input_precision`."""

HI, MID, LO = 0, 1, 2


def split_dot(sem: Any, a: TensorValue, b: TensorValue, acc: TensorValue, precision: str) -> Any:
    """`a @ b + acc` of f32 `a` and `b` in `precision` ("bf16x3" or "bf16x6")."""
    a_parts, b_parts = _split(sem, a, PARTS[precision]), _split(sem, b, PARTS[precision])
    result = sem.constant(0.0, acc.type)

    def dot(i: int, j: int) -> None:
        nonlocal result
        result = sem.create(tile.DotOp, [a_parts[i], b_parts[j], result], acc.type)

    if precision == "bf16x6":
        dot(MID, MID)
        dot(LO, HI)
        dot(HI, LO)
    dot(MID, HI)
    dot(HI, MID)
    nan = sem.create(
        arith.CmpFOp, [result, result], like(acc.type, i1), predicate=StringAttr("uno")
    )
    result = sem.create(arith.SelectOp, [nan, sem.constant(0.0, acc.type), result], acc.type)
    dot(HI, HI)
    return sem.create(arith.AddFOp, [result, acc], acc.type)


def _split(sem: Any, x: TensorValue, count: int) -> list[TensorValue]:
    parts = []
    for i in range(count):
        part = sem.create(arith.TruncFOp, [x], like(x.type, bf16))
        if i != count - 1:
            x = sem.create(
                arith.SubFOp, [x, sem.create(arith.ExtFOp, [part], like(x.type, f32))], x.type
            )
        parts.append(part)
    return parts
