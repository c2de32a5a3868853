"""NVIDIA backend tests: `gpu`-marked tests are skipped where the backend cannot run."""

from __future__ import annotations

import functools
from pathlib import Path

import numpy as np
import pytest

from tilec_nvidia.backend import NvidiaBackend

HERE = Path(__file__).parent


@functools.cache
def _availability():
    return NvidiaBackend().is_available()


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        if item.get_closest_marker("gpu") is None or not item.path.is_relative_to(HERE):
            continue
        availability = _availability()
        if not availability:
            item.add_marker(pytest.mark.skip(reason=f"needs an NVIDIA GPU ({availability.reason})"))


@pytest.fixture
def rng():
    """Fresh random inputs every run."""
    return np.random.default_rng()
