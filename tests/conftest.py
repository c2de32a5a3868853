"""Shared by every test folder: `gpu`-marked tests in a backend's folder (tests/nvidia, tests/amd)
are skipped, with the reason, where that backend cannot run; every test (and the processes it
starts) uses a private cache folder and cache key, never the user's."""

from __future__ import annotations

import functools
from pathlib import Path

import pytest

HERE = Path(__file__).parent
GPU_FOLDERS = {"nvidia": "an NVIDIA GPU", "amd": "an AMD GPU"}
"""Folders of backend tests: the backend's name -> what its `gpu` tests need."""


@pytest.fixture(autouse=True, scope="session")
def private_cache(tmp_path_factory: pytest.TempPathFactory):
    """The session's own `TILEC_CACHE_DIR` and `TILEC_CACHE_KEY_FILE` (tests may set their own)."""
    folder = tmp_path_factory.mktemp("tilec-cache-session")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("TILEC_CACHE_DIR", str(folder / "cache"))
        patch.setenv("TILEC_CACHE_KEY_FILE", str(folder / "state" / "cache-key"))
        yield


@functools.cache
def _availability(backend: str):
    from tilec.plugin.manager import load_backends

    return load_backends()[backend].is_available()


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        if item.get_closest_marker("gpu") is None or not item.path.is_relative_to(HERE):
            continue
        backend = item.path.relative_to(HERE).parts[0]
        if backend not in GPU_FOLDERS:
            continue
        availability = _availability(backend)
        if not availability:
            reason = f"needs {GPU_FOLDERS[backend]} ({availability.reason})"
            item.add_marker(pytest.mark.skip(reason=reason))
