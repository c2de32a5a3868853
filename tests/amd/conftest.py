"""AMD backend tests (`gpu`-marked ones are skipped without a GPU: see tests/conftest.py)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))


@pytest.fixture
def private_cache(tmp_path, monkeypatch):
    from tilec.runtime import cache, compiler

    monkeypatch.setenv("TILEC_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv("TILEC_BACKEND", raising=False)
    cache.clear_memory()
    compiler.set_backend(None)
    yield
    cache.clear_memory()
