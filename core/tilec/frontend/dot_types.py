"""The types of `tl.dot`'s result, from its operands' dtype and `out_dtype`, as Triton 3.6's
`semantic.dot` decides them:

- integer operands accumulate in i32 and the result is i32, whatever `out_dtype` says (Triton's
  own test_dot passes `out_dtype=tl.int8` and expects the int32 sums, not their low bytes);
- `out_dtype=bfloat16` is an error for float operands (Triton's ValueError);
- f32 and bf16 operands give f32, f64 operands f64, whatever `out_dtype` says;
- f16 operands (and 8-bit floats, which the frontend converts to f16 first) give `out_dtype`,
  f32 or f16. tilec accumulates an f16 result in f32 and rounds it once, after the dot (Triton
  accumulates in f16: the two differ in rounding only).
"""

from __future__ import annotations

from tilec.frontend.errors import UserError
from tilec.ir.types import IntegerType, Type, bf16, f16, f32, f64, i32


def dot_types(operands: Type, out: Type | None) -> tuple[Type, Type | None]:
    """(the accumulator type of a `tl.dot` of `operands` elements with `out_dtype=out`, the type
    its result is rounded to after the dot or None). `out` None: the default (float32)."""
    if isinstance(operands, IntegerType):
        return i32, None
    if out == bf16:
        raise UserError(
            "tl.dot's out_dtype=bfloat16 is unsupported",
            "use out_dtype=tl.float32 or tl.float16 and cast with .to(tl.bfloat16)",
        )
    if operands in (f32, bf16):
        return f32, None
    if operands == f64:
        return f64, None
    if out is None or out == f32:
        return f32, None
    if out == f16:
        return f32, f16
    raise UserError(
        f"tl.dot of {operands} inputs cannot have out_dtype {out}",
        "use out_dtype=tl.float32 or tl.float16",
    )


__all__ = ["dot_types"]
