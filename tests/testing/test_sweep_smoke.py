"""benchmarks/sweep.py without a GPU: its interp smoke run (tiny shapes of every family on tilec's
interp backend, checked against torch), the reporting of configs and cases that fail, the choice
and timing path with a stand-in timer, and the full case lists (built, not run)."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"


@pytest.fixture
def sweep(monkeypatch, tmp_path):
    monkeypatch.setenv("TILEC_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.syspath_prepend(str(BENCHMARKS))
    spec = importlib.util.spec_from_file_location("sweep", BENCHMARKS / "sweep.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    yield module
    for name in ("sweep_cases", "sweep_memory_cases", "sweep_report"):
        sys.modules.pop(name, None)


def smoke_env(sweep):
    return sweep.make_env(True, 1234)


def test_interp_smoke_run_checks_every_family(sweep, tmp_path, capsys):
    out = tmp_path / "smoke.json"
    assert sweep.main(["--interp-smoke", "--json", str(out), "--seed", "7"]) == 0
    rows = json.loads(out.read_text())["rows"]
    assert {r["family"] for r in rows} == set(sweep.FAMILIES)
    for family in sweep.FAMILIES:
        assert sum(r["family"] == family for r in rows) >= 2, family
    for row in rows:
        assert row["status"] == "ok", row
        assert row["tilec"]["failures"] == [], row
        assert 0 <= row["tilec"]["error"] <= 3e-2, row
    assert "| matmul | e4m3 32x32x64 square |" in capsys.readouterr().out


def test_cases_past_the_time_limit_are_listed_as_skipped(sweep, tmp_path):
    out = tmp_path / "skipped.json"
    argv = ["--interp-smoke", "--only", "swiglu", "--time-limit", "0", "--json", str(out)]
    assert sweep.main(argv) == 1
    rows = json.loads(out.read_text())["rows"]
    assert [r["status"] for r in rows] == ["skipped: --time-limit reached"] * 2


def test_only_selects_families(sweep):
    assert sweep.select_families("attention,rmsnorm") == [
        "attention fwd",
        "attention bwd",
        "rmsnorm",
    ]
    assert sweep.select_families("cross_entropy,layernorm_bwd") == [
        "cross entropy",
        "layernorm bwd",
    ]
    with pytest.raises(SystemExit, match="unknown family 'matmull'"):
        sweep.select_families("matmull")


def test_a_failing_config_or_case_is_reported_not_raised(sweep):
    from sweep_cases import matmul

    env = smoke_env(sweep)
    kernels = {"tilec": sweep.wrap_interp(sweep.load_kernels("tilec"))}
    # BLOCK_M = 24: tl.arange of a size that is not a power of 2, refused at compile time
    case = matmul(32, 32, 32, configs=[(24, 16, 16, 1, 1), (16, 16, 16, 1, 1)])
    row = sweep.run_case(case, env, kernels, timing=False, quick=True)
    assert row["status"] == "ok"
    assert row["tilec"]["config"] == "16x16x16 w1 s1"
    (failure,) = row["tilec"]["failures"]
    assert failure.startswith("24x16x16 w1 s1: CompilationError: ") and "\n" not in failure
    only_bad = matmul(32, 32, 32, configs=[(24, 16, 16, 1, 1)])
    row = sweep.run_case(only_bad, env, kernels, timing=False, quick=True)
    assert row["status"] == "tilec failed"
    from sweep_report import notes

    assert notes(row).startswith("tilec failed; tilec: 1 config(s) failed, 24x16x16 w1 s1: ")


def test_wrong_or_unwritten_outputs_fail_the_check(sweep, monkeypatch):
    from sweep_memory_cases import swiglu

    env = smoke_env(sweep)
    kernels = {"tilec": sweep.wrap_interp(sweep.load_kernels("tilec"))}
    case = swiglu(3, 64, "float32", configs=[(64, 1)])
    wrong = swiglu(3, 64, "float32", configs=[(64, 1)])
    monkeypatch.setattr(wrong, "expected", lambda inputs: {"out": inputs["up"].double()})
    row = sweep.run_case(wrong, env, kernels, timing=False, quick=True)
    assert row["status"] == "tilec failed"
    assert "Mismatch: out: relative error" in row["tilec"]["failures"][0]
    # a launch that writes only the first block leaves NaN (the poison) in the rest
    half = swiglu(3, 64, "float32", configs=[(64, 1)])

    def first_block(kernels, inputs, outputs, config):
        grid = (1,)  # of the 3 blocks of 64
        kernels["sweep_swiglu"][grid](inputs["gate"], inputs["up"], outputs["out"], 192, BLOCK=64)

    monkeypatch.setattr(half, "launch", first_block)
    row = sweep.run_case(half, env, kernels, timing=False, quick=True)
    assert "relative error nan" in row["tilec"]["failures"][0]
    assert sweep.run_case(case, env, kernels, timing=False, quick=True)["status"] == "ok"


def test_timing_path_chooses_each_sides_fastest_config(sweep, monkeypatch, capsys):
    """The GPU path's logic with interp on both sides and a stand-in timer: the candidates are
    timed, the fastest is timed again in rounds of alternating order (each side's median),
    speed = Triton time / tilec time."""
    from sweep_cases import matmul
    from sweep_report import print_tables, summarize

    clock = {
        "tilec": [30.0, 10.0, 11.0, 13.0, 9.0, 12.0],
        "triton": [5.0, 50.0, 6.0, 7.0, 5.0, 8.0],
    }
    calls = []

    def bench(fn, quick, tilec_side, warmup, rep):
        fn()
        side = "tilec" if tilec_side else "triton"
        calls.append((side, warmup, rep))
        return clock[side].pop(0)

    monkeypatch.setattr(sweep, "bench", bench)
    interp = sweep.wrap_interp(sweep.load_kernels("tilec"))
    kernels = {"tilec": interp, "triton": interp}
    case = matmul(32, 32, 48, configs=[(16, 16, 16, 1, 1), (32, 32, 16, 1, 1)])
    row = sweep.run_case(case, smoke_env(sweep), kernels, timing=True, quick=False)
    assert row["tilec"]["config"] == "32x32x16 w1 s1"
    assert row["triton"]["config"] == "16x16x16 w1 s1"
    assert (row["tilec"]["us"], row["triton"]["us"]) == (11.5, 6.5)  # medians of 4 rounds
    assert row["tilec"]["rounds_us"] == [11.0, 13.0, 9.0, 12.0]
    assert row["speed"] == pytest.approx(6.5 / 11.5)
    assert row["tilec"]["rate"] == pytest.approx(2 * 32 * 32 * 48 / 11.5 / 1e6)
    final = ("tilec", "triton", "triton", "tilec", "tilec", "triton", "triton", "tilec")
    assert calls[-8:] == [(side, *sweep.FINAL[False]) for side in final]
    assert calls[0] == ("tilec", *sweep.SELECT[False])
    summary = summarize([row, {**row, "case": "other", "speed": 2.0}])
    entry = summary["families"]["matmul"]
    assert entry["geomean"] == pytest.approx((6.5 / 11.5 * 2.0) ** 0.5)
    assert entry["worst"] == (pytest.approx(6.5 / 11.5), case.label)
    assert entry["below_0.9"] == 1
    print_tables({"device": "test"}, [row], summary, timing=True)
    text = capsys.readouterr().out
    assert "| matmul | 2 | 2 | 1.063 | 0.565 (float16 32x32x48) | 1 | 0 |" in text


def test_a_timing_failure_drops_the_config_or_the_side(sweep, monkeypatch):
    from sweep_cases import matmul

    outcomes = {"tilec": [RuntimeError("illegal address\nmore"), 4.0, 4.5], "triton": [3.0, 2.0]}
    outcomes["triton"].append(RuntimeError("launch timed out"))

    def bench(fn, quick, tilec_side, warmup, rep):
        outcome = outcomes["tilec" if tilec_side else "triton"].pop(0)
        if isinstance(outcome, Exception):
            raise outcome
        return outcome

    monkeypatch.setattr(sweep, "bench", bench)
    interp = sweep.wrap_interp(sweep.load_kernels("tilec"))
    case = matmul(32, 32, 32, configs=[(16, 16, 16, 1, 1), (32, 32, 16, 1, 1)])
    row = sweep.run_case(case, smoke_env(sweep), {"tilec": interp, "triton": interp}, True, True)
    assert row["tilec"]["config"] == "32x32x16 w1 s1"  # the only one timed
    assert row["tilec"]["failures"] == ["timing 16x16x16 w1 s1: RuntimeError: illegal address"]
    assert row["tilec"]["us"] == 4.5
    assert row["status"] == "triton failed" and "speed" not in row
    assert row["triton"]["failures"][-1].endswith("RuntimeError: launch timed out")


def test_timer_triton_times_both_sides_with_tritons_do_bench(sweep, monkeypatch):
    from sweep_memory_cases import swiglu

    timers = []
    monkeypatch.setattr(
        sweep, "bench", lambda fn, q, tilec_side, w, r: timers.append(tilec_side) or 1.0
    )
    interp = sweep.wrap_interp(sweep.load_kernels("tilec"))
    case = swiglu(3, 64, "float32", configs=[(64, 1)])
    monkeypatch.setitem(sweep.OWN_TIMER, "tilec", False)
    row = sweep.run_case(case, smoke_env(sweep), {"tilec": interp, "triton": interp}, True, True)
    assert row["speed"] == 1.0 and timers == [False, False]


def test_compiling_ahead_launches_each_distinct_compile_once(sweep, monkeypatch):
    from sweep_cases import matmul

    interp = sweep.wrap_interp(sweep.load_kernels("tilec"))
    small = [(16, 16, 16, 1, 1)]
    cases = [
        matmul(32, 32, 32, configs=small),
        matmul(48, 32, 64, configs=small),  # the same compile as the first
        matmul(40, 36, 50, configs=[*small, (24, 16, 16, 1, 1)]),  # ragged; a config refused
    ]
    jobs = sweep.compile_jobs(cases)
    assert [(c.label, side) for c, side, _ in jobs] == [
        (cases[0].label, "tilec"), (cases[0].label, "triton"),
        (cases[2].label, "tilec"), (cases[2].label, "tilec"),
        (cases[2].label, "triton"), (cases[2].label, "triton"),
    ]  # fmt: skip
    env = smoke_env(sweep)
    assert sweep.launch_jobs(jobs, env, {"tilec": interp, "triton": interp}, lambda: None) == 4
    started = []

    class Worker:
        def __init__(self, command, **streams):
            started.append(command[2:])

        def wait(self, timeout):
            return 0

    monkeypatch.setattr(sweep.subprocess, "Popen", Worker)
    args = sweep.argparse.Namespace(quick=True, only="matmul,swiglu")
    sweep.warm_caches(args, 2)
    assert started == [
        ["--quick", "--only", "matmul,swiglu", "--warm-worker", f"{i}/2"] for i in range(2)
    ]


def test_full_and_quick_case_lists_cover_issue_23(sweep):
    families = sweep.select_families(None)
    full = sweep.all_cases(families, quick=False, smoke=False)
    quick = sweep.all_cases(families, quick=True, smoke=False)
    for cases in (full, quick):
        assert {c.family for c in cases} == set(families)
        assert all(c.configs for c in cases)
    matmuls = [c for c in full if c.family == "matmul"]
    assert (
        len({(c.fields["m"], c.fields["n"], c.fields["k"], c.fields["batch"]) for c in matmuls})
        >= 30
    )
    dtypes = {"float16", "bfloat16", "e4m3", "e5m2", "e4m3*e5m2", "float32"}
    assert {c.fields["dtype"] for c in matmuls} == dtypes
    assert any(c.fields["epilogue"] for c in matmuls)
    attention = [c for c in full if c.family.startswith("attention")]
    assert {c.fields["n"] for c in attention} >= {512, 16384}
    assert {(c.fields["d"], c.fields["causal"]) for c in attention} == {
        (d, causal) for d in (64, 128) for causal in (False, True)
    }
    vocab = [c.fields["vocab"] for c in full if c.family == "cross entropy"]
    assert min(vocab) <= 32768 and max(vocab) >= 256000
    # compiling ahead: one job a distinct compile, fewer than the configs to check
    jobs = sweep.compile_jobs(full)
    assert len(jobs) < 2 * sum(len(c.configs) for c in full)
    assert len({(id(c), side, config) for c, side, config in jobs}) == len(jobs)


def test_the_commit_is_the_benchmarks_own_checkout_or_unknown(sweep, tmp_path):
    """A `git archive` unpacked inside another checkout names no commit, not that checkout's."""
    import subprocess

    from sweep_report import checkout_commit

    outer = tmp_path / "outer"
    (outer / "tree").mkdir(parents=True)
    git = ["git", "-C", str(outer), "-c", "user.name=t", "-c", "user.email=t@t"]
    subprocess.run([*git, "init", "-q"], check=True)
    (outer / "f").write_text("x")
    subprocess.run([*git, "add", "f"], check=True)
    subprocess.run([*git, "commit", "-qm", "c"], check=True)
    head = subprocess.run(
        [*git, "rev-parse", "--short", "HEAD"], capture_output=True, text=True, check=True
    ).stdout.strip()
    assert checkout_commit(outer) == head
    assert checkout_commit(outer / "tree") == "unknown"
    assert checkout_commit(tmp_path) == "unknown"
