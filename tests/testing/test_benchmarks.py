"""The benchmarks time tilec's side with `tilec.testing` (`benchmarks/interp_vs_triton.py`, the one
that runs without a GPU), and their kernels give results within the tolerances they check."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import numpy as np

import tilec
import tilec.language as tl
import tilec.testing

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "interp_vs_triton.py"


def _benchmark():
    spec = importlib.util.spec_from_file_location("interp_vs_triton", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_interp_benchmark_times_tilec_with_do_bench(monkeypatch, tmp_path):
    monkeypatch.setenv("TILEC_CACHE_DIR", str(tmp_path))
    bench = _benchmark()
    monkeypatch.setattr(bench, "MATMUL_SIZE", 96)
    calls = []

    def do_bench(fn, **kwargs):
        fn()
        calls.append(kwargs)
        return 2.5

    monkeypatch.setattr(tilec.testing, "do_bench", do_bench)
    kernels = bench.load_kernels(tl, tilec.jit, "tilec")
    inputs = bench.make_inputs("matmul", np.random.default_rng(0))
    result = bench.time_tilec("matmul", kernels, inputs, rep_ms=50)
    assert calls == [{"warmup": 0, "rep": 50, "return_mode": "median", "backend": "interp"}]
    assert result["warm"] == 2.5e-3
    # f32 products on both sides (Triton's interpreter does not round to tf32)
    assert result["error"] <= bench.TOLERANCE["matmul"]
