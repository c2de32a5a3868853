"""`gpu.*`: layouts (tensor encodings) and the ops that exist only once tensors have layouts (gir).

A layout says which thread of a block holds which element of a tensor, as in Triton's
TritonGPU dialect:

- `#gpu.blocked<{sizePerThread = [4], threadsPerWarp = [32], warpsPerCTA = [4], order = [0]}>`:
  each thread holds `sizePerThread` contiguous elements per dimension, the lanes of a warp and the
  warps of a block (CTA) tile the tensor in the given `order` (fastest-varying dimension first).
  The tile the layout covers is `sizePerThread * threadsPerWarp * warpsPerCTA` per dimension; a
  tensor larger than the tile wraps around (each thread holds several repetitions), a smaller one
  is replicated (several threads hold the same element).
- `#gpu.slice<{dim = 1, parent = #blocked}>`: the layout of a tensor with dimension `dim` of the
  parent removed, as a reduction along `dim` produces; threads that differ only along `dim` hold
  the same elements.

`tilec.layout.mapping` computes which elements each thread holds.
"""

from __future__ import annotations

from typing import Any, ClassVar

import attrs

from tilec.ir.attributes import ArrayAttr, Attribute, DialectAttr, IntegerAttr, register_attribute
from tilec.ir.core import Operation, VerifyError, operand_def, register_op, result_def
from tilec.ir.traits import TENSOR, Pure
from tilec.ir.types import TensorType, i1


def ints_parameter(name: str, value: Attribute | None) -> tuple[int, ...]:
    """The integers of layout parameter `name` (an array attribute, `[4, 1]`); a `ValueError`
    naming it otherwise. A layout's `from_params` reads its array parameters with it."""
    if not isinstance(value, ArrayAttr) or not all(
        isinstance(e, IntegerAttr) for e in value.elements
    ):
        raise ValueError(f"'{name}' must be an array of integers, like [4]")
    return tuple(value.ints())


def check_parameter_keys(params: dict[str, Attribute], expected: tuple[str, ...]) -> None:
    """A layout's parameters are exactly `expected`: raise ValueError naming the first unknown
    or missing one."""
    unknown = sorted(set(params) - set(expected))
    if unknown:
        raise ValueError(f"unknown parameter '{unknown[0]}' (expected {', '.join(expected)})")
    missing = [k for k in expected if k not in params]
    if missing:
        raise ValueError(f"missing parameter '{missing[0]}'")


def int_array(values: tuple[int, ...]) -> ArrayAttr:
    """The array attribute of `values`: a layout's array parameter, as its `params()` gives it."""
    return ArrayAttr(tuple(IntegerAttr(v) for v in values))


def is_power_of_two(v: int) -> bool:
    """Whether `v` is a positive power of two (warps, lanes and tile sizes of layouts are)."""
    return v > 0 and not v & (v - 1)


def int_parameter(name: str, value: Attribute) -> int:
    """The integer of layout parameter `name`; a `ValueError` if it is not one."""
    if not isinstance(value, IntegerAttr):
        raise ValueError(f"'{name}' must be an integer")
    return value.value


def bool_parameter(name: str, value: Attribute) -> bool:
    """The flag of layout parameter `name` (`true` or `false`); a `ValueError` otherwise."""
    if not isinstance(value, IntegerAttr) or value.type != i1:
        raise ValueError(f"'{name}' must be true or false")
    return bool(value.value)


_PARAMETER_KINDS = {  # kind -> (write the field's value, read the parsed attribute)
    "int": (IntegerAttr, int_parameter),
    "ints": (int_array, ints_parameter),
    "bool": (lambda flag: IntegerAttr(int(flag), i1), bool_parameter),
}
_PARAMETER = "tilec.parameter"  # the attrs metadata key of a declared parameter


def parameter(key: str, kind: str = "int", **field: Any) -> Any:
    """An attrs field of an `EncodingAttr` that is its parameter `key` in the textual IR: `kind`
    `"int"` (`4`), `"ints"` (an array, `[4, 1]`, held as a tuple) or `"bool"` (`true`); `field`
    as `attrs.field`'s (`default=`). `parameters()` and `from_parameters()` follow from the
    declared fields, in their order:
    `warps_per_cta: tuple[int, ...] = parameter("warpsPerCTA", "ints")`."""
    if kind not in _PARAMETER_KINDS:
        raise ValueError(f"parameter kind must be one of {', '.join(_PARAMETER_KINDS)}: {kind!r}")
    if kind == "ints":
        field.setdefault("converter", tuple)
    return attrs.field(metadata={_PARAMETER: (key, kind)}, **field)


class EncodingAttr(DialectAttr):
    """A tensor encoding (a register layout or a shared-memory one) whose parameters are its
    attrs fields declared with `parameter()`: it prints and parses them from the declaration.
    A subclass whose parameters are not such (a parent layout) defines `parameters()` and
    `from_parameters()` itself."""

    @classmethod
    def _declared(cls) -> list[tuple[str, str, str]]:
        """(field name, key, kind) of every declared parameter, in field order."""
        return [
            (f.name, *f.metadata[_PARAMETER])
            for f in attrs.fields(cls)  # type: ignore[arg-type]
            if _PARAMETER in f.metadata
        ]

    def parameters(self) -> dict[str, Attribute]:
        return {
            key: _PARAMETER_KINDS[kind][0](getattr(self, name))
            for name, key, kind in self._declared()
        }

    @classmethod
    def from_parameters(cls, params: dict[str, Attribute]) -> Any:
        declared = cls._declared()
        check_parameter_keys(params, tuple(key for _, key, _ in declared))
        return cls(
            **{name: _PARAMETER_KINDS[kind][1](key, params[key]) for name, key, kind in declared}
        )


class LayoutEncodingAttr(EncodingAttr):
    """A register layout: a tensor encoding with a `rank`, `num_warps` and `lanes`, whose
    thread -> element mapping `tilec.layout.mapping.thread_mapping` knows."""

    keeps_loop_values: ClassVar[bool] = False
    """Whether the values of a loop stay in this layout (a matrix unit's accumulator layout that
    asks for it, and its slices): `sink-conversions` sinks the conversions out of it to their
    users, and a conversion from it is tried as register picks first (its lanes may hold the
    elements of the next dot's operand fragment)."""
    rebuilds_shape_ops: ClassVar[bool] = True
    """Whether `remove-layout-conversions` may rebuild a broadcast or `expand_dims` in this
    layout instead of converting its result (False for an operand layout whose conversion has a
    faster path of its own, such as NVIDIA's `ldmatrix` reads)."""


def in_loop_value_family(layout: object) -> bool:
    """A layout whose `keeps_loop_values` is set, or a slice (of a slice ...) of one."""
    while isinstance(layout, SliceEncodingAttr):
        layout = layout.parent
    return isinstance(layout, LayoutEncodingAttr) and layout.keeps_loop_values


@register_attribute
@attrs.frozen(repr=False)
class BlockedEncodingAttr(LayoutEncodingAttr):
    """`#gpu.blocked<{sizePerThread, threadsPerWarp, warpsPerCTA, order}>` (see the module doc)."""

    name: ClassVar[str] = "gpu.blocked"
    alias_prefix: ClassVar[str] = "blocked"

    size_per_thread: tuple[int, ...] = parameter("sizePerThread", "ints")
    threads_per_warp: tuple[int, ...] = parameter("threadsPerWarp", "ints")
    warps_per_cta: tuple[int, ...] = parameter("warpsPerCTA", "ints")
    order: tuple[int, ...] = parameter("order", "ints")

    def __attrs_post_init__(self) -> None:
        rank = len(self.order)
        fields = {
            "sizePerThread": self.size_per_thread,
            "threadsPerWarp": self.threads_per_warp,
            "warpsPerCTA": self.warps_per_cta,
        }
        for key, values in fields.items():
            if len(values) != rank:
                raise ValueError(f"'{key}' has {len(values)} entries but 'order' has {rank}")
            if not all(is_power_of_two(v) for v in values):
                raise ValueError(f"'{key}' entries must be powers of two, got {list(values)}")
        if sorted(self.order) != list(range(rank)):
            raise ValueError(f"'order' must be a permutation of 0..{rank - 1}, got {self.order}")

    @property
    def rank(self) -> int:
        return len(self.order)

    @property
    def num_warps(self) -> int:
        n = 1
        for w in self.warps_per_cta:
            n *= w
        return n

    @property
    def lanes(self) -> int:
        n = 1
        for t in self.threads_per_warp:
            n *= t
        return n

    def tile(self) -> tuple[int, ...]:
        """The extent the layout covers once per dimension, before wrapping or replicating."""
        return tuple(
            s * t * w
            for s, t, w in zip(
                self.size_per_thread, self.threads_per_warp, self.warps_per_cta, strict=True
            )
        )


@register_attribute
@attrs.frozen(repr=False)
class SliceEncodingAttr(LayoutEncodingAttr):
    """`#gpu.slice<{dim = 1, parent = #blocked}>`: the parent layout with dimension `dim` removed."""

    name: ClassVar[str] = "gpu.slice"
    alias_prefix: ClassVar[str] = "slice"

    dim: int
    parent: DialectAttr

    def __attrs_post_init__(self) -> None:
        parent_rank = getattr(self.parent, "rank", None)
        if parent_rank is None:
            raise ValueError(f"'parent' must be a layout, got {self.parent}")
        if not 0 <= self.dim < parent_rank:
            raise ValueError(f"'dim' must be in [0, {parent_rank}), got {self.dim}")

    @property
    def rank(self) -> int:
        return self.parent.rank - 1  # type: ignore[attr-defined]

    @property
    def num_warps(self) -> int:
        return self.parent.num_warps  # type: ignore[attr-defined]

    @property
    def lanes(self) -> int:
        return self.parent.lanes  # type: ignore[attr-defined]

    def parameters(self) -> dict[str, Attribute]:
        return {"dim": IntegerAttr(self.dim), "parent": self.parent}

    @classmethod
    def from_parameters(cls, params: dict[str, Attribute]) -> SliceEncodingAttr:
        dim, parent = params.get("dim"), params.get("parent")
        if not isinstance(dim, IntegerAttr):
            raise ValueError("'dim' must be an integer")
        if not isinstance(parent, LayoutEncodingAttr):
            raise ValueError("'parent' must be a layout (#gpu.blocked, #gpu.slice, #gpu.mma)")
        if set(params) - {"dim", "parent"}:
            raise ValueError(f"unknown parameter '{sorted(set(params) - {'dim', 'parent'})[0]}'")
        return cls(dim.value, parent)


LAYOUTS = (BlockedEncodingAttr, SliceEncodingAttr)


class SharedEncodingAttr(EncodingAttr):
    """A tensor encoding that places the tensor in shared memory, not in registers (the result
    of a `gpu.convert_layout` or `gpu.local_load`, read by an instruction from there)."""


def layout_of(value_type: object) -> DialectAttr | None:
    """The layout of a tensor type, or None for scalars and tensors without one."""
    if isinstance(value_type, TensorType) and isinstance(value_type.encoding, LayoutEncodingAttr):
        return value_type.encoding
    return None


@register_op
class ConvertLayoutOp(Operation):
    """`%y = gpu.convert_layout %x : tensor<128xf32, #blocked1>`: the same tensor, another layout.

    Lowered through shared memory when threads must exchange elements.
    """

    name = "gpu.convert_layout"
    source = operand_def(TENSOR)
    result = result_def(TENSOR)
    traits = (Pure(),)

    def __init__(self, source, result_type: TensorType):
        super().__init__(operands=[source], result_types=[result_type])

    def verify_(self) -> None:
        src, res = self.operands[0].type, self.results[0].type
        if src.shape != res.shape or src.element_type != res.element_type:  # type: ignore[attr-defined]
            raise VerifyError(
                f"source {src} and result {res} must differ only in their layout", self
            )
        if layout_of(res) is None and not isinstance(res.encoding, SharedEncodingAttr):  # type: ignore[attr-defined]
            raise VerifyError(f"result {res} must have a layout", self)
