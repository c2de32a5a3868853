"""Fixtures for tests/compat."""

import zlib

import numpy as np
import pytest


@pytest.fixture
def rng(request):
    """Random inputs seeded from the test's id: different for every test, reproducible."""
    return np.random.default_rng(zlib.crc32(request.node.nodeid.encode()))
