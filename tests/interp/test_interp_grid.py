"""The interp backend's grid limit: program ids are i32 (issue 22, item 5: a grid of (1, 2**40)
was a bare OverflowError, after the launch had started)."""

import numpy as np
import pytest

import tilec
import tilec.language as tl


@tilec.jit
def count_programs(out):
    tl.store(out, tl.num_programs(0) + tl.num_programs(1) + tl.num_programs(2))


@pytest.mark.parametrize(("grid", "axis"), [((1, 2**40), 1), ((2**31,), 0), ((1, 1, 2**63), 2)])
def test_a_grid_past_the_i32_program_ids_is_a_grid_error(grid, axis):
    out = np.zeros(1, np.int32)
    with pytest.raises(tilec.GridValueError) as info:
        count_programs[grid](out, backend="interp")
    assert isinstance(info.value, ValueError)
    message = str(info.value)
    assert f"is {grid[axis]} programs along axis {axis}" in message
    assert "at most 2147483647 (2**31 - 1) along an axis" in message
    assert out[0] == 0


def test_an_empty_grid_at_the_limit_runs_nothing():
    out = np.zeros(1, np.int32)
    count_programs[(0, 2**31 - 1)](out, backend="interp")
    assert out[0] == 0
    count_programs[(2, 3)](out, backend="interp")
    assert out[0] == 6
