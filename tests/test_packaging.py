"""The distributions ship `py.typed` (PEP 561), so type checkers read tilec's annotations; the
README's first-use commands are the ones CI runs."""

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


def test_readme_first_use_commands_are_what_ci_runs():
    readme = (ROOT / "README.md").read_text()
    first_use = readme[readme.index("## First use") :]
    block = first_use[
        first_use.index("```sh") : first_use.index("```", first_use.index("```sh") + 5)
    ]
    commands = [line.split("#")[0].strip() for line in block.splitlines()[1:] if line.strip()]
    assert commands == ["bash .ci/example", "bash .ci/run"]
    assert readme.index("## First use") < readme.index("## Launching in PyTorch programs")
    run = (ROOT / ".ci" / "run").read_text()
    assert "\nbash .ci/example\n" in run  # CI runs the first command as well
    assert (ROOT / ".ci" / "example").is_file() and (ROOT / ".ci" / "setup").is_file()
