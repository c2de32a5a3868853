"""A launch from the disk cache in a new process loads only the backend it launches on, through
the plugins' launch record (`tilec.plugin.launch_record`), without pluggy or the other backends'
plugins; the cache key and the automatic backend choice are those of a full load, and an edited or
broken plugin makes the launch load every plugin again (issue 24)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

LAUNCH = """
import json, sys
import numpy as np
import tilec
import tilec.language as tl

@tilec.jit
def add(x, y, out, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    tl.store(out + offs, tl.load(x + offs, mask=m) + tl.load(y + offs, mask=m), mask=m)

x = np.arange(64, dtype=np.float32)
out = np.zeros_like(x)
add[(1,)](x, x, out, 64, BLOCK=64)
assert (out == 2 * x).all()
from tilec.runtime import compiler
loaded = sorted(m for m in sys.modules if m == "pluggy" or m.startswith("tilec.plugin.manager")
                or m == "tilec.plugin.entry_point_index"
                or m.endswith("plugin") and not m.startswith("tilec."))
result = {"loaded": loaded, "used": sorted(compiler.used_backends)}
if "--full" in sys.argv:  # what the launch record gave, then the same from every plugin loaded
    result["record"] = (compiler.plugin_fingerprint(), compiler.get_backend().name)
    from tilec.plugin import manager
    manager.load_backends()
    compiler._availability.clear()
    result["full"] = (manager.fingerprint(), compiler.get_backend().name)
print(json.dumps(result))
"""

PASS_PLUGIN = """
from tilec.plugin import hookimpl
{body}

@hookimpl
def tilec_passes():
    return []
"""


@pytest.fixture
def run(tmp_path: Path):
    script = tmp_path / "launch.py"
    script.write_text(LAUNCH)
    env = {k: v for k, v in os.environ.items() if not k.startswith("TILEC_")}
    env["TILEC_CACHE_DIR"] = str(tmp_path / "cache")

    def run(*args: str, **extra: str) -> dict:
        done = subprocess.run(
            [sys.executable, "-W", "always", str(script), *args],
            env={**env, **extra}, capture_output=True, text=True, timeout=120, check=False,
        )  # fmt: skip
        assert done.returncode == 0, done.stderr
        return {**json.loads(done.stdout.splitlines()[-1]), "stderr": done.stderr}

    return run


def test_a_cache_hit_launch_imports_no_pluggy_and_no_other_backend(run, tmp_path):
    first = run(TILEC_BACKEND="interp")  # compiles: every plugin loaded, the record written
    assert "pluggy" in first["loaded"]
    entries = sorted((tmp_path / "cache").glob("*.json"))
    hit = run(TILEC_BACKEND="interp")
    assert hit["loaded"] == ["tilec_interp.plugin"], hit["loaded"]
    assert sorted((tmp_path / "cache").glob("*.json")) == entries  # a hit: same key, no new entry


def test_the_record_gives_the_full_loads_key_and_automatic_choice(run):
    run()
    hit = run("--full")
    assert "pluggy" not in hit["loaded"]  # listed before --full loads the manager
    assert hit["record"] == hit["full"]
    assert hit["used"] == [hit["full"][1]]


def test_an_edited_or_broken_plugin_makes_the_launch_load_every_plugin(run, tmp_path):
    root = tmp_path / "dist"
    info = root / "tilec_lr-0.1.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: tilec-lr\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text("[tilec]\nlr = lr_plugin\n")
    module = root / "lr_plugin.py"
    module.write_text(textwrap.dedent(PASS_PLUGIN.format(body="")))
    path = os.pathsep.join([str(root), os.environ.get("PYTHONPATH", "")])
    run("--full", TILEC_BACKEND="interp", PYTHONPATH=path)
    hit = run("--full", TILEC_BACKEND="interp", PYTHONPATH=path)
    assert "lr_plugin" not in hit["loaded"] and hit["record"] == hit["full"]
    other = root / "unrelated-1.0.dist-info"  # any distribution installed: every plugin loads
    other.mkdir()
    (other / "METADATA").write_text("Metadata-Version: 2.1\nName: unrelated\nVersion: 1.0\n")
    installed = run("--full", TILEC_BACKEND="interp", PYTHONPATH=path)
    assert "lr_plugin" in installed["loaded"] and installed["record"] == installed["full"]
    assert "lr_plugin" not in run(TILEC_BACKEND="interp", PYTHONPATH=path)["loaded"]
    time.sleep(0.01)
    module.write_text(textwrap.dedent(PASS_PLUGIN.format(body="VALUE = 1")))
    edited = run("--full", TILEC_BACKEND="interp", PYTHONPATH=path)
    assert "lr_plugin" in edited["loaded"] and edited["record"] == edited["full"]
    module.write_text(textwrap.dedent(PASS_PLUGIN.format(body="1 / 0")))
    for _ in range(2):  # a failed load writes no record: each process reports the plugin
        broken = run(TILEC_BACKEND="interp", PYTHONPATH=path)
        assert "tilec plugin 'lr (tilec-lr 0.1)'" in broken["stderr"], broken["stderr"]
        assert "ZeroDivisionError" in broken["stderr"]


def test_entry_points_the_index_cannot_remember_are_scanned_again_by_a_launch(
    monkeypatch, tmp_path
):
    """Where the entry-point index remembers no scan (a finder's own distributions: no
    `entry_points.txt` to check), the record holds while a new scan finds the entry points it
    recorded, and not once the scan finds others."""
    from tilec.plugin import entry_point_index, launch_record, manager
    from tilec.runtime import compiler

    monkeypatch.setenv("TILEC_CACHE_DIR", str(tmp_path / "cache"))
    scan = entry_point_index._scan
    monkeypatch.setattr(entry_point_index, "_scan", lambda group: (scan(group)[0], None))
    manager.load_backends()  # a full load: writes the record
    tilec_code = compiler.code_fingerprint("tilec")
    record = json.loads(
        (tmp_path / "cache" / "plugins" / f"{launch_record._name()}.json")
        .read_text()
        .split("\n", 1)[1]
    )
    assert record["entry_point_files"] is None
    assert launch_record._read(tilec_code) is not None
    found = entry_point_index.entry_points(launch_record.GROUP)
    monkeypatch.setattr(entry_point_index, "_scan", lambda group: (found[:-1], None))
    assert launch_record._read(tilec_code) is None


def test_an_entry_point_added_in_place_makes_the_launch_load_every_plugin(
    monkeypatch, tmp_path, make_distribution
):
    """The record holds while the `entry_points.txt` files that declared its entry points keep
    their stamps: an entry point added to one in place (which changes no folder) is loaded."""
    from tilec.plugin import launch_record, manager
    from tilec.runtime import compiler

    monkeypatch.setenv("TILEC_CACHE_DIR", str(tmp_path / "cache"))
    plugin = PASS_PLUGIN.format(body="")
    root = make_distribution("tilec-ep", {"ep": "ep_plugin"}, {"ep_plugin": plugin})
    manager.load_backends()
    tilec_code = compiler.code_fingerprint("tilec")
    assert launch_record._read(tilec_code) is not None
    (root / "ep_more.py").write_text(textwrap.dedent(plugin))
    entry_points = root / "tilec_ep-0.1.dist-info" / "entry_points.txt"
    entry_points.write_text(entry_points.read_text() + "more = ep_more\n")
    assert launch_record._read(tilec_code) is None
