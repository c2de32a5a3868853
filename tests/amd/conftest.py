"""AMD backend tests: `gpu`-marked tests are skipped where the backend cannot run."""

from __future__ import annotations

import functools
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).parent
sys.path.insert(0, str(HERE))


@functools.cache
def _availability():
    from tilec_amd.backend import AmdBackend

    return AmdBackend().is_available()


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        if item.get_closest_marker("gpu") is None or not item.path.is_relative_to(HERE):
            continue
        availability = _availability()
        if not availability:
            item.add_marker(pytest.mark.skip(reason=f"needs an AMD GPU ({availability.reason})"))


@pytest.fixture
def private_cache(tmp_path, monkeypatch):
    from tilec.runtime import cache, compiler

    monkeypatch.setenv("TILEC_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv("TILEC_BACKEND", raising=False)
    cache.clear_memory()
    compiler.set_backend(None)
    yield
    cache.clear_memory()
