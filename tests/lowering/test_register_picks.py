"""`register_picks` (layout ops that only pick registers) against a thread-by-thread reference,
and the work it does: once per distinct thread placement, not once per thread (issue 24: the
per-thread enumeration was the largest Python cost of a wgmma matmul's LLVM lowering)."""

from __future__ import annotations

import pytest

import tilec.dialects  # noqa: F401
from tilec.dialects.gpu import BlockedEncodingAttr, SliceEncodingAttr
from tilec.layout.mapping import thread_mapping
from tilec.layout.mapping_types import ThreadMapping
from tilec.lowering.layout_ops import register_picks


def reference_picks(src, dst, weights, lanes, warps):
    """Thread by thread: each thread's result register takes the first source register of the
    same thread holding its element; one answer for every thread, else None."""
    src_map, dst_map = thread_mapping(*src), thread_mapping(*dst)
    strides, step = [], 1
    for extent in reversed(src[1]):
        strides.insert(0, step)
        step *= extent
    answers = set()
    for warp in range(warps):
        for lane in range(lanes):
            held: dict[int, int] = {}
            for index, coord in enumerate(src_map.coords(lane, warp)):
                held.setdefault(sum(c * s for c, s in zip(coord, strides, strict=True)), index)
            answers.add(
                tuple(
                    held.get(sum(c * w for c, w in zip(coord, weights, strict=True)), -1)
                    for coord in dst_map.coords(lane, warp)
                )
            )
    if len(answers) != 1:
        return None
    (picks,) = answers
    return None if -1 in picks else picks


ROWS_8 = BlockedEncodingAttr([1, 8], [4, 8], [8, 1], [1, 0])
COLS_8 = BlockedEncodingAttr([8, 1], [8, 4], [1, 8], [0, 1])
WIDE_4 = BlockedEncodingAttr([1, 4], [4, 8], [2, 2], [1, 0])
ONE_D = BlockedEncodingAttr([2], [32], [8], [0])

CASES = [
    # expand_dims of a slice, then a broadcast (8 warps, shapes smaller than the layout tile:
    # thread offsets wrap around the shape and threads replicate elements)
    ((SliceEncodingAttr(1, ROWS_8), (16,)), (ROWS_8, (16, 1)), (1, 0), 8),
    ((ROWS_8, (16, 1)), (ROWS_8, (16, 64)), (1, 0), 8),
    ((SliceEncodingAttr(0, ROWS_8), (64,)), (ROWS_8, (1, 64)), (0, 1), 8),
    ((ROWS_8, (1, 64)), (ROWS_8, (128, 64)), (0, 1), 8),
    # a 1-D layout on a shape smaller and larger than its 512 elements
    ((ONE_D, (64,)), (ONE_D, (64,)), (1,), 8),
    ((ONE_D, (2048,)), (ONE_D, (2048,)), (1,), 8),
    # transposes: within a thread's registers or between threads
    ((WIDE_4, (16, 16)), (WIDE_4, (16, 16)), (1, 16), 4),
    ((WIDE_4, (16, 16)), (WIDE_4, (16, 16)), (16, 1), 4),
    ((ROWS_8, (64, 64)), (COLS_8, (64, 64)), (64, 1), 8),
    ((ROWS_8, (32, 64)), (ROWS_8, (64, 32)), (1, 64), 8),
]


@pytest.mark.parametrize(("src", "dst", "weights", "warps"), CASES)
def test_register_picks_match_the_thread_by_thread_answer(src, dst, weights, warps):
    assert register_picks.__wrapped__(src, dst, weights, 32, warps) == reference_picks(
        src, dst, weights, 32, warps
    )


def test_the_cases_cover_picks_and_moves():
    answers = [register_picks.__wrapped__(s, d, w, 32, n) for s, d, w, n in CASES]
    assert any(a is None for a in answers) and any(a for a in answers)


def test_register_picks_work_per_distinct_thread_placement(monkeypatch):
    """256 threads, of which only a few distinct placements on a (16, 64) tensor: the register
    coordinates are worked out a few times, not twice per thread."""
    calls = []
    for name in ("coords", "coords_at"):
        original = getattr(ThreadMapping, name)

        def counted(self, *args, _original=original):
            calls.append(1)
            return _original(self, *args)

        monkeypatch.setattr(ThreadMapping, name, counted)
    src, dst = (ROWS_8, (16, 1)), (ROWS_8, (16, 64))
    assert register_picks.__wrapped__(src, dst, (1, 0), 32, 8) is not None
    assert len(calls) <= 2 * 16
