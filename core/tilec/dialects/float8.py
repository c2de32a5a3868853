"""`tile.fp_to_fp`: conversions to and from the 8-bit float types (Triton's `tt.fp_to_fp`).

The 8-bit floats (`f8E4M3FN`, `f8E5M2`, `f8E4M3FNUZ`, `f8E5M2FNUZ`, `f8E4M3B15`) take part in no
arithmetic: a kernel loads them, converts them to f16/bf16/f32/f64 with this op, computes, and
converts back. Decoding is exact; encoding rounds as `tilec.ir.float8` defines (nearest even and
saturating; e4b15 as Triton's software conversion), the only `rounding` being "rtne".
"""

from __future__ import annotations

from tilec.dialects.arith import CastOp
from tilec.ir.attributes import StringAttr
from tilec.ir.core import VerifyError, attr_def, register_op
from tilec.ir.types import Float8Type, FloatType, element_type

ROUNDING_MODES = ("rtne",)


@register_op
class FpToFpOp(CastOp):
    """`%y = tile.fp_to_fp %x {rounding = "rtne"} : tensor<128xf8E4M3FN>`: a float to or from an
    8-bit float (or between two of them); `rounding` is given where the result is 8-bit."""

    name = "tile.fp_to_fp"
    rounding = attr_def(StringAttr, optional=True)
    source_kind = (FloatType, Float8Type)
    result_kind = (FloatType, Float8Type)
    width_rule = "any"

    def verify_(self) -> None:
        super().verify_()
        src, dst = element_type(self.source.type), element_type(self.result.type)
        if not isinstance(src, Float8Type) and not isinstance(dst, Float8Type):
            raise VerifyError(f"converts {src} to {dst}: neither is an 8-bit float", self)
        if src == dst:
            raise VerifyError(f"converts {src} to itself", self)
        rounding = self.attributes.get("rounding")
        if isinstance(dst, Float8Type) and rounding is None:
            raise VerifyError(f"a conversion to {dst} needs a 'rounding' attribute", self)
        if rounding is not None and rounding.value not in ROUNDING_MODES:  # type: ignore[attr-defined]
            raise VerifyError(
                f"rounding '{rounding.value}' is not one of {', '.join(ROUNDING_MODES)}",  # type: ignore[attr-defined]
                self,
            )

    def fold(self, constants):
        return None
