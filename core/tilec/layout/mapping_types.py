"""`ThreadMapping` and `DimMapping`: which elements of a tensor each thread holds, as data.

`tilec.layout.mapping` (whose module doc explains the fields) computes them for the blocked and
slice layouts, and backends for their matrix-unit layouts (`register_thread_mapping`); all build
on these classes, kept apart so that no mapping module imports another's back.
"""

from __future__ import annotations

import attrs


@attrs.frozen
class DimMapping:
    """How lane and warp ids place a thread along one dimension (see the module doc)."""

    size: int
    lane_div: int
    lane_count: int
    lane_scale: int
    warp_div: int
    warp_count: int
    warp_scale: int

    def thread_offset(self, lane: int, warp: int) -> int:
        lane_coord = (lane // self.lane_div) % self.lane_count
        warp_coord = (warp // self.warp_div) % self.warp_count
        return lane_coord * self.lane_scale + warp_coord * self.warp_scale


@attrs.frozen
class ThreadMapping:
    """The elements of a `shape` tensor each thread holds (see the module doc)."""

    shape: tuple[int, ...]
    dims: tuple[DimMapping, ...]
    hidden: tuple[DimMapping, ...]
    registers: tuple[tuple[int, ...], ...]
    contiguous_dim: int | None
    """The dimension whose elements a thread holds contiguously (the layout's fastest), if any."""
    contiguity: int
    """How many consecutive registers hold consecutive elements along `contiguous_dim`."""

    @property
    def num_registers(self) -> int:
        return len(self.registers)

    def thread_offsets(self, lane: int, warp: int) -> tuple[int, ...]:
        return tuple(d.thread_offset(lane, warp) for d in self.dims)

    def coords(self, lane: int, warp: int) -> list[tuple[int, ...]]:
        """The element coordinates the registers of thread (`lane`, `warp`) hold."""
        return self.coords_at(self.thread_offsets(lane, warp))

    def coords_at(self, base: tuple[int, ...]) -> list[tuple[int, ...]]:
        """The element coordinates the registers of a thread whose offsets are `base` hold."""
        return [
            tuple((r + b) % s for r, b, s in zip(reg, base, self.shape, strict=True))
            for reg in self.registers
        ]

    def owns(self, lane: int, warp: int) -> list[bool]:
        """Per register, whether thread (`lane`, `warp`) owns that element (is not a replica)."""
        if any(h.thread_offset(lane, warp) >= 1 for h in self.hidden):
            return [False] * len(self.registers)
        base = self.thread_offsets(lane, warp)
        return [
            all(r + b < s for r, b, s in zip(reg, base, self.shape, strict=True))
            for reg in self.registers
        ]


def within_shape(
    registers: list[tuple[int, int]], shape: tuple[int, ...]
) -> tuple[tuple[int, int], ...]:
    """The distinct `registers` offsets inside `shape`, in order (a dimension smaller than an
    instruction's extent keeps only the registers inside it)."""
    kept: dict[tuple[int, int], None] = {}
    for reg in registers:
        if all(offset < size for offset, size in zip(reg, shape, strict=True)):
            kept.setdefault(reg, None)
    return tuple(kept)


def check_rank_2(layout: object, shape: tuple[int, ...]) -> None:
    """A `ValueError` unless `shape` is 2-D (the matrix-unit layouts are)."""
    if len(shape) != 2:
        raise ValueError(f"layout {layout} is for 2-D tensors, tensor shape {list(shape)}")


__all__ = ["DimMapping", "ThreadMapping", "check_rank_2", "within_shape"]
