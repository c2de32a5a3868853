"""What the matrix-unit layouts of every vendor share, and the swizzled shared-memory layout.

A backend that has a matrix unit (tensor cores, matrix cores) describes its register fragments
as layout attributes of its own (`register_attribute`), defined in its plugin:

- an accumulator layout, a subclass of `MatrixLayoutAttr` here (`warps_per_cta`, `lanes`,
  `instr_mn`; the base gives `rank`, `num_warps`, `tile()` and the warp grid's check);
- an operand layout, a subclass of `OperandEncodingAttr` here (`{opIdx, parent, kWidth}`), so
  that the core's passes recognise operands of any vendor (`pipeline-loops` pipelines the loads
  that feed them) without naming the vendor;

and registers their thread mappings (`tilec.layout.mapping.register_thread_mapping`) and the
lowerings on them (`tilec.lowering.matrix_units`). `docs/` and `tilec.lowering.matrix_units`
describe the whole contract.

`#gpu.swizzled_shared<{transposed = true}>` is a shared-memory layout of the core's rings.
"""

from __future__ import annotations

from typing import Any, ClassVar

import attrs

from tilec.dialects.gpu import (
    LayoutEncodingAttr,
    SharedEncodingAttr,
    check_parameter_keys,
    int_parameter,
    is_power_of_two,
    parameter,
)
from tilec.ir.attributes import Attribute, IntegerAttr, register_attribute


class MatrixLayoutAttr(LayoutEncodingAttr):
    """What the accumulator layouts of the matrix-instruction families share: a 2-D grid of
    `warps_per_cta` warps, numbered row-major, each holding one `instr_mn` instruction tile, the
    whole `tile()` repeating over larger tensors. A subclass declares `warps_per_cta` (a
    `parameter`), `lanes` and an `instr_shape` parameter or the `instr_mn` property, and calls
    `_check_warps()` from its `__attrs_post_init__`."""

    warps_per_cta: tuple[int, ...]

    def _check_warps(self) -> None:
        warps = self.warps_per_cta
        if len(warps) != 2 or not all(map(is_power_of_two, warps)):
            raise ValueError(f"'warpsPerCTA' must be two powers of two, got {list(warps)}")

    @property
    def rank(self) -> int:
        return 2

    @property
    def num_warps(self) -> int:
        return self.warps_per_cta[0] * self.warps_per_cta[1]

    @property
    def instr_mn(self) -> tuple[int, int]:
        """The M x N of one instruction (one warp's accumulator tile): by default the first two
        numbers of the layout's `instr_shape` (an `instrShape` parameter)."""
        shape = getattr(self, "instr_shape", None)
        if shape is None:
            raise NotImplementedError(
                f"{type(self).__name__} has no instr_shape: define its instr_mn property"
            )
        return shape[0], shape[1]

    def tile(self) -> tuple[int, int]:
        """The extent all warps cover once, before repeating."""
        m, n = self.instr_mn
        return m * self.warps_per_cta[0], n * self.warps_per_cta[1]


@attrs.frozen(repr=False)
class OperandEncodingAttr(LayoutEncodingAttr):
    """What the operand layouts of the matrix-instruction families share: `{opIdx, parent,
    kWidth}` parameters, rank 2, and the parent's warps and lanes. A subclass names its
    `parent_class` (and `parent_description` for errors) and checks `kWidth` its way."""

    parent_class: ClassVar[type] = LayoutEncodingAttr
    parent_description: ClassVar[str] = ""
    staged_b_transposed: ClassVar[bool] = False
    """Whether a ring of B operands staged through registers (`pipeline-loops` on a target
    without asynchronous copies) is stored transposed, K contiguous, so that each lane's K
    elements are one shared-memory vector read."""

    op_idx: int
    parent: Any
    k_width: int

    def _check_operand(self, found: str = "") -> None:
        if self.op_idx not in (0, 1):
            raise ValueError(f"'opIdx' must be 0 (A) or 1 (B), got {self.op_idx}")
        if not isinstance(self.parent, self.parent_class):
            raise ValueError(f"'parent' must be a {self.parent_description} layout{found}")

    @property
    def rank(self) -> int:
        return 2

    @property
    def num_warps(self) -> int:
        return self.parent.num_warps

    @property
    def lanes(self) -> int:
        return self.parent.lanes

    def parameters(self) -> dict[str, Attribute]:
        return {
            "opIdx": IntegerAttr(self.op_idx),
            "parent": self.parent,
            "kWidth": IntegerAttr(self.k_width),
        }

    @classmethod
    def from_parameters(cls, params: dict[str, Attribute]) -> Any:
        check_parameter_keys(params, ("opIdx", "parent", "kWidth"))
        parent = params["parent"]
        if not isinstance(parent, cls.parent_class):
            raise ValueError(f"'parent' must be a {cls.parent_description} layout")
        return cls(
            int_parameter("opIdx", params["opIdx"]),
            parent,
            int_parameter("kWidth", params["kWidth"]),
        )


@register_attribute
@attrs.frozen(repr=False)
class SwizzledSharedEncodingAttr(SharedEncodingAttr):
    """`#gpu.swizzled_shared<{transposed = true}>`: a ring slot stored as a `SwizzledTile` of
    the transposed tile (the first dimension contiguous), so that operand fragments running
    along it are read as vectors (AMD's B operand, K x N, read along K). A `!gpu.memdesc`
    without an encoding is the same with `transposed = false` (the last dimension contiguous).
    """

    name: ClassVar[str] = "gpu.swizzled_shared"
    alias_prefix: ClassVar[str] = "swizzled"

    transposed: bool = parameter("transposed", "bool", default=False)


__all__ = [
    "MatrixLayoutAttr",
    "OperandEncodingAttr",
    "SwizzledSharedEncodingAttr",
    "int_parameter",
]
