"""The random kernel fuzzer: a fixed-seed slice of each CPU mode (interp against the NumPy
model, every backend's code generation), the shrinker, the child process that catches aborts,
and the regressions the fuzzer found."""

from __future__ import annotations

import sys

import numpy as np
import pytest

import tilec
import tilec.language as tl
from tilec import cli
from tilec.fuzz import check, program
from tilec.fuzz.campaign import Worker, run_campaign
from tilec.fuzz.generate import DOT_FORMS, generate
from tilec.fuzz.program import Store, Unary, statement_nodes, walk_statements
from tilec.fuzz.shrink import is_valid, shrink

INTERP_SLICE = 60
CODEGEN_SLICE = 6


def test_a_seed_gives_the_same_kernel_every_time():
    assert generate(7).source() == generate(7).source()
    assert generate(7).source() != generate(8).source()


def test_generated_kernels_cover_the_language():
    text = "".join(generate(seed, bf16=True).source() for seed in range(60))
    for name in ("tl.load", "other=", "tl.where", ".to(tl.", "tl.sum", "tl.cumsum", "tl.argmax",
                 "tl.max", "tl.exp", "tl.dot", "tl.atomic_add", "tl.atomic_max", "for i0 in range",
                 "tl.static_range", "if ", "else:", "//", "<<", "tl.bfloat16", "[:, None]"):  # fmt: skip
        assert name in text, name


def test_interp_slice_matches_the_numpy_model():
    summary = run_campaign("interp", seed=0, count=INTERP_SLICE, shrink_findings=False)
    assert summary.kernels == INTERP_SLICE
    assert not summary.results, [r.finding.message for r in summary.results]


def test_codegen_slice_compiles_for_every_gpu_target():
    summary = run_campaign("codegen", seed=0, count=CODEGEN_SLICE, shrink_findings=False)
    assert summary.kernels == CODEGEN_SLICE
    assert not summary.results, [r.finding.message for r in summary.results]


def test_the_interp_check_finds_a_semantic_difference(monkeypatch):
    """If the model (or the interpreter) computed `a - b` as `a + b`, the check says so."""
    seeds = [s for s in range(100) if any(
        getattr(node, "op", None) == "sub"
        for stmt in walk_statements(generate(s).body) if isinstance(stmt, Store)
        for node in stmt.value.walk()
    )][:8]  # fmt: skip
    assert all(check.check_interp(generate(s)) is None for s in seeds)
    monkeypatch.setitem(program.BINARY, "sub", ("({0} - {1})", np.add))
    findings = [check.check_interp(generate(s)) for s in seeds]
    mismatches = [f for f in findings if f is not None]
    assert mismatches and all(f.kind == "mismatch" for f in mismatches)
    assert "interp vs numpy" in mismatches[0].message


def test_the_shrinker_keeps_the_failure_and_drops_the_rest():
    seed = next(s for s in range(200) if _has_exp(generate(s)) and len(generate(s).body) > 6)
    original = generate(seed)
    small, tries = shrink(original, _has_exp, max_tries=400)
    assert _has_exp(small) and is_valid(small)
    assert tries > 0
    assert len(small.source()) < len(original.source()) / 2
    assert small.grid == 1


def _has_exp(prog) -> bool:
    return any(
        isinstance(node, Unary) and node.op == "exp"
        for stmt in walk_statements(prog.body)
        for root in statement_nodes(stmt)
        for node in root.walk()
    )


def test_a_child_that_aborts_or_hangs_is_a_finding():
    worker = Worker("interp", timeout=5)
    abort = [sys.executable, "-c", "import os, sys; sys.stdin.readline(); os.abort()"]
    hang = [sys.executable, "-c", "import time, sys; sys.stdin.readline(); time.sleep(60)"]
    try:
        worker.command = abort
        crash = worker.check(generate(0))
        assert crash is not None and crash.kind == "crash" and "-6" in crash.key
        worker.command = hang
        stall = worker.check(generate(0))
        assert stall is not None and stall.kind == "timeout"
    finally:
        worker.close()


def test_tilec_fuzz_runs_a_campaign_and_writes_no_reproducer_without_findings(tmp_path, capsys):
    status = cli.main(["fuzz", "--mode", "interp", "--seed", "3", "--count", "2",
                       "--out", str(tmp_path)])  # fmt: skip
    out = capsys.readouterr().out
    assert status == 0, out
    assert "interp: 2 kernels in" in out and "0 findings" in out
    assert not list(tmp_path.iterdir())


def test_tilec_fuzz_needs_a_count_or_a_time(capsys):
    assert cli.main(["fuzz", "--mode", "codegen"]) == 1
    assert "give --count N, --time SECONDS, or both" in capsys.readouterr().err


# Regressions found by the fuzzer -----------------------------------------------------------


@tilec.jit
def static_range_in_both_branches(out_ptr, n, BLOCK: tl.constexpr):
    x = tl.full([BLOCK], 0, tl.int32)
    if n > 2:
        for i in tl.static_range(0, 3):
            x += i
    else:
        for i in tl.static_range(0, 5):
            x += 2 * i
    tl.store(out_ptr + tl.arange(0, BLOCK), x)


@pytest.mark.parametrize(("n", "expected"), [(3, 3), (1, 20)])
def test_a_runtime_if_whose_branches_both_run_a_static_range(n, expected):
    """Found by `tilec fuzz --mode interp` (seed 127): both branches leave the loop variable,
    a Python int, assigned, and merging it raised StopIteration in the frontend."""
    out = np.zeros(4, np.int32)
    static_range_in_both_branches[(1,)](out, n, BLOCK=4, backend="interp")
    assert (out == expected).all()


@tilec.jit
def mixed_fma(x_ptr, y_ptr, z_ptr, out_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x, y, z = tl.load(x_ptr + offs), tl.load(y_ptr + offs), tl.load(z_ptr + offs)
    tl.store(out_ptr + offs, tl.fma(x, y, z))


@pytest.mark.parametrize(("x", "y", "z"), [("fp32", "fp16", "fp16"), ("fp16", "fp16", "fp32")])
def test_fma_of_mixed_float_types_computes_in_the_wider_type(x, y, z):
    """Found by `tilec fuzz --mode codegen` (seed 1): `tl.fma` of float16 and float32 operands
    made a `math.fma` of mixed types, reported as "pass 'inline' produced invalid IR"."""
    dtypes = {"fp32": np.float32, "fp16": np.float16}
    values = [np.array([1.5, -2.0, 3.25, 0.5], dtypes[t]) for t in (x, y, z)]
    out = np.zeros(4, np.float32)
    signature = {"x_ptr": "*" + x, "y_ptr": "*" + y, "z_ptr": "*" + z, "out_ptr": "*fp32"}
    compiled = tilec.compile(mixed_fma, signature=signature, constexprs={"BLOCK": 4},
                             backend="interp")  # fmt: skip
    compiled.run((1,), [*values, out])
    expected = values[0].astype(np.float64) * values[1] + values[2]
    assert np.array_equal(out, expected.astype(np.float32))
    assert "tensor<4xf32>" in compiled.asm["tir"].split("math.fma")[1].splitlines()[0]


def _dots(seeds: range, bf16: bool = True) -> list[tuple[int, program.Dot]]:
    return [
        (seed, node)
        for seed in seeds
        for stmt in walk_statements(generate(seed, bf16=bf16).body)
        for root in statement_nodes(stmt)
        for node in root.walk()
        if isinstance(node, program.Dot)
    ]


def test_dots_take_every_out_dtype_triton_allows():
    """Issue 22: the fuzzer made only float16 -> float32 and int8 -> int32 dots, so an int8 dot
    with `out_dtype=tl.int8` (Triton: the int32 sums; tilec truncated them) was never tried."""
    made = {(dot.a.dtype, dot.out_dtype) for _, dot in _dots(range(1500))}
    for result, forms in DOT_FORMS.items():
        for source, outs in forms:
            for out in outs:
                assert (source, out) in made, (source, out, result)


def test_dots_with_an_out_dtype_narrower_than_the_accumulator_match_the_model():
    """Before the fix, 5 of these (seeds 558, 901, 1512, 1830, 1923) stored truncated sums or
    failed to compile where the model (Triton) has the int32 sums."""
    dots = _dots(range(2000), bf16=False)
    int8 = sorted({seed for seed, dot in dots if dot.a.dtype == "int8" and dot.out_dtype in
                   ("int8", "int16")})  # fmt: skip
    f16 = sorted({seed for seed, dot in dots if dot.out_dtype == "float16" and
                  dot.a.dtype == "float16"})[:4]  # fmt: skip
    assert {558, 901, 1512, 1830, 1923} <= set(int8) and len(f16) == 4
    findings = {seed: check.check_interp(generate(seed)) for seed in int8 + f16}
    assert not any(findings.values()), findings
