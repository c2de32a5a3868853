"""Fixtures for plugin tests: a fresh plugin manager per test, and tiny real distributions.

`make_distribution` writes a `NAME-0.1.dist-info` folder (METADATA and entry_points.txt) and the
plugin's modules into a temporary folder on `sys.path`, which `importlib.metadata` discovers like
any installed distribution: the entry points are real, not mocks.
"""

from __future__ import annotations

import sys
import textwrap
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tilec.plugin.manager import DISABLE_AUTOLOAD_ENV, reset_plugin_manager

MakeDistribution = Callable[..., Path]


@pytest.fixture(autouse=True)
def fresh_plugin_manager(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.delenv(DISABLE_AUTOLOAD_ENV, raising=False)
    reset_plugin_manager()
    yield
    reset_plugin_manager()


@pytest.fixture
def make_distribution(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[MakeDistribution]:
    """`make_distribution(name, {entry point: module}, {module: source}, version="0.1")` installs
    a distribution visible to this process until the test ends."""
    written: list[str] = []

    def make(
        name: str, entry_points: dict[str, str], modules: dict[str, str], version: str = "0.1"
    ) -> Path:
        root = tmp_path / f"{name}-{version}"
        dist_info = root / f"{name.replace('-', '_')}-{version}.dist-info"
        dist_info.mkdir(parents=True)
        metadata = f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n"
        (dist_info / "METADATA").write_text(metadata)
        lines = ["[tilec]", *(f"{key} = {value}" for key, value in entry_points.items())]
        (dist_info / "entry_points.txt").write_text("\n".join(lines) + "\n")
        for module, source in modules.items():
            (root / f"{module}.py").write_text(textwrap.dedent(source))
            written.append(module)
        monkeypatch.syspath_prepend(str(root))
        return root

    yield make
    for module in written:
        sys.modules.pop(module, None)
