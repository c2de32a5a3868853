import numpy as np
import pytest


@pytest.fixture
def rng():
    """Fresh random inputs every run (never zeros)."""
    return np.random.default_rng()
