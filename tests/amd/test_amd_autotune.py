"""`@tilec.autotune` on the AMD backend without a GPU (the fake `hip` of fake_hip.py, an MI300X):
the configs are compiled for the device's gfx942, a config whose LDS exceeds the arch's 64 KB is
skipped with that reason instead of failing the launch, the others are timed with HIP events,
and the chosen one runs (played by NumPy on the fake's memory)."""

from __future__ import annotations

import ctypes

import numpy as np
import pytest
from fake_hip import FakeHip
from test_amd_matrix_cores import matmul_kernel

import tilec
from tilec.interop import timing
from tilec.runtime import compiler
from tilec_amd import driver
from tilec_amd.backend import AmdBackend
from tilec_amd.driver import HipDriver, runtime_availability


def _array(address: int, ctype, count: int) -> np.ndarray:
    return np.ctypeslib.as_array((ctype * count).from_address(address))


def play_matmul(hip, launch):
    """The whole of C = A @ B, whichever block of the grid: what every launch leaves."""
    a, b, c, m, n, k = launch.values
    a16 = _array(a, ctypes.c_uint16, m * k).view(np.float16).reshape(m, k)
    b16 = _array(b, ctypes.c_uint16, k * n).view(np.float16).reshape(k, n)
    _array(c, ctypes.c_float, m * n)[:] = (a16.astype(np.float32) @ b16.astype(np.float32)).ravel()


@pytest.fixture
def fake_mi300(monkeypatch):
    hip = FakeHip(kernels={"matmul_kernel": play_matmul})
    hip.signatures["matmul_kernel"] = ("<Q", "<Q", "<Q", "<i", "<i", "<i")
    driver.reset_driver(HipDriver(hip))
    monkeypatch.setattr(AmdBackend, "is_available", lambda self: runtime_availability(hip))
    monkeypatch.setattr(compiler, "_availability", {})
    monkeypatch.setattr(timing, "L2_FLUSH_BYTES", 1024)
    monkeypatch.delenv("TILEC_PRINT_AUTOTUNING", raising=False)
    yield hip
    driver.reset_driver(None)


def test_a_config_over_the_lds_is_skipped(fake_mi300, private_cache):
    fits = tilec.Config({"BLOCK_M": 32, "BLOCK_N": 32, "BLOCK_K": 32}, num_warps=4, num_stages=2)
    too_big = tilec.Config({"BLOCK_M": 256, "BLOCK_N": 256, "BLOCK_K": 32}, num_warps=4)
    kernel = tilec.autotune([too_big, fits], key=["M", "N", "K"], warmup=1, rep=2)(matmul_kernel)
    m, n, k = 64, 48, 64
    rng = np.random.default_rng(3)
    a = rng.standard_normal((m, k)).astype(np.float16)
    b = rng.standard_normal((k, n)).astype(np.float16)
    c = np.zeros((m, n), np.float32)

    def grid(meta):
        return (tilec.cdiv(m, meta["BLOCK_M"]), tilec.cdiv(n, meta["BLOCK_N"]))

    kernel[grid](a, b, c, m, n, k, backend="amd")
    assert kernel.best_config is fits
    assert list(kernel.failures) == [too_big]
    assert "more than the 65536 a block may use on gfx942" in kernel.failures[too_big]
    if kernel.compiled_in_parallel is not None:  # forked workers compiled for the fake's gfx942
        assert [status for status, _ in kernel.compiled_in_parallel] == ["error", "ok"]
    np.testing.assert_allclose(c, a.astype(np.float32) @ b.astype(np.float32), rtol=1e-5)
    timed = fake_mi300.launches[:-1]
    assert len(timed) > 2 and {launch.grid for launch in fake_mi300.launches} == {(2, 2, 1)}
    assert fake_mi300.memsets, "do_bench flushes the L2 between runs"
    assert sorted(fake_mi300.destroyed) == list(range(len(fake_mi300.events)))
