"""The example backend plugin (`examples/plugins/tilec-hostcpu`, installed by `.ci/run`) keeps
working: it is listed, runs an example with `--check`, and passes the whole language
conformance suite (`TILEC_TEST_BACKEND=hostcpu pytest tests/language`, every launch checked
against the interpreter), in a subprocess: 791 tests in about 70 s on a 2-core machine, so the
whole suite runs rather than a sample.

`tests/compat` runs on it too, the whole of it (`test_the_compat_suite_passes_on_it`). The
fused-attention tutorial's cases were left out until the third session of 2026-11-27 (241 s of
the suite's time on an idle 2-core machine): hostcpu got faster (fibers switched by assembly
instead of glibc's `swapcontext`, one barrier a shuffle, one code generation a kernel at LLVM's
level 0, the IR pipeline at level 1: a case from 81 to 25 s of CPU), and the tutorial, as
Triton's does, tunes a single config under pytest (BLOCK_M 128, BLOCK_N 64; its full list still
tunes outside pytest and in `test_fused_attention_tunes_causal_launches_apart`): its seven cases
then took 56 s of wall (49 s user) on the shared 2-core machine.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import tilec
import tilec.language as tl
from tilec.plugin.manager import load_backends

ROOT = Path(__file__).resolve().parents[2]
TIMEOUT_S = 900


def _hostcpu():
    backend = load_backends().get("hostcpu")
    if backend is None:
        pytest.skip(
            "the example backend is not installed: pip install -e examples/plugins/tilec-hostcpu"
        )
    availability = backend.is_available()
    if not availability:
        pytest.skip(f"the hostcpu backend cannot run here: {availability.reason}")
    return backend


def _environment() -> dict[str, str]:
    return {**os.environ, "TILEC_TEST_BACKEND": "hostcpu"}


def test_tilec_backends_lists_it():
    _hostcpu()
    done = subprocess.run(
        [sys.executable, "-m", "tilec", "backends"], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    assert any(line.split()[:2] == ["hostcpu", "available"] for line in done.stdout.splitlines())


def test_it_is_never_chosen_automatically_before_interp():
    assert _hostcpu().priority < load_backends()["interp"].priority


def test_vector_add_runs_checked_against_the_interpreter():
    _hostcpu()
    done = subprocess.run(
        [sys.executable, "-m", "tilec", "run", "examples/vector_add.py", "--backend", "hostcpu",
         "--check"],
        capture_output=True, text=True, cwd=ROOT, timeout=300,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    assert "vector_add: max abs error 0.0 (OK)" in done.stdout


SHARDS = 4
"""Each suite runs as this many subprocesses of its test files, so that pytest-xdist's workers
share them (one suite in one test was the longest test of CI, alone on one core at the end)."""


def _shard(folder: str, shard: int) -> list[str]:
    """Every `SHARDS`-th test file of `folder` (its subfolders too), from the `shard`-th."""
    files = sorted(str(p.relative_to(ROOT)) for p in (ROOT / folder).rglob("test_*.py"))
    assert files, f"no test files under {folder}"
    return files[shard::SHARDS]


def _suite_passes(folder: str, shard: int) -> None:
    """`pytest` of a shard of `folder`'s files on the example backend (`_environment`), in a
    subprocess."""
    _hostcpu()
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *_shard(folder, shard)],
        capture_output=True, text=True, cwd=ROOT, env=_environment(), timeout=TIMEOUT_S,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout[-5000:] + done.stderr[-2000:]
    assert " passed" in done.stdout.splitlines()[-1]


@pytest.mark.parametrize("shard", range(SHARDS))
def test_the_language_conformance_suite_passes_on_it(shard):
    _suite_passes("tests/language", shard)


@tilec.jit
def bounded(x_ptr, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.device_assert(tl.load(x_ptr + offsets) < 5, "too big")


def test_a_failed_device_assert_stops_the_launch_naming_the_thread(capfd):
    _hostcpu()
    from tilec_hostcpu.driver import HostCpuError

    x = np.concatenate([np.zeros(16, np.int32), np.arange(16, dtype=np.int32)])
    with pytest.raises(HostCpuError, match=r"stopped in block \(1, 0, 0\), thread 5"):
        bounded[(2,)](x, BLOCK=16, backend="hostcpu", debug=True)
    assert "assertion failed in program (1, 0, 0) idx (5): too big" in capfd.readouterr().out


@tilec.jit
def increment(x_ptr, BLOCK: tl.constexpr):
    offsets = tl.arange(0, BLOCK)
    tl.store(x_ptr + offsets, tl.load(x_ptr + offsets) + 1)


def test_kernels_load_again_after_the_loaded_ones_are_freed():
    """Every execution engine owns its target machine: freeing one loaded kernel (its engine)
    left the others with a deleted machine, and the process crashed."""
    _hostcpu()
    import gc

    from tilec.runtime import cache

    x = np.zeros(16, np.float32)
    for _ in range(3):
        increment[(1,)](x, BLOCK=16, backend="hostcpu")
        cache.clear_memory()
        gc.collect()
    assert (x == 3).all()


def test_loading_the_plugin_imports_neither_llvmlite_nor_its_driver():
    _hostcpu()
    code = (
        "import sys, tilec; before = set(sys.modules); import tilec_hostcpu.plugin; "
        "print(sorted(m for m in set(sys.modules) - before "
        "if m.split('.')[0] == 'llvmlite' or m.startswith('tilec_hostcpu.driver')))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.stdout.strip() == "[]", done.stdout + done.stderr


@pytest.mark.parametrize("shard", range(SHARDS))
def test_the_compat_suite_passes_on_it(shard):
    """Triton's names, behaviours and tutorials (tests/compat, kernels written here, all of
    them) on the example backend, every launch checked against the interpreter."""
    _suite_passes("tests/compat", shard)
