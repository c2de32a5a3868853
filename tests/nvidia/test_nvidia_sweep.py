"""benchmarks/sweep.py's GPU path on a few small cases: both compilers' kernels pass the check
against torch, each side's config is chosen and timed, and the speed is Triton's time over
tilec's (the sweep itself, timed, is `python benchmarks/sweep.py`). It runs in a child process:
the sweep imports the real Triton, which would stop every later test of `tilec.as_triton` in
this process ("a real Triton was imported before the alias")."""

from __future__ import annotations

import importlib
import importlib.util
import math
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.gpu

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"


def test_small_cases_pass_on_both_sides_and_are_timed():
    torch = pytest.importorskip("torch", reason="needs PyTorch")
    if importlib.util.find_spec("triton") is None:
        pytest.skip("needs Triton (the sweep's other side)")
    if not torch.cuda.is_available():
        pytest.skip("needs a CUDA device for torch")
    child = subprocess.run(
        [sys.executable, __file__], capture_output=True, text=True, timeout=600, check=False
    )
    assert child.returncode == 0, child.stdout[-3000:] + child.stderr[-3000:]
    assert "6 cases ok" in child.stdout


def _run_cases() -> None:
    sys.path.insert(0, str(BENCHMARKS))  # the sweep's modules import one another
    sweep = importlib.import_module("sweep")
    from sweep_cases import attention, matmul
    from sweep_memory_cases import cross_entropy, swiglu

    cases = [
        matmul(256, 192, 320, configs=[(64, 64, 32, 4, 3), (128, 64, 32, 4, 3)]),
        matmul(100, 90, 70, "bfloat16", epilogue=True, configs=[(64, 64, 32, 4, 3)]),
        attention(256, 64, True, False, batch=1, heads=2, configs=[(64, 32, 4, 2)]),
        attention(256, 64, False, True, batch=1, heads=2, configs=[(32, 64, 64, 32, 2, 4, 3)]),
        cross_entropy(8, 5000, configs=[(1024, 4)]),
        swiglu(64, 1000, configs=[(1024, 4)]),
    ]
    env = sweep.make_env(False, 1)
    kernels = {side: sweep.load_kernels(side) for side in sweep.SIDES}
    for case in cases:
        row = sweep.run_case(case, env, kernels, timing=True, quick=True)
        assert row["status"] == "ok", row
        for side in sweep.SIDES:
            assert row[side]["failures"] == [], row
            assert row[side]["error"] <= case.tol and row[side]["us"] > 0, row
        assert math.isfinite(row["speed"]) and row["speed"] > 0, row
    print(f"{len(cases)} cases ok")


if __name__ == "__main__":
    _run_cases()
