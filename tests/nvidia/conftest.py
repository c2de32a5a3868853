"""NVIDIA backend tests (`gpu`-marked ones are skipped without a GPU: see tests/conftest.py)."""

from __future__ import annotations

import pytest
from fake_cuda import FakeCu

from tilec.backend import Availability
from tilec.runtime import cache, compiler
from tilec_nvidia import driver as cuda
from tilec_nvidia.backend import NvidiaBackend


@pytest.fixture
def fake_gpu(monkeypatch, tmp_path):
    """The nvidia backend on a fake cuda.bindings (`fake_cuda.FakeCu`), with a fresh cache."""
    fake = FakeCu()
    cuda.reset_driver(cuda.CudaDriver(cu=fake))
    monkeypatch.setattr(NvidiaBackend, "is_available", lambda self: Availability(True, "fake"))
    monkeypatch.setenv("TILEC_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv("TILEC_BACKEND", raising=False)
    compiler._availability.clear()
    cache.clear_memory()
    yield fake
    cuda.reset_driver(None)
    compiler._availability.clear()
    cache.clear_memory()


@pytest.fixture
def tma_on(monkeypatch, tmp_path):
    """`TILEC_NVIDIA_TMA=1` and a fresh cache (the compiles with the setting differ)."""
    monkeypatch.setenv("TILEC_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("TILEC_NVIDIA_TMA", "1")
    cache.clear_memory()
    yield
    cache.clear_memory()


@pytest.fixture
def tma_stores_on(tma_on, monkeypatch):
    """`tma_on`, and descriptor stores claimed for TMA (`tma_lowering.STORES`, on by default):
    the stores' code is tested whatever the default."""
    from tilec_nvidia import tma_lowering

    monkeypatch.setattr(tma_lowering, "STORES", True)
