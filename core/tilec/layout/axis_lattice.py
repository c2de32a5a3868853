"""The facts the `axis-info` analysis tracks per value (`AxisInfo`) and the arithmetic on them,
shared by the analysis (`axis_info.py`) and the per-op transfer rules (`transfer.py`)."""

from __future__ import annotations

from math import gcd

import attrs

from tilec.ir.core import Value
from tilec.ir.types import element_type, shape_of

MAX_DIVISIBILITY = 1 << 62
"""The divisibility of 0 (Triton's `highestPowOf2Divisor(0)`); products are capped at it."""


def highest_pow2_divisor(n: int) -> int:
    """The largest power of two dividing `n` (`MAX_DIVISIBILITY` for 0)."""
    if n == 0:
        return MAX_DIVISIBILITY
    return min(n & -n, MAX_DIVISIBILITY)


@attrs.frozen
class AxisInfo:
    """The facts about one value (see the module doc). `constant` is its value where known."""

    contiguity: tuple[int, ...]
    divisibility: tuple[int, ...]
    constancy: tuple[int, ...]
    constant: int | None = None

    @property
    def rank(self) -> int:
        return len(self.contiguity)

    @classmethod
    def unknown(cls, rank: int, divisibility: int = 1) -> AxisInfo:
        return cls((1,) * rank, (divisibility,) * rank, (1,) * rank)

    @classmethod
    def splat_constant(cls, value: int, shape: tuple[int, ...]) -> AxisInfo:
        dims = shape or (1,)
        return cls((1,) * len(dims), (highest_pow2_divisor(value),) * len(dims), dims, value)

    def join(self, other: AxisInfo) -> AxisInfo:
        """What holds for a value that is either `self` or `other` (loop-carried values)."""
        return AxisInfo(
            tuple(map(gcd, self.contiguity, other.contiguity)),
            tuple(map(gcd, self.divisibility, other.divisibility)),
            tuple(map(gcd, self.constancy, other.constancy)),
            self.constant if self.constant == other.constant else None,
        )

    def __str__(self) -> str:
        text = (
            f"contiguity = {list(self.contiguity)}, divisibility = {list(self.divisibility)}, "
            f"constancy = {list(self.constancy)}"
        )
        return text if self.constant is None else f"{text}, constant = {self.constant}"


def rank_of(value: Value) -> int:
    """The number of dimensions the analysis tracks: a scalar counts as one."""
    return max(1, len(shape_of(value.type)))


def element_bytes(value: Value) -> int:
    """The bytes of one element a pointer (tensor) points to (i1 pointers point to bytes)."""
    pointee = element_type(value.type).pointee  # type: ignore[attr-defined]
    return max(1, getattr(pointee, "width", 8) // 8)
