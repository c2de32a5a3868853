"""GPU conformance tests: every `gpu`-marked test here runs kernels on the GPU backend of
`gpu_backend.BACKEND` (nvidia, or amd with `TILEC_TEST_BACKEND=amd`) with `check=True` (against
the interpreter) and is skipped, with the reason, where that backend's GPU is missing."""

from __future__ import annotations

import functools
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).parent
sys.path.insert(0, str(HERE.parent / "frontend"))
sys.path.insert(0, str(HERE))

from gpu_backend import BACKEND, GPU_BACKENDS  # noqa: E402


@functools.cache
def _availability():
    from tilec.plugin.manager import load_backends

    return load_backends()[BACKEND].is_available()


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        if item.get_closest_marker("gpu") is None or not item.path.is_relative_to(HERE):
            continue
        availability = _availability()
        if not availability:
            item.add_marker(
                pytest.mark.skip(reason=f"needs {GPU_BACKENDS[BACKEND]} ({availability.reason})")
            )


@pytest.fixture(autouse=True)
def private_cache(tmp_path, monkeypatch):
    from tilec.runtime import cache, compiler

    monkeypatch.setenv("TILEC_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv("TILEC_BACKEND", raising=False)
    cache.clear_memory()
    compiler.set_backend(None)
    yield
    cache.clear_memory()
