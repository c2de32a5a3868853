"""`tilec.testing` on the interpreter: do_bench's counts and statistics, assert_close,
perf_report's table, CSV and plot."""

from __future__ import annotations

import csv
import sys

import numpy as np
import pytest

import tilec.testing as tt
from tilec.interop import timing
from tilec.testing_report import PLOT_HINT


@pytest.fixture(autouse=True)
def _interp(monkeypatch):
    monkeypatch.setenv("TILEC_BACKEND", "interp")


def test_do_bench_times_by_milliseconds(monkeypatch):
    clock = [0.0]
    monkeypatch.setattr(timing.time, "perf_counter", lambda: clock[0])
    calls = []

    def two_ms():
        calls.append(1)
        clock[0] += 0.002

    assert tt.do_bench(two_ms, warmup=10, rep=20) == pytest.approx(2.0)
    # 1 first call, 5 for the estimate, 10/2 warm-up and 20/2 timed ones.
    assert len(calls) == 1 + 5 + 5 + 10


def test_do_bench_quantiles_and_modes(monkeypatch):
    times = iter(np.arange(0, 1000, 0.001))
    monkeypatch.setattr(timing.time, "perf_counter", lambda: next(times))
    all_times = tt.do_bench(lambda: None, warmup=1, rep=10, return_mode="all")
    assert all_times and all(t == pytest.approx(1.0) for t in all_times)
    low, high = tt.do_bench(lambda: None, warmup=1, rep=5, quantiles=[0.2, 0.8])
    assert low == pytest.approx(1.0) and high == pytest.approx(1.0)
    with pytest.raises(ValueError, match="return_mode must be one of"):
        tt.do_bench(lambda: None, return_mode="avg")


def test_summarize_as_triton():
    times = [1.0, 2.0, 3.0, 10.0]
    assert tt.summarize(times, None, "mean") == 4.0
    assert tt.summarize(times, None, "median") == 2.5
    assert tt.summarize(times, None, "min") == 1.0
    assert tt.summarize(times, None, "max") == 10.0
    assert tt.summarize(times, None, "all") == times
    assert tt.summarize(times, [0.5], "mean") == 2.5
    assert tt.summarize(times, [0.0, 1.0], "mean") == [1.0, 10.0]


def test_assert_close():
    tt.assert_close(np.array([1.0, 2.0]), np.array([1.005, 2.0]))
    with pytest.raises(AssertionError):
        tt.assert_close(np.array([1.0, 2.0]), np.array([1.1, 2.0]))
    tt.assert_close(np.array([1.0]), np.array([1.1]), atol=0, rtol=0.2)
    with pytest.raises(AssertionError, match="context"):
        tt.assert_close(np.array([True]), np.array([False]), err_msg="context")


def test_do_bench_cudagraph_without_torch(monkeypatch):
    monkeypatch.setitem(sys.modules, "torch", None)
    with pytest.raises(RuntimeError, match="needs torch"):
        tt.do_bench_cudagraph(lambda: None)


def _mark():
    bench = tt.Benchmark(
        x_names=["size"], x_vals=[1, 2], line_arg="provider", line_vals=["a", "b"],
        line_names=["A", "B"], plot_name="speed", args={"scale": 10}, ylabel="ms",
    )  # fmt: skip

    @tt.perf_report(bench)
    def speed(size, provider, scale):
        value = size * scale + (1 if provider == "b" else 0)
        return (value, value - 1, value + 1) if provider == "a" else value

    return speed


def test_perf_report_writes_table_csv_and_plot(tmp_path, capsys):
    pytest.importorskip("matplotlib")
    _mark().run(print_data=True, save_path=str(tmp_path))
    out = capsys.readouterr().out
    assert out.splitlines()[0] == "speed:"
    assert "size" in out and "A-min" in out
    rows = list(csv.reader((tmp_path / "speed.csv").open()))
    assert rows[0] == ["size", "A", "A-min", "A-max", "B"]
    assert [float(v) for v in rows[2]] == [2, 20, 19, 21, 21]
    assert (tmp_path / "speed.png").stat().st_size > 0


def test_perf_report_without_matplotlib(tmp_path, capsys, monkeypatch):
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    _mark().run(save_path=str(tmp_path / "out"))
    assert PLOT_HINT in capsys.readouterr().err
    assert (tmp_path / "out" / "speed.csv").exists()
    assert not (tmp_path / "out" / "speed.png").exists()


def test_benchmark_checks_line_names():
    with pytest.raises(ValueError, match="2 line_vals but 1 line_names"):
        tt.Benchmark(["x"], [1], "p", ["a", "b"], ["A"], "name")
