"""Run the lit + filecheck golden tests under tests/filecheck as one pytest test.

lit runs in this interpreter (`lit.main` through `sys.executable`; the `lit` package has no
`__main__`), so `tilec` and `filecheck` in RUN lines resolve to this environment. The test fails
with lit's output when any golden test fails, and also when lit finds no tests at all: a broken
`lit.cfg.py` or suffix must not look like success.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

FILECHECK_DIR = Path(__file__).parent / "filecheck"
RUN_LIT = "import sys; from lit.main import main; sys.argv[0] = 'lit'; sys.exit(main())"


def test_filecheck_suite():
    result = subprocess.run(
        [sys.executable, "-c", RUN_LIT, "-v", str(FILECHECK_DIR)],
        capture_output=True,
        text=True,
        timeout=1800,
    )
    output = result.stdout + result.stderr
    discovered = re.search(r"Total Discovered Tests: (\d+)", output)
    if discovered is None or int(discovered.group(1)) == 0:
        pytest.fail(f"lit found no tests under {FILECHECK_DIR}:\n{output}", pytrace=False)
    if result.returncode != 0:
        pytest.fail(f"lit tests failed (exit status {result.returncode}):\n{output}", pytrace=False)
