"""Fixtures for tests/compat."""

import zlib

import numpy as np
import pytest

from tilec.runtime import cache, launcher


@pytest.fixture
def rng(request):
    """Random inputs seeded from the test's id: different for every test, reproducible."""
    return np.random.default_rng(zlib.crc32(request.node.nodeid.encode()))


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
