import sys
from pathlib import Path

import pytest

from tilec.runtime import cache, compiler

sys.path.insert(0, str(Path(__file__).parent.parent / "frontend"))


@pytest.fixture(autouse=True)
def fresh_runtime(tmp_path, monkeypatch):
    """A private disk cache, an empty memory cache and automatic backend selection per test."""
    monkeypatch.setenv("TILEC_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv("TILEC_BACKEND", raising=False)
    cache.clear_memory()
    compiler.set_backend(None)
    yield
    compiler.set_backend(None)
    cache.clear_memory()
