"""`TILEC_LOG=info|debug` logs under the `tilec` logger (backend chosen and why, cache hits and
misses, compile time per stage); compile errors come without tilec's internal frames unless
`TILEC_DEBUG=1` (issue 14)."""

from __future__ import annotations

import logging
import os
import subprocess
import sys
import traceback

import numpy as np
import pytest

import tilec
import tilec.language as tl
from tilec import logs
from tilec.frontend import CompilationError
from tilec.runtime import cache


@tilec.jit
def copy_kernel(x_ptr, out_ptr, BLOCK: tl.constexpr):
    offsets = tl.arange(0, BLOCK)
    tl.store(out_ptr + offsets, tl.load(x_ptr + offsets))


@tilec.jit
def broken_kernel(x_ptr, BLOCK: tl.constexpr):
    tl.store(x_ptr + tl.arange(0, BLOCK), not_defined_anywhere)  # noqa: F821


def launch() -> None:
    x = np.arange(16, dtype=np.float32)
    out = np.zeros_like(x)
    copy_kernel[(1,)](x, out, BLOCK=16)
    np.testing.assert_array_equal(out, x)


def messages(caplog) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.name.startswith("tilec")]


def test_log_says_backend_cache_and_stage_times(caplog, monkeypatch):
    monkeypatch.setenv("TILEC_BACKEND", "interp")
    with caplog.at_level(logging.INFO, logger="tilec"):
        launch()
        first = messages(caplog)
        caplog.clear()
        cache.clear_memory()
        launch()
        second = messages(caplog)
    assert "backend 'interp': named by TILEC_BACKEND" in first
    assert any(m.startswith("copy_kernel: cache miss") for m in first)
    assert any(m.startswith("copy_kernel: stage tir took") for m in first)
    assert any(m.startswith("copy_kernel: compiled in") for m in first)
    assert any(m.startswith("copy_kernel: disk cache hit") for m in second)
    assert not any("cache miss" in m for m in second)


def test_automatic_choice_says_why(caplog):
    with caplog.at_level(logging.INFO, logger="tilec"):
        backend = tilec.get_backend()
    [message] = [m for m in messages(caplog) if m.startswith("backend")]
    assert f"backend '{backend.name}': the first available of" in message


@pytest.mark.parametrize(("value", "level"), [("info", logging.INFO), ("DEBUG", logging.DEBUG)])
def test_tilec_log_installs_a_handler(monkeypatch, value, level):
    monkeypatch.setenv("TILEC_LOG", value)
    old_level = logs.logger.level
    try:
        logs.configure()
        assert logs._handler in logs.logger.handlers
        assert logs.logger.level == level
    finally:
        monkeypatch.delenv("TILEC_LOG")
        logs.configure()
        logs.logger.setLevel(old_level)
    assert logs._handler is None


def test_unknown_tilec_log_value_warns_naming_the_levels(monkeypatch):
    monkeypatch.setenv("TILEC_LOG", "verbose")
    with pytest.warns(UserWarning, match="use info or debug"):
        logs.configure()
    assert logs._handler is None


def test_tilec_log_in_a_new_process_prints_on_stderr(tmp_path):
    env = {**os.environ, "TILEC_LOG": "info", "TILEC_BACKEND": "interp"}
    code = (
        "import numpy as np, tilec, tilec.language as tl\n"
        "@tilec.jit\n"
        "def k(x_ptr, BLOCK: tl.constexpr):\n"
        "    tl.store(x_ptr + tl.arange(0, BLOCK), 1.0)\n"
        "k[(1,)](np.zeros(16, np.float32), BLOCK=16)\n"
    )
    script = tmp_path / "logged.py"
    script.write_text(code)
    result = subprocess.run(
        [sys.executable, str(script)], env=env, capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 0, result.stderr
    assert "tilec INFO [tilec.runtime.compiler] backend 'interp'" in result.stderr
    assert "k: stage tir took" in result.stderr


def frames_of_error(monkeypatch, debug: bool) -> list[str]:
    if debug:
        monkeypatch.setenv("TILEC_DEBUG", "1")
    else:
        monkeypatch.delenv("TILEC_DEBUG", raising=False)
    with pytest.raises(CompilationError) as info:
        broken_kernel[(1,)](np.zeros(16, np.float32), BLOCK=16, backend="interp")
    return [frame.filename for frame in traceback.extract_tb(info.value.__traceback__)]


def test_compile_errors_lose_the_internal_frames(monkeypatch):
    files = frames_of_error(monkeypatch, debug=False)
    assert not any(os.sep + os.path.join("tilec", "frontend") in f for f in files), files
    assert files[0] == __file__


def test_tilec_debug_keeps_the_full_traceback(monkeypatch):
    files = frames_of_error(monkeypatch, debug=True)
    assert any(os.sep + os.path.join("tilec", "frontend") in f for f in files), files
