"""benchmarks/register_budget_ab.py (the sweep's memory kernels under other `.maxnreg` budgets,
issue 23): its plan names sweep cases, configs and kernels that exist, and a budget reaches the
launches of the kernel it names only. No GPU needed."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

pytest.importorskip("torch", reason="the sweep's cases need PyTorch")
sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))

import register_budget_ab as ab
from sweep import load_kernels
from sweep_profile import find_case, find_config


def test_every_row_names_a_case_a_config_and_kernels_of_the_sweep():
    names = set(load_kernels("tilec"))
    for words, config, tilec_budgets, triton_budgets in ab.PLAN:
        find_config(find_case(words), config)  # stops (SystemExit) where either is unknown
        for maxnreg, only in tilec_budgets + triton_budgets:
            assert 24 <= maxnreg <= 255 and maxnreg % 8 in (0, 7), (words, maxnreg)
            assert only is None or only in names, (words, only)


def test_a_budget_reaches_only_the_kernel_it_names():
    calls = []

    class Kernel:
        def __init__(self, name):
            self.name = name

        def __getitem__(self, grid):
            return lambda *args, **meta: calls.append((self.name, grid, args, meta))

    kernels = {"a": Kernel("a"), "b": Kernel("b")}
    budgeted = ab.Budgeted(kernels, 255, "b")
    budgeted["a"][(4,)](1, num_warps=8)
    budgeted["b"][(2, 3)](2)
    assert calls == [("a", (4,), (1,), {"num_warps": 8}), ("b", (2, 3), (2,), {"maxnreg": 255})]
    calls.clear()
    ab.Budgeted(kernels, 80, None)["a"][(1,)]()
    assert calls == [("a", (1,), (), {"maxnreg": 80})]
    assert ab.label("tilec", (255, "b")) == "tilec maxnreg 255 (b)"
    assert ab.label("triton", None) == "triton default"


def test_usage_errors(capsys):
    with pytest.raises(SystemExit):
        ab.main(["--only", "no such case"])
    assert "--only 'no such case' names no row" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        ab.main(["--rounds", "0"])
    assert "--rounds must be 1 or more, got 0" in capsys.readouterr().err
