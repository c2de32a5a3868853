"""Blocked layouts for a tensor shape: Triton's default one and the coalesced one of a memory op."""

from __future__ import annotations

from tilec.dialects.gpu import BlockedEncodingAttr
from tilec.ir.core import Value
from tilec.ir.types import shape_of
from tilec.layout.axis_info import AxisInfoResult, element_bytes


def blocked_layout(
    shape: tuple[int, ...],
    size_per_thread: tuple[int, ...],
    order: tuple[int, ...],
    num_warps: int,
    threads_per_warp: int,
) -> BlockedEncodingAttr:
    """Spread the lanes, then the warps, over the dimensions from the fastest (`order[0]`) on,
    as far as the shape needs them; the slowest dimension takes what is left (Triton's
    `BlockedEncodingAttr::get`)."""
    rank = len(shape)
    lanes, warps = [1] * rank, [1] * rank
    remaining_lanes, remaining_warps = threads_per_warp, num_warps
    remaining_threads = num_warps * threads_per_warp
    used_lanes = used_warps = 1
    for i in order[:-1]:
        threads = max(1, min(remaining_threads, max(1, shape[i] // size_per_thread[i])))
        lanes[i] = max(1, min(threads, remaining_lanes))
        warps[i] = max(1, min(threads // lanes[i], remaining_warps))
        remaining_warps //= warps[i]
        remaining_lanes //= lanes[i]
        remaining_threads //= threads
        used_lanes *= lanes[i]
        used_warps *= warps[i]
    lanes[order[-1]] = threads_per_warp // used_lanes
    warps[order[-1]] = num_warps // used_warps
    return BlockedEncodingAttr(tuple(size_per_thread), tuple(lanes), tuple(warps), tuple(order))


def default_layout(
    shape: tuple[int, ...], num_warps: int, threads_per_warp: int
) -> BlockedEncodingAttr:
    """One element a thread, the last dimension fastest (Triton's `getDefaultBlockedEncoding`)."""
    rank = len(shape)
    order = tuple(range(rank - 1, -1, -1))
    return blocked_layout(shape, (1,) * rank, order, num_warps, threads_per_warp)


def contiguity_order(contiguity: tuple[int, ...]) -> tuple[int, ...]:
    """Dimensions by decreasing contiguity; ties keep the last dimension fastest."""
    order = list(range(len(contiguity) - 1, -1, -1))
    order.sort(key=lambda d: -contiguity[d])  # stable
    return tuple(order)


UNALIGNED_BYTES = 4
"""How many consecutive 1-byte elements a thread holds where their alignment allows no vector."""


def coalesced_layout(
    ptr: Value,
    axis_info: AxisInfoResult,
    num_warps: int,
    threads_per_warp: int,
    max_vector_bytes: int,
) -> BlockedEncodingAttr:
    """The layout a load or store through the pointer tensor `ptr` is coalesced in (Triton's
    Coalesce pass): the most contiguous dimension fastest, and each thread holding as many
    consecutive elements as one aligned vector access allows (no more than the tensor gives
    each thread)."""
    shape = shape_of(ptr.type)
    info = axis_info.get(ptr)
    order = contiguity_order(info.contiguity)
    fastest = order[0]
    size = element_bytes(ptr)
    alignment = max(info.divisibility[fastest] // size, 1)
    contiguous = min(info.contiguity[fastest], shape[fastest])
    per_thread = min(alignment, contiguous, max(max_vector_bytes // size, 1))
    if size == 1 and alignment < UNALIGNED_BYTES:
        # Bytes no vector can load (a row of an odd length): each thread still takes a few
        # consecutive ones, loaded one by one from one pointer plus constants, rather than a
        # pointer (two registers, carried through a loop) for every byte.
        per_thread = min(contiguous, UNALIGNED_BYTES)
    numel = 1
    for extent in shape:
        numel *= extent
    per_thread = max(1, min(per_thread, max(numel // (num_warps * threads_per_warp), 1)))
    per_thread = 1 << (per_thread.bit_length() - 1)  # hints need not be powers of two
    size_per_thread = [1] * len(shape)
    size_per_thread[fastest] = per_thread
    return blocked_layout(shape, tuple(size_per_thread), order, num_warps, threads_per_warp)
