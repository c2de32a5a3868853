"""benchmarks/persistent_vs_triton.py's kernels (persistent, host and in-kernel descriptors, with
and without warp_specialize) compute the matmul its GPU run checks, here on interp."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "persistent_vs_triton.py"


def _benchmark():
    spec = importlib.util.spec_from_file_location("persistent_vs_triton", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize("size", [64, 80])
def test_every_variant_matches_torch_on_interp(monkeypatch, size):
    torch = pytest.importorskip("torch")
    monkeypatch.setenv("TILEC_BACKEND", "interp")
    bench = _benchmark()
    ns = bench.load("tilec")
    ns["set_allocator"](lambda size, alignment, stream: torch.empty(size, dtype=torch.int8))
    gen = torch.Generator().manual_seed(size)
    a = torch.randn(size, size, generator=gen).half()
    b = torch.randn(size, size, generator=gen).half()  # N x K
    ref = a.float() @ b.float().T
    for variant in bench.VARIANTS:
        c = torch.full((size, size), float("nan"), dtype=torch.float16)
        bench.launcher(ns, variant, a, b, c, (32, 32, 32, 4, 2), num_sms=3)()
        error = float((c.float() - ref).norm() / ref.norm())
        assert error < 1e-3, (variant, error)


def test_the_fuse_ab_measures_both_variants_on_interp(monkeypatch):
    """benchmarks/persistent_fuse_ab.py: the fused and the nested kernel checked against torch,
    timed in turn each round (a counting timer here), and the fused / nest ratio reported."""
    pytest.importorskip("torch")
    monkeypatch.setenv("TILEC_BACKEND", "interp")
    spec = importlib.util.spec_from_file_location("persistent_fuse_ab", SCRIPT.with_name(
        "persistent_fuse_ab.py"))  # fmt: skip
    ab = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(ab)
    calls = []
    timer = lambda run: calls.append(run) or 1.0 + len(calls) % 2  # noqa: E731
    rates = ab.measure({"tilec": ab.load("tilec")}, 64, (32, 32, 32, 4, 2), 3, timer, "cpu", 3)
    assert sorted(rates) == [("tilec", "persistent"), ("tilec", "persistent-nest")]
    assert len(calls) == 6 and all(len(v) == 3 for v in rates.values())
    lines = ab.report(64, rates)
    assert lines[-1].startswith("| 64^3 | tilec | fused / nest | ")
