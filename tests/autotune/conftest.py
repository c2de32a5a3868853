"""Autotuning tests run on the interpreter with a cache folder of their own."""

from __future__ import annotations

import pytest

from tilec.runtime import cache


@pytest.fixture(autouse=True)
def _interp_and_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("TILEC_BACKEND", "interp")
    monkeypatch.setenv("TILEC_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv("TILEC_PRINT_AUTOTUNING", raising=False)
    cache.clear_memory()
    yield
    cache.clear_memory()
