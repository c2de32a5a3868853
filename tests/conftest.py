"""Shared by every test folder: `gpu`-marked tests in a backend's folder (tests/nvidia, tests/amd)
are skipped, with the reason, where that backend cannot run; a test that needs a backend plugin
the machine has not installed is skipped, naming it (`requires_backends`); every test (and the
processes it starts) uses a private cache folder and cache key, never the user's."""

from __future__ import annotations

import functools
import os
import shutil
import sys
import tempfile
import zlib
from pathlib import Path

import numpy as np
import pytest

HERE = Path(__file__).parent
GPU_FOLDERS = {"nvidia": "an NVIDIA GPU", "amd": "an AMD GPU"}
"""Folders of backend tests: the backend's name -> what its `gpu` tests need."""
PROJECT_BACKENDS = {
    "interp": "plugins/interp",
    "nvidia": "plugins/nvidia",
    "amd": "plugins/amd",
    "hostcpu": "examples/plugins/tilec-hostcpu",
}
"""The backends this repository's plugins provide -> the plugin's folder (`pip install -e` it)."""
BACKEND_PARAMETERS = ("backend", "owner")
"""Test parameters whose string value names a backend the test needs (a vendor's options are
known only where its plugin is installed: `owner`)."""


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        "requires_backends(*names): needs these backends' plugins installed (skipped, naming the"
        " missing one, where it is not; a `backend` or `owner` parameter naming one of"
        " PROJECT_BACKENDS needs it too)",
    )
    _private_collection_cache(config)


def _private_collection_cache(config: pytest.Config) -> None:
    """A private cache folder and key from the start: a test module's import may already use
    them (a `skipif(find_ptxas() is None)` remembers the ptxas found, `tilec_nvidia.ptxas_memo`);
    `private_cache` gives the tests their own once they run."""
    folder = Path(tempfile.mkdtemp(prefix="tilec-cache-collect-"))
    config.add_cleanup(functools.partial(shutil.rmtree, folder, ignore_errors=True))
    for name, value in (("TILEC_CACHE_DIR", "cache"), ("TILEC_CACHE_KEY_FILE", "state/key")):
        old = os.environ.get(name)
        os.environ[name] = str(folder / value)
        config.add_cleanup(functools.partial(_restore, name, old))


def _restore(name: str, value: str | None) -> None:
    if value is None:
        os.environ.pop(name, None)
    else:
        os.environ[name] = value


@pytest.fixture
def rng(request: pytest.FixtureRequest) -> np.random.Generator:
    """Random inputs seeded from the test's id: different for every test, the same on every run
    and every machine (an unseeded generator made a tolerance test fail one run in a few hundred)."""
    return np.random.default_rng(zlib.crc32(request.node.nodeid.encode()))


@pytest.fixture(autouse=True)
def _seeded_torch(request: pytest.FixtureRequest) -> None:
    """torch's generators (CPU and CUDA) seeded from the test's id, where torch is loaded: tests
    that draw `torch.randn` inputs are reproducible, as those using `rng` are."""
    torch = sys.modules.get("torch")
    if torch is not None:
        torch.manual_seed(zlib.crc32(request.node.nodeid.encode()))


@pytest.fixture(autouse=True, scope="session")
def private_cache(tmp_path_factory: pytest.TempPathFactory):
    """The session's own `TILEC_CACHE_DIR` and `TILEC_CACHE_KEY_FILE` (tests may set their own)."""
    folder = tmp_path_factory.mktemp("tilec-cache-session")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("TILEC_CACHE_DIR", str(folder / "cache"))
        patch.setenv("TILEC_CACHE_KEY_FILE", str(folder / "state" / "cache-key"))
        yield


def _leave_triton_alone() -> None:
    """Take the `triton` alias away again where a test module's import or a test turned it on
    (`tilec.as_triton` and its submodules activate it when imported): left on, it would make
    every later `import triton` in this process tilec, and torch's Inductor find no Triton."""
    alias = sys.modules.get("tilec.as_triton.finder")
    if alias is not None and alias.active():
        alias.deactivate()


def pytest_collection_finish(session: pytest.Session) -> None:
    _leave_triton_alone()


@pytest.fixture(autouse=True)
def no_triton_alias_after_a_test():
    yield
    _leave_triton_alone()


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


def backends_needed(item: pytest.Item) -> list[str]:
    """The backends `item` needs: its `requires_backends` markers' names and the values of its
    `BACKEND_PARAMETERS` that name one of `PROJECT_BACKENDS` (a parameter such as
    `backend="cuda"`, a test of the unknown-backend error, needs nothing)."""
    names = [name for marker in item.iter_markers("requires_backends") for name in marker.args]
    callspec = getattr(item, "callspec", None)
    if callspec is not None:
        names += [
            value
            for key, value in callspec.params.items()
            if key in BACKEND_PARAMETERS and isinstance(value, str) and value in PROJECT_BACKENDS
        ]
    return list(dict.fromkeys(names))


def pytest_runtest_setup(item: pytest.Item) -> None:
    """Skip a test needing a backend whose plugin is not installed (the GPU machine installs
    interp and nvidia alone), naming the plugin; where it is installed (CI installs them all)
    the test runs and may fail."""
    needed = backends_needed(item)
    if not needed:
        return
    from tilec.plugin.manager import load_backends

    installed = load_backends()
    missing = [name for name in needed if name not in installed]
    if missing:
        plugins = ", ".join(
            f"{name} (pip install -e {PROJECT_BACKENDS[name]})" if name in PROJECT_BACKENDS
            else name
            for name in missing
        )  # fmt: skip
        pytest.skip(f"needs the backend plugin not installed here: {plugins}")
