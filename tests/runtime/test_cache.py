"""The compile cache: memory hits skip the frontend, disk entries survive a fresh memory cache,
corrupt entries are recompiled, and two processes compiling one kernel both succeed."""

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from frontend_kernels import add_kernel

import tilec
from tilec.runtime import cache, compiler

SIGNATURE = {"x_ptr": "*fp32", "y_ptr": "*fp32", "output_ptr": "*fp32", "n_elements": "i32"}


@pytest.fixture
def frontend_calls(monkeypatch):
    calls = []
    real = compiler.compile_to_tir

    def counting(*args, **kwargs):
        calls.append(args[0].__name__)
        return real(*args, **kwargs)

    monkeypatch.setattr(compiler, "compile_to_tir", counting)
    return calls


def launch(rng, n=1000):
    x, y = rng.standard_normal(n, dtype=np.float32), rng.standard_normal(n, dtype=np.float32)
    out = np.empty_like(x)
    add_kernel[(tilec.cdiv(n, 256),)](x, y, out, n, BLOCK_SIZE=256)
    np.testing.assert_array_equal(out, x + y)


def entries():
    return sorted(cache.cache_dir().glob("*.json"))


def test_second_launch_hits_memory(rng, frontend_calls):
    launch(rng)
    launch(rng)
    launch(rng, 999)  # same specialization (not divisible by 16, not 1)
    assert frontend_calls == ["add_kernel"]
    launch(rng, 1024)  # divisible by 16: a new specialization
    assert frontend_calls == ["add_kernel"] * 2


def test_disk_cache_survives_fresh_memory(rng, frontend_calls):
    launch(rng)
    assert len(entries()) == 1
    cache.clear_memory()
    launch(rng)
    assert frontend_calls == ["add_kernel"]


@pytest.mark.parametrize(
    "damage",
    [
        lambda text: text[: len(text) // 2],  # truncated
        lambda text: text.replace("arith.addf", "arith.subf"),  # body does not match checksum
        lambda text: "garbage\n" + text,  # bad header
        lambda text: "",
    ],
)
def test_corrupt_entry_is_recompiled(rng, frontend_calls, damage):
    launch(rng)
    (entry,) = entries()
    good = entry.read_text()
    entry.write_text(damage(good))
    cache.clear_memory()
    launch(rng)
    assert frontend_calls == ["add_kernel"] * 2
    assert entry.read_text() == good


def test_unparseable_entry_with_valid_checksum_is_recompiled(rng, frontend_calls):
    launch(rng)
    (entry,) = entries()
    good = entry.read_text()
    body = "func.func @add_kernel(%x: nonsense"
    cache.write(entry.stem, body)
    cache.clear_memory()
    launch(rng)
    assert frontend_calls == ["add_kernel"] * 2
    assert entry.read_text() == good


def test_unwritable_cache_dir_still_compiles(rng, monkeypatch, tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("")
    monkeypatch.setenv("TILEC_CACHE_DIR", str(blocker / "cache"))
    launch(rng)


SCRIPT = """
import sys
sys.path.insert(0, {frontend!r})
import tilec
from frontend_kernels import add_kernel
compiled = tilec.compile(add_kernel, {signature!r}, {{"BLOCK_SIZE": 128}}, backend="interp")
assert "arith.addf" in compiled.asm["tir"]
print(compiled.key)
"""


def test_two_processes_compile_at_once(tmp_path, monkeypatch):
    frontend = str(Path(__file__).parent.parent / "frontend")
    script = SCRIPT.format(frontend=frontend, signature=SIGNATURE)
    env = dict(os.environ, TILEC_CACHE_DIR=str(tmp_path / "shared"))
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", script],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for _ in range(2)
    ]
    results = [proc.communicate(timeout=120) for proc in procs]
    for proc, (_, err) in zip(procs, results, strict=True):
        assert proc.returncode == 0, err
    keys = {out.strip() for out, _ in results}
    assert len(keys) == 1
    files = [
        f for f in (tmp_path / "shared").iterdir() if f.is_file() and f.name != cache.SCAN_MARKER
    ]
    assert [f.name for f in files] == [f"{keys.pop()}.json"]  # no temporary files left
    pipelines = list((tmp_path / "shared" / "pipelines").iterdir())
    assert pipelines and all(f.suffix == ".json" for f in pipelines)
    monkeypatch.setenv("TILEC_CACHE_DIR", str(tmp_path / "shared"))
    assert cache.read(files[0].stem) is not None


def test_instrumented_compile_runs_the_passes_despite_a_cached_entry():
    from tilec.passes.instrumentation import PassTiming

    signature = {"x_ptr": "*fp32", "y_ptr": "*fp32", "output_ptr": "*fp32", "n_elements": "i32"}
    first = tilec.compile(add_kernel, signature, {"BLOCK_SIZE": 1024}, backend="interp")
    timing = PassTiming()
    again = tilec.compile(
        add_kernel, signature, {"BLOCK_SIZE": 1024}, backend="interp", instrumentations=[timing]
    )
    assert [row.name for row in timing.rows if row.name == "canonicalize"] == ["canonicalize"]
    assert again.asm["tir"] == first.asm["tir"]
