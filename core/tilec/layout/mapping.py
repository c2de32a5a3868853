"""Which elements of a tensor each thread holds under a layout: the one place that decides it.

For a layout and a tensor shape, `thread_mapping` gives:

- per dimension, how the thread's lane id and warp id place it (`DimMapping`): the thread's
  *unwrapped* offset along dimension d is
  `((lane // lane_div) % lane_count) * lane_scale + ((warp // warp_div) % warp_count) * warp_scale`;
- `registers`: for each element a thread holds (its registers, in order), the constant offset per
  dimension that is added to the thread's offset.

The element a register holds is `(register_offset + thread_offset) % shape` per dimension. A
thread *owns* a register's element when `register_offset + thread_offset < shape` in every
dimension, including the `hidden` dimensions a slice layout removed (extent 1 there): exactly one
thread owns each element, the others hold replicas. Stores and atomics are done by owners only.

Register order: dimensions in the layout's `order` (fastest first); along a dimension, the
`sizePerThread` contiguous elements first, then the repetitions of the layout's tile. So the
contiguous elements a thread loads with one vector access are consecutive registers.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from functools import lru_cache
from typing import Any

from tilec.dialects.gpu import BlockedEncodingAttr, SliceEncodingAttr
from tilec.layout.mapping_types import DimMapping, ThreadMapping

MappingFunction = Callable[[Any, tuple[int, ...]], ThreadMapping]
MAPPINGS: dict[type, MappingFunction] = {}
"""Per layout class, the function giving its `ThreadMapping` for a shape (the most derived
registered class of a layout's type wins)."""


def register_thread_mapping(layout_class: type) -> Callable[[MappingFunction], MappingFunction]:
    """Register the decorated `function(layout, shape) -> ThreadMapping` as the thread mapping of
    `layout_class` and its subclasses. A backend registers those of its own layouts (matrix-unit
    fragments: `tilec.lowering.matrix_units` describes the contract) when its plugin loads."""

    def register(function: MappingFunction) -> MappingFunction:
        MAPPINGS[layout_class] = function
        _thread_mapping.cache_clear()
        return function

    return register


def thread_mapping(layout: object, shape: tuple[int, ...]) -> ThreadMapping:
    """The `ThreadMapping` of a layout for a tensor `shape`: `#gpu.blocked` and `#gpu.slice`
    here, the matrix-unit layouts where they are registered (`register_thread_mapping`)."""
    return _thread_mapping(layout, tuple(shape))


@lru_cache(maxsize=4096)
def _thread_mapping(layout: object, shape: tuple[int, ...]) -> ThreadMapping:
    for cls in type(layout).__mro__:
        function = MAPPINGS.get(cls)
        if function is not None:
            return function(layout, shape)
    raise TypeError(
        f"no thread mapping for layout {layout}: its backend registers one with "
        "tilec.layout.mapping.register_thread_mapping when its plugin loads"
    )


@register_thread_mapping(BlockedEncodingAttr)
def _blocked(layout: BlockedEncodingAttr, shape: tuple[int, ...]) -> ThreadMapping:
    if len(shape) != layout.rank:
        raise ValueError(f"layout {layout} has rank {layout.rank}, tensor shape {list(shape)}")
    rank = layout.rank
    lane_div, warp_div = [0] * rank, [0] * rank
    lane_stride = warp_stride = 1
    for d in layout.order:
        lane_div[d], warp_div[d] = lane_stride, warp_stride
        lane_stride *= layout.threads_per_warp[d]
        warp_stride *= layout.warps_per_cta[d]
    tile = layout.tile()
    dims, per_dim = [], []
    for d in range(rank):
        spt, tpw, size = layout.size_per_thread[d], layout.threads_per_warp[d], shape[d]
        dims.append(
            DimMapping(size, lane_div[d], tpw, spt, warp_div[d], layout.warps_per_cta[d], spt * tpw)
        )
        elements = min(spt, size)
        repetitions = max(1, size // tile[d])
        per_dim.append([r * tile[d] + e for r in range(repetitions) for e in range(elements)])
    # itertools.product varies the last iterable fastest: list dims slowest to fastest.
    slow_to_fast = list(reversed(layout.order))
    registers = []
    for combo in itertools.product(*(per_dim[d] for d in slow_to_fast)):
        offsets = [0] * rank
        for d, value in zip(slow_to_fast, combo, strict=True):
            offsets[d] = value
        registers.append(tuple(offsets))
    fastest = layout.order[0]
    contiguity = min(layout.size_per_thread[fastest], shape[fastest])
    return ThreadMapping(shape, tuple(dims), (), tuple(registers), fastest, contiguity)


@register_thread_mapping(SliceEncodingAttr)
def _slice(layout: SliceEncodingAttr, shape: tuple[int, ...]) -> ThreadMapping:
    dim = layout.dim
    parent = _thread_mapping(layout.parent, (*shape[:dim], 1, *shape[dim:]))
    dims = parent.dims[:dim] + parent.dims[dim + 1 :]
    registers = tuple(reg[:dim] + reg[dim + 1 :] for reg in parent.registers)
    contiguous = parent.contiguous_dim
    if contiguous == dim:
        contiguous_dim, contiguity = None, 1
    else:
        contiguous_dim = None if contiguous is None else contiguous - (contiguous > dim)
        contiguity = parent.contiguity
    return ThreadMapping(
        shape, dims, (*parent.hidden, parent.dims[dim]), registers, contiguous_dim, contiguity
    )
