"""Every example through `tilec run --backend nvidia --check` (amd with
`TILEC_TEST_BACKEND=amd`)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from gpu_backend import BACKEND

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ["vector_add", "softmax", "layernorm", "matmul", "histogram", "attention"]


@pytest.mark.gpu
@pytest.mark.parametrize("name", EXAMPLES)
def test_example_on_gpu_matches_interp(name, tmp_path):
    env = {k: v for k, v in os.environ.items() if k != "TILEC_BACKEND"}
    env["TILEC_CACHE_DIR"] = str(tmp_path / "cache")
    result = subprocess.run(
        [sys.executable, "-m", "tilec", "run", f"examples/{name}.py", "--backend", BACKEND,
         "--check"],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip().splitlines()[-1].endswith("(OK)")
