"""Pointer tensors kept as base plus offsets (`tilec_interp.pointers`) behave like byte
addresses in every use: loops, helpers, selects, wide and unsigned offsets, masks, and faults."""

import re

import numpy as np
import pointer_kernels as k
import pytest

from tilec_interp.memory import InterpreterError


def test_pointers_advanced_in_a_loop(rng):
    block, programs, steps = 64, 3, 5
    x = rng.standard_normal(block * programs + 4 * steps).astype(np.float32)
    out = np.zeros(block * programs, np.float32)
    k.advance_in_loop[(programs,)](x, out, steps, BLOCK=block, backend="interp")
    offs = np.arange(block * programs)
    expected = sum(x[offs + 4 * s] for s in range(steps))
    np.testing.assert_allclose(out, expected, rtol=1e-6)


def test_pointers_selected_between_buffers_and_passed_to_helpers(rng):
    block, n = 32, 100
    x = rng.standard_normal(n).astype(np.float32)
    y = rng.standard_normal(n).astype(np.float32)
    out = np.zeros(n, np.float32)
    k.select_pointers[(4,)](x, y, out, n, BLOCK=block, backend="interp")
    offs = np.arange(n)
    by_program = np.where((offs // block) % 2 == 0, x, y)
    by_lane = np.where(offs % 2 == 0, x, y)
    np.testing.assert_array_equal(out, by_program + np.float32(1000.0) * by_lane)


@pytest.mark.parametrize("dtype", [np.int64, np.uint32, np.int16])
def test_gather_with_offsets_of_other_dtypes(rng, dtype):
    x = rng.standard_normal(1000).astype(np.float32)
    offsets = rng.integers(0, 1000, 128).astype(dtype)
    out = np.zeros(128, np.float32)
    k.wide_offsets[(1,)](x, out, offsets, BLOCK=128, backend="interp")
    np.testing.assert_array_equal(out, x[offsets.astype(np.int64)])


def test_masked_off_lanes_may_point_anywhere(rng):
    x = rng.standard_normal(40).astype(np.float32)
    out = np.zeros(64, np.float32)
    k.masked_far_lanes[(1,)](x, out, 40, BLOCK=64, backend="interp")
    np.testing.assert_array_equal(out, np.r_[x, np.full(24, 7.0, np.float32)])


def test_out_of_bounds_lane_is_reported_with_its_element(rng):
    x = rng.standard_normal(40).astype(np.float32)
    out = np.zeros(64, np.float32)
    with pytest.raises(InterpreterError) as info:
        k.masked_far_lanes[(1,)](x, out, 41, BLOCK=64, backend="interp")
    text = str(info.value)
    assert re.match(
        r"\S*pointer_kernels\.py:\d+:\d+: out-of-bounds tile.load in program \(0,\), "
        r"element \(40,\)",
        text,
    ), text
    assert "at element offset 40 of a buffer of 40 elements" in text


def test_loop_pointer_running_off_the_end_is_reported():
    x = np.zeros(64, np.float32) + 1
    out = np.zeros(64, np.float32)
    with pytest.raises(InterpreterError, match=r"out-of-bounds tile\.load"):
        k.advance_in_loop[(1,)](x, out, 3, BLOCK=64, backend="interp")


def test_fully_masked_load_from_an_empty_buffer():
    x = np.zeros(0, np.float32)
    out = np.zeros(64, np.float32)
    k.masked_far_lanes[(1,)](x, out, 0, BLOCK=64, backend="interp")
    np.testing.assert_array_equal(out, np.full(64, 7.0, np.float32))
