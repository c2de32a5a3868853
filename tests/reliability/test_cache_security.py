"""The disk cache trusts nothing it did not write (issue 14): a private folder, entries
authenticated under a per-user key, only bounded regular files read; what fails is recompiled."""

from __future__ import annotations

import hashlib
import json
import os
import stat
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from cache_launches import launch, relaunch

from tilec import cache_files, settings
from tilec.cache_files import CacheWarning
from tilec.passes import resolved_orders
from tilec.runtime import cache


def only_entry() -> Path:
    (entry,) = sorted(cache.cache_dir().glob("*.json"))
    return entry


def test_folder_is_private_and_key_is_private_and_outside(frontend_calls):
    launch()
    folder = cache.cache_dir()
    assert stat.S_IMODE(folder.stat().st_mode) == 0o700
    key = settings.cache_key_file()
    assert stat.S_IMODE(key.stat().st_mode) == 0o600
    assert folder not in key.parents
    assert key.stat().st_size == cache_files.KEY_BYTES
    relaunch()
    assert frontend_calls == ["add_kernel"]


def test_rewritten_entry_is_recompiled(frontend_calls):
    """The attack of the issue: `x + y` rewritten to `x - y` in the entry's body."""
    launch()
    entry = only_entry()
    header, _, body = entry.read_text().partition("\n")
    forged = body.replace("arith.addf", "arith.subf")
    assert forged != body
    entry.write_text(f"{header}\n{forged}")
    relaunch()  # asserts x + y
    # With a checksum recomputed, as anyone can (the entry format of before).
    checksum = hashlib.sha256(forged.encode()).hexdigest()
    entry.write_text(f"// tilec-cache v2 sha256={checksum}\n{forged}")
    relaunch()
    assert frontend_calls == ["add_kernel"] * 3
    assert "arith.subf" not in entry.read_text()


def test_entry_made_with_another_key_is_recompiled(frontend_calls, tmp_path, monkeypatch):
    launch()
    good = only_entry().read_text()
    monkeypatch.setenv("TILEC_CACHE_KEY_FILE", str(tmp_path / "other" / "cache-key"))
    relaunch()
    assert frontend_calls == ["add_kernel"] * 2
    assert only_entry().read_text() != good


def test_entry_renamed_to_another_key_is_a_miss():
    cache.write("a" * 64, "body")
    assert cache.read("a" * 64) == "body"
    folder = cache.cache_dir()
    os.replace(folder / f"{'a' * 64}.json", folder / f"{'b' * 64}.json")
    assert cache.read("b" * 64) is None


def test_forged_pipeline_order_is_resolved_again(monkeypatch):
    monkeypatch.setattr(resolved_orders, "remembered", {})
    resolved_orders.write_resolved("k", ["inline", "canonicalize", "cse"])
    assert resolved_orders.read_resolved("k") == ["inline", "canonicalize", "cse"]
    path = resolved_orders.pipeline_dir() / "k.json"
    header = path.read_text().partition("\n")[0]
    path.write_text(f"{header}\n{json.dumps(['inline', 'evil-pass'])}")
    assert resolved_orders.read_resolved("k") is None
    path.write_text(json.dumps(["inline"]))  # the unauthenticated format of before
    assert resolved_orders.read_resolved("k") is None


def test_folder_writable_by_others_is_refused_and_bypassed(frontend_calls):
    launch()
    folder = cache.cache_dir()
    folder.chmod(0o777)
    with pytest.warns(CacheWarning, match=f"writable by group or others.*{folder}"):
        relaunch()
    assert frontend_calls == ["add_kernel"] * 2
    only_entry().unlink()
    relaunch()  # nothing is written to a refused folder
    assert list(folder.glob("*.json")) == []


def test_pipelines_folder_writable_by_others_is_refused(monkeypatch):
    monkeypatch.setattr(resolved_orders, "remembered", {})
    resolved_orders.write_resolved("k", ["cse"])
    resolved_orders.pipeline_dir().chmod(0o775)
    with pytest.warns(CacheWarning, match="pipelines"):
        assert resolved_orders.read_resolved("k") is None


def test_entry_writable_by_others_is_refused(frontend_calls):
    launch()
    only_entry().chmod(0o666)
    with pytest.warns(CacheWarning, match=f"entry is writable.*{only_entry()}"):
        relaunch()
    assert frontend_calls == ["add_kernel"] * 2


def test_entries_of_another_user_are_refused(frontend_calls, monkeypatch):
    launch()
    monkeypatch.setattr(cache_files, "_user", lambda: os.getuid() + 1)
    with pytest.warns(CacheWarning, match="owned by uid"):
        relaunch()
    assert frontend_calls == ["add_kernel"] * 2


def test_symlink_to_dev_zero_is_a_miss_not_a_memory_error(frontend_calls):
    launch()
    entry = only_entry()
    entry.unlink()
    entry.symlink_to("/dev/zero")
    with pytest.warns(CacheWarning, match="symbolic link"):
        relaunch()
    assert frontend_calls == ["add_kernel"] * 2
    assert not entry.is_symlink()  # replaced by a real entry


def test_fifo_entry_neither_blocks_nor_is_read():
    cache.write("f" * 64, "body")
    entry = cache.cache_dir() / f"{'f' * 64}.json"
    entry.unlink()
    os.mkfifo(entry)
    result: list[object] = []
    reader = threading.Thread(target=lambda: result.append(cache.read("f" * 64)), daemon=True)
    with pytest.warns(CacheWarning, match="not a regular file"):
        reader.start()
        reader.join(timeout=10)
    assert not reader.is_alive(), "reading a FIFO entry blocked"
    assert result == [None]


def test_oversized_entry_is_not_read(monkeypatch):
    cache.write("c" * 64, "x" * 1000)
    assert cache.read("c" * 64) == "x" * 1000
    monkeypatch.setattr(cache_files, "MAX_ENTRY_BYTES", 500)
    assert cache.read("c" * 64) is None


def test_key_readable_by_others_bypasses_the_cache(frontend_calls):
    launch()
    settings.cache_key_file().chmod(0o644)
    cache_files._keys.clear()
    with pytest.warns(CacheWarning, match="cache key is readable or writable"):
        relaunch()
    assert frontend_calls == ["add_kernel"] * 2


def test_cache_honours_xdg_cache_home(monkeypatch, tmp_path):
    monkeypatch.delenv("TILEC_CACHE_DIR")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert settings.cache_dir() == tmp_path / "xdg" / "tilec"
    launch()
    assert len(list((tmp_path / "xdg" / "tilec").glob("*.json"))) == 1
    monkeypatch.setenv("XDG_CACHE_HOME", "relative/path")  # not absolute: ignored, as XDG says
    assert settings.cache_dir() == Path.home() / ".cache" / "tilec"


def test_key_file_default_follows_xdg_state_home(monkeypatch, tmp_path):
    monkeypatch.delenv("TILEC_CACHE_KEY_FILE")
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path))
    assert settings.cache_key_file() == tmp_path / "tilec" / "cache-key"


def test_processes_creating_the_key_at_once_agree(tmp_path):
    """Eight processes start with no key file: each ends up with the same key (none reads a
    half-written one, none warns)."""
    code = (
        "import warnings; warnings.simplefilter('error')\n"
        "from tilec import cache_files; print(cache_files.user_key().hex())\n"
    )
    env = dict(os.environ, TILEC_CACHE_KEY_FILE=str(tmp_path / "race" / "cache-key"))
    procs = [
        subprocess.Popen([sys.executable, "-c", code], env=env, stdout=subprocess.PIPE, text=True)
        for _ in range(8)
    ]
    keys = {proc.communicate(timeout=120)[0].strip() for proc in procs}
    assert all(proc.returncode == 0 for proc in procs)
    assert len(keys) == 1 and len(keys.pop()) == 2 * cache_files.KEY_BYTES
    assert [p.name for p in (tmp_path / "race").iterdir()] == ["cache-key"]
