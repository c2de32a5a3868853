"""examples/matmul_autotune.py and attention_autotune.py on the interpreter, each in a process of
its own."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_matmul_autotune_example_on_interp(tmp_path):
    env = {**os.environ, "TILEC_CACHE_DIR": str(tmp_path / "cache"), "TILEC_PRINT_AUTOTUNING": "1"}
    result = subprocess.run(
        [sys.executable, "-m", "tilec", "run", "examples/matmul_autotune.py", "--backend", "interp"],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert "(OK)" in result.stdout
    timed = [line for line in result.stderr.splitlines() if " ms (p20 " in line]
    assert len(timed) == 2, "only the interpreter's configs are tuned on the interpreter"
    assert "chose BLOCK_M: " in result.stderr


def test_attention_autotune_example_on_interp(tmp_path):
    env = {**os.environ, "TILEC_CACHE_DIR": str(tmp_path / "cache"), "TILEC_PRINT_AUTOTUNING": "1"}
    command = [sys.executable, "-m", "tilec", "run", "examples/attention_autotune.py",
               "--backend", "interp"]  # fmt: skip
    result = subprocess.run(
        command, cwd=ROOT, env=env, capture_output=True, text=True, timeout=300, check=False
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.count("(OK)") == 2  # non-causal and causal
    # one tuning per key (causal is part of it), of the interpreter's two configs each
    assert len([line for line in result.stderr.splitlines() if " ms (p20 " in line]) == 4
    assert result.stderr.count("chose BLOCK_M: ") == 2
