"""NVIDIA backend tests (`gpu`-marked ones are skipped without a GPU: see tests/conftest.py)."""

from __future__ import annotations

import numpy as np
import pytest


@pytest.fixture
def rng():
    """Fresh random inputs every run."""
    return np.random.default_rng()
