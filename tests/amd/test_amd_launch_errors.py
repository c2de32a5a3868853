"""Launch-time user mistakes on the amd backend (a fake `hip`, no GPU) are tilec errors (issue 14)
that are still the builtin or `HipError` they were: more LDS, work-items or programs than the
device allows, a grid that is no grid."""

from __future__ import annotations

import pytest
from fake_hip import FakeHip

import tilec
from tilec_amd.driver import HipDriver, HipError


@pytest.fixture
def hip_driver():
    return HipDriver(FakeHip())


def test_too_much_lds_is_a_device_limit_error_and_a_hip_error(hip_driver):
    with pytest.raises(tilec.DeviceLimitError) as info:
        hip_driver.load(b"\x7fELF k", "k", shared_bytes=70000)
    assert isinstance(info.value, HipError) and isinstance(info.value, RuntimeError)
    assert "kernel 'k' needs 70000 bytes of LDS" in str(info.value)


def test_grid_and_work_group_limits_are_device_limit_errors(hip_driver):
    kernel = hip_driver.load(b"\x7fELF k", "k", signature=["i32"])
    with pytest.raises(tilec.DeviceLimitError) as info:
        hip_driver.launch(kernel, (1, 65536), 1, 64, [1])
    assert isinstance(info.value, HipError)
    assert "grid of kernel 'k' is 65536 programs along y" in str(info.value)
    with pytest.raises(tilec.DeviceLimitError, match="kernel 'k' needs 2048 work-items"):
        hip_driver.launch(kernel, (1,), 32, 64, [1])


@pytest.mark.parametrize("grid", [(1, 1, 1, 1), (-1,)])
def test_a_grid_out_of_range_is_a_grid_error(hip_driver, grid):
    kernel = hip_driver.load(b"\x7fELF k", "k", signature=["i32"])
    with pytest.raises(tilec.GridValueError) as info:
        hip_driver.launch(kernel, grid, 1, 64, [1])
    assert isinstance(info.value, tilec.GridError) and isinstance(info.value, ValueError)
    assert "grid of kernel 'k' must be 1 to 3 sizes >= 0" in str(info.value)


def test_the_driver_error_of_a_failed_call_is_no_tilec_error(hip_driver):
    """A failing HIP call is the driver's or tilec's problem, not the user's."""
    with pytest.raises(HipError) as info:
        hip_driver.load(b"not an elf", "k")
    assert not isinstance(info.value, tilec.TilecError)
