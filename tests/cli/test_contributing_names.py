"""CONTRIBUTING.md names only passes that exist (`tilec passes --all`)."""

from __future__ import annotations

import re
from pathlib import Path

from tilec.passes.manager import parse_pipeline
from tilec.pipeline import plugin_pass_manager

CONTRIBUTING = Path(__file__).resolve().parents[2] / "CONTRIBUTING.md"


def mentioned_pass_names(text: str) -> set[str]:
    """The passes of every `--passes PIPELINE` and every "holds `name`" in `text`."""
    names = {m[1] for m in re.finditer(r"holds\s+`([a-z-]+)`", text)}
    for match in re.finditer(r"--passes '?([^\s']+)", text):
        names.update(name for name, _ in parse_pipeline(match[1]))
    return names


def test_contributing_names_registered_passes():
    names = mentioned_pass_names(CONTRIBUTING.read_text())
    assert {"dce", "licm", "canonicalize", "strength-reduction"} <= names
    unknown = sorted(names - set(plugin_pass_manager().registry))
    assert not unknown, f"CONTRIBUTING.md names passes that do not exist: {unknown}"
