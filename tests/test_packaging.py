"""The distributions ship `py.typed` (PEP 561), so type checkers read tilec's annotations."""

from __future__ import annotations

from pathlib import Path

import pytest

tomllib = pytest.importorskip("tomllib", reason="tomllib is Python 3.11+")

ROOT = Path(__file__).resolve().parent.parent
DISTRIBUTIONS = [
    ("pyproject.toml", "core/tilec", "tilec"),
    ("plugins/interp/pyproject.toml", "plugins/interp/tilec_interp", "tilec_interp"),
    ("plugins/nvidia/pyproject.toml", "plugins/nvidia/tilec_nvidia", "tilec_nvidia"),
    ("plugins/amd/pyproject.toml", "plugins/amd/tilec_amd", "tilec_amd"),
]


@pytest.mark.parametrize(("pyproject", "package", "name"), DISTRIBUTIONS)
def test_each_distribution_ships_py_typed(pyproject: str, package: str, name: str):
    assert (ROOT / package / "py.typed").is_file()
    config = tomllib.loads((ROOT / pyproject).read_text())
    assert "py.typed" in config["tool"]["setuptools"]["package-data"][name]
