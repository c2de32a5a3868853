"""The guides in docs/ show code that must keep working: every ```python block of a guide runs,
in order, in one namespace, in a child process (the examples register plugins, which would
change the plugin host of the test process)."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

DOCS = Path(__file__).resolve().parents[2] / "docs"
GUIDES = ["pass-guide.md", "backend-guide.md"]


def python_blocks(text: str) -> list[str]:
    return re.findall(r"```python\n(.*?)```", text, re.S)


@pytest.mark.parametrize("guide", GUIDES)
def test_every_python_block_of_the_guide_runs(guide, tmp_path):
    blocks = python_blocks((DOCS / guide).read_text())
    assert blocks, f"docs/{guide} shows no Python"
    script = tmp_path / "guide.py"
    script.write_text("\n\n".join(blocks))
    done = subprocess.run(
        [sys.executable, str(script)], capture_output=True, text=True, cwd=tmp_path, timeout=300
    )
    assert done.returncode == 0, f"docs/{guide}:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
