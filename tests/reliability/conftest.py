"""Fixtures for the reliability tests: a private cache folder and cache key per test, fresh memory
caches, and a counter of frontend runs (a compile that the disk cache did not serve)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from tilec import cache_files
from tilec.runtime import cache, compiler

sys.path.insert(0, str(Path(__file__).parent.parent / "frontend"))


@pytest.fixture(autouse=True)
def private_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("TILEC_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("TILEC_CACHE_KEY_FILE", str(tmp_path / "state" / "cache-key"))
    monkeypatch.delenv("TILEC_BACKEND", raising=False)
    monkeypatch.setattr(cache_files, "_keys", {})
    monkeypatch.setattr(cache_files, "_warned", set())
    cache.clear_memory()
    compiler.set_backend(None)
    yield
    compiler.set_backend(None)
    cache.clear_memory()


@pytest.fixture
def frontend_calls(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    calls: list[str] = []
    real = compiler.compile_to_tir

    def counting(*args, **kwargs):
        calls.append(args[0].__name__)
        return real(*args, **kwargs)

    monkeypatch.setattr(compiler, "compile_to_tir", counting)
    return calls
