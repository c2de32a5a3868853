"""Fixtures for tests/compat."""

import functools

import pytest
from compat_helpers import GPU_BACKEND

from tilec.runtime import cache, launcher


@pytest.fixture
def general(monkeypatch):
    """The launches that took the general path (not a fast launch), counted from no fast launch:
    every kernel's fast launches go first (`cache.clear_memory`)."""
    cache.clear_memory()
    calls = []
    original = launcher.Launcher._launch

    def counted(self, args, meta):
        calls.append(args)
        return original(self, args, meta)

    monkeypatch.setattr(launcher.Launcher, "_launch", counted)
    return calls


@functools.cache
def _gpu_availability():
    from tilec.plugin.manager import load_backends

    return load_backends()[GPU_BACKEND].is_available()


@pytest.fixture
def gpu_backend():
    """`GPU_BACKEND` (nvidia, or `TILEC_TEST_BACKEND`), or a skip naming why it cannot run here.
    The GPU test modules use it for every test: `pytest.mark.usefixtures("gpu_backend")`."""
    availability = _gpu_availability()
    if GPU_BACKEND == "interp" or not availability:
        pytest.skip(f"needs a {GPU_BACKEND} GPU ({getattr(availability, 'reason', 'interp')})")
    return GPU_BACKEND
