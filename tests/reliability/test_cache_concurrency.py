"""Concurrent processes share one disk cache safely (issue 14): 8 processes x 20 rounds compiling
and reading the same kernel all succeed with correct results, and a writer killed with SIGKILL
mid-write never leaves an entry that reads as anything but a miss or a whole entry."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from tilec.runtime import cache

FRONTEND = str(Path(__file__).parent.parent / "frontend")

ROUNDS = """
import sys
sys.path.insert(0, {frontend!r})
import numpy as np
import tilec
from frontend_kernels import add_kernel
from tilec.runtime import cache

x = np.arange(1000, dtype=np.float32)
for round in range(20):
    cache.clear_memory()
    if round % 5 == 0:  # everyone compiles and writes again, at about the same time
        for entry in cache.cache_dir().glob("*.json"):
            entry.unlink(missing_ok=True)
    out = np.empty_like(x)
    add_kernel[(4,)](x, x, out, 1000, BLOCK_SIZE=256, backend="interp")
    assert (out == 2 * x).all(), round
print("ok")
"""

WRITER = """
from tilec.runtime import cache
body = "x" * 4_000_000
i = 0
print("started", flush=True)
while True:
    cache.write("k" * 64, body + str(i % 7))
    i += 1
"""


def test_eight_processes_twenty_rounds(tmp_path):
    env = dict(
        os.environ, TILEC_CACHE_DIR=str(tmp_path / "shared"), PYTHONWARNINGS="error::UserWarning"
    )
    script = ROUNDS.format(frontend=FRONTEND)
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", script],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for _ in range(8)
    ]
    results = [proc.communicate(timeout=300) for proc in procs]
    for proc, (out, err) in zip(procs, results, strict=True):
        assert proc.returncode == 0, err
        assert out.strip() == "ok"


def test_writer_killed_mid_write_leaves_no_torn_entry(tmp_path, monkeypatch):
    monkeypatch.setenv("TILEC_CACHE_DIR", str(tmp_path / "shared"))
    env = dict(os.environ)
    for _ in range(3):
        writer = subprocess.Popen(
            [sys.executable, "-c", WRITER], env=env, stdout=subprocess.PIPE, text=True
        )
        assert writer.stdout.readline().strip() == "started"
        time.sleep(0.3)
        writer.send_signal(signal.SIGKILL)
        writer.wait(timeout=30)
        text = cache.read("k" * 64)
        assert text is None or (len(text) == 4_000_001 and text.startswith("x" * 1000))
    cache.write("k" * 64, "fresh")  # a leftover temporary file does not stop the next write
    assert cache.read("k" * 64) == "fresh"
