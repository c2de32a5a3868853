"""Autotuning results on disk: reused by a second process, re-timed per config, invalidated
when the kernel's source changes, corrupt entries re-tuned; `tilec cache` shows and clears."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from tilec.cli import main
from tilec.runtime import cache
from tilec.runtime.autotune import store

SCRIPT = """
import sys
import numpy as np
import tilec
import tilec.language as tl
import tilec.testing

timed = []
real = tilec.testing.do_bench
def counting(fn, **kw):
    timed.append(1)
    return real(fn, **kw)
tilec.testing.do_bench = counting

@tilec.jit
def scale(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    tl.store(out_ptr + offsets, tl.load(x_ptr + offsets, mask=mask) * FACTOR, mask=mask)

blocks = [int(b) for b in sys.argv[1].split(",")]
kernel = tilec.autotune([tilec.Config({"BLOCK": b}) for b in blocks], key=["n"], warmup=1, rep=2)(scale)
x = np.arange(100, dtype=np.float32)
out = np.zeros_like(x)
kernel[lambda m: (tilec.cdiv(100, m["BLOCK"]),)](x, out, 100)
assert np.array_equal(out, x * FACTOR)
print(len(timed), kernel.best_config.kwargs["BLOCK"])
"""


def _run(tmp_path: Path, blocks: str, factor: int = 2) -> tuple[int, int]:
    script = tmp_path / "tune_script.py"
    script.write_text(SCRIPT.replace("FACTOR", str(factor)))
    env = {**os.environ, "TILEC_BACKEND": "interp", "TILEC_CACHE_DIR": str(tmp_path / "cache")}
    env.pop("TILEC_PRINT_AUTOTUNING", None)
    result = subprocess.run(
        [sys.executable, str(script), blocks], env=env, capture_output=True, text=True, check=False
    )
    assert result.returncode == 0, result.stderr
    timed, best = result.stdout.split()
    return int(timed), int(best)


def test_second_process_reuses_and_adding_a_config_times_only_it(tmp_path):
    assert _run(tmp_path, "16,32")[0] == 2
    assert _run(tmp_path, "16,32")[0] == 0, "a second process reuses the stored timings"
    assert _run(tmp_path, "16,32,64")[0] == 1, "only the added config is timed"
    assert _run(tmp_path, "16,32,64", factor=3)[0] == 3, "a changed source is tuned again"


def test_corrupt_entries_are_retuned(tmp_path):
    _run(tmp_path, "16,32")
    (path,) = (tmp_path / "cache" / "autotune").glob("*.json")
    path.write_text(path.read_text().replace('"timings"', '"timingz"'))
    assert _run(tmp_path, "16,32")[0] == 2, "a file failing its checksum is never trusted"
    _header, body = path.read_text().split("\n", 1)
    assert '"timings"' in body
    assert _run(tmp_path, "16,32")[0] == 0


def test_invalid_timing_is_retimed(tmp_path):
    path = tmp_path / "entry.json"
    store.save(path, {"a": [1.0, 0.5, 2.0], "b": [float("nan"), 1.0, 1.0], "c": "x"}, {})
    assert store.load(path) == {"a": [1.0, 0.5, 2.0]}
    path.write_text("not a cache entry")
    assert store.load(path) == {}


def test_cache_command_shows_and_clears(tmp_path, capsys, monkeypatch):
    _run(tmp_path, "16,32")
    monkeypatch.setenv("TILEC_CACHE_DIR", str(tmp_path / "cache"))
    assert main(["cache"]) == 0
    out = capsys.readouterr().out
    assert "autotuning results" in out and ": 1" in out
    assert "scale" in out and "2 configs timed, best BLOCK=" in out
    assert "compile cache" in out and "0 kernels" not in out
    foreign = tmp_path / "cache" / "autotune" / f"{'c' * 64}.json"  # not written by tilec
    foreign.write_text('{"timings": {}}')
    assert main(["cache", "--clear", "autotune"]) == 0
    assert "removed 1 autotuning results" in capsys.readouterr().out
    assert list((tmp_path / "cache" / "autotune").glob("*.json")) == [foreign]
    assert main(["cache", "--clear", "all"]) == 0
    assert main(["cache"]) == 0
    assert "0 kernels" in capsys.readouterr().out
    assert main(["cache", "--clear", "bogus"]) == 2


def test_results_keyed_by_device_and_key():
    first = store.path_for("kernel", ("interp", (100,), ()), "interp")
    assert first == store.path_for("kernel", ("interp", (100,), ()), "interp")
    assert first != store.path_for("kernel", ("interp", (200,), ()), "interp")
    assert first != store.path_for("kernel", ("interp", (100,), ()), "nvidia:H100:sm_90")
    assert first != store.path_for("kernel2", ("interp", (100,), ()), "interp")


def test_results_keyed_by_tilec_version(monkeypatch):
    """Another tilec version (a changed compiler) times the configs again."""
    first = store.path_for("kernel", ("interp", (100,), ()), "interp")
    monkeypatch.setattr(store, "__version__", store.__version__ + ".post1")
    assert first != store.path_for("kernel", ("interp", (100,), ()), "interp")


def test_stored_results_are_read_like_cache_entries(tmp_path):
    """A FIFO or a symlink where a result should be is refused (never read, never blocks), and a
    file not written with the user's key is not trusted."""
    fifo = tmp_path / "fifo.json"
    os.mkfifo(fifo)
    assert store.load(fifo) == {}
    link = tmp_path / "link.json"
    link.symlink_to("/dev/zero")
    assert store.load(link) == {}
    forged = tmp_path / "forged.json"
    forged.write_text('// tilec-cache v1\n{"timings": {"a": [1.0, 1.0, 1.0]}}')
    assert store.load(forged) == {}


def test_cache_info_and_clear_subcommands(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("TILEC_CACHE_DIR", str(tmp_path / "cache"))
    cache.write("a" * 64, "{}")
    foreign = tmp_path / "cache" / ("b" * 64 + ".json")  # an entry's name, not tilec's header
    foreign.write_text("{}")
    (tmp_path / "cache" / "config.json").write_text("{}")
    assert main(["cache", "info"]) == 0
    out = capsys.readouterr().out
    assert "1 kernels" in out and "bound" in out and "TILEC_CACHE_MAX_MB" in out
    assert main(["cache", "clear", "compile"]) == 0
    assert "removed 1 compiled kernels" in capsys.readouterr().out
    assert sorted(p.name for p in (tmp_path / "cache").glob("*.json")) == [
        foreign.name,
        "config.json",
    ]
    assert main(["cache", "clear"]) == 0  # everything
    assert "autotuning results" in capsys.readouterr().out
    assert main(["cache", "info", "compile"]) == 1
    assert "takes no 'compile'" in capsys.readouterr().err
    assert main(["cache", "clear", "all", "--clear", "all"]) == 1
