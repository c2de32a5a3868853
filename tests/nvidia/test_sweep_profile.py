"""benchmarks/sweep_profile.py (the program ncu watches, issue 23) names its case and config or
stops with the candidates: no GPU needed to choose them."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

pytest.importorskip("torch", reason="the sweep's cases need PyTorch")
sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))

import sweep_profile


def test_one_case_and_one_config_are_found():
    case = sweep_profile.find_case("attention fwd fp16 2x16x8192x128 non-causal")
    assert (case.family, case.label) == ("attention fwd", "fp16 2x16x8192x128 non-causal")
    assert sweep_profile.find_config(case, "128x64 w8 s3") == (128, 64, 8, 3)


def test_no_case_or_several_stop_with_the_candidates():
    with pytest.raises(SystemExit, match="no case named by 'no such case'; the cases:"):
        sweep_profile.find_case("no such case")
    with pytest.raises(SystemExit, match=r"\d+ cases named by 'matmul float16'; these:") as stop:
        sweep_profile.find_case("matmul float16")
    assert "matmul float16 3072x3072x3072 square" in str(stop.value)


def test_an_unknown_config_stops_with_the_case_s_configs():
    case = sweep_profile.find_case("matmul float16 3072x3072x3072")
    with pytest.raises(SystemExit, match="no config '64x64'; its configs: 128x256x64 w8 s3"):
        sweep_profile.find_config(case, "64x64")


def test_a_negative_launch_count_is_a_usage_error(capsys):
    with pytest.raises(SystemExit):
        sweep_profile.main(["tilec", "matmul float16 3072x3072x3072", "128x128x64 w8 s3",
                            "--launches", "-1"])  # fmt: skip
    assert "--launches must be 0 or more, got -1" in capsys.readouterr().err
