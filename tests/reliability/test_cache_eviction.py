"""The disk cache has a size bound (`TILEC_CACHE_MAX_MB`) with least-recently-used eviction
(issue 14); a hit counts as a use."""

from __future__ import annotations

import os
import time

import pytest

from tilec.runtime import cache

ENTRY = "x" * 400_000  # three of these exceed 1 MiB


def key(letter: str) -> str:
    return letter * 64


def age(letter: str, seconds_ago: int) -> None:
    path = cache.cache_dir() / f"{key(letter)}.json"
    then = path.stat().st_mtime - seconds_ago
    os.utime(path, (then, then))


def present() -> set[str]:
    return {p.name[0] for p in cache.cache_dir().glob("*.json")}


def test_oldest_entries_go_when_the_bound_is_passed(monkeypatch):
    monkeypatch.setenv("TILEC_CACHE_MAX_MB", "1")
    cache.write(key("a"), ENTRY)
    age("a", 300)
    cache.write(key("b"), ENTRY)
    age("b", 200)
    assert present() == {"a", "b"}
    cache.write(key("c"), ENTRY)
    assert present() == {"b", "c"}
    total = sum(p.stat().st_size for p in cache.cache_dir().glob("*.json"))
    assert total <= 1024 * 1024


def test_a_hit_makes_an_entry_recently_used(monkeypatch):
    monkeypatch.setenv("TILEC_CACHE_MAX_MB", "1")
    cache.write(key("a"), ENTRY)
    age("a", 300)
    cache.write(key("b"), ENTRY)
    age("b", 200)
    assert cache.read(key("a")) == ENTRY  # a is now the most recently used
    cache.write(key("c"), ENTRY)
    assert present() == {"a", "c"}


def test_default_bound_keeps_small_caches_whole(monkeypatch):
    monkeypatch.delenv("TILEC_CACHE_MAX_MB", raising=False)
    for letter in "abcde":
        cache.write(key(letter), ENTRY)
    assert present() == set("abcde")


@pytest.mark.parametrize("value", ["0", "-3", "lots", "1.5"])
def test_a_bound_that_is_not_a_positive_integer_is_an_error(monkeypatch, value):
    monkeypatch.setenv("TILEC_CACHE_MAX_MB", value)
    with pytest.raises(ValueError, match=f"TILEC_CACHE_MAX_MB='{value}' is not a positive"):
        cache.write(key("a"), "body")


def test_small_writes_scan_the_folder_at_most_once_a_minute(monkeypatch):
    """A large cache is not scanned on every write (each scan stats every entry): small writes
    scan when the folder was last scanned a minute ago or more (by any process), or when this
    process has written a tenth of the bound since its own scan."""
    monkeypatch.setenv("TILEC_CACHE_MAX_MB", "1")
    scans = []
    real_evict = cache.evict
    monkeypatch.setattr(
        cache, "evict", lambda folder, limit: scans.append(folder) or real_evict(folder, limit)
    )
    cache.write(key("a"), "small")
    assert len(scans) == 1  # no scan marker yet
    for letter in "bcd":
        cache.write(key(letter), "small")
    assert len(scans) == 1
    marker = cache.cache_dir() / cache.SCAN_MARKER
    then = marker.stat().st_mtime - cache.SCAN_INTERVAL_S
    os.utime(marker, (then, then))
    cache.write(key("e"), "small")
    assert len(scans) == 2  # the last scan is a minute old
    cache.write(key("f"), "x" * (1024 * 1024 // 10))
    assert len(scans) == 3  # a tenth of the bound written


def test_eviction_removes_only_tilecs_own_entries(monkeypatch, tmp_path):
    """Issue 22: the cache pointed at a project folder. Its `config.json`, data files, a file
    named like an entry that tilec did not write, and a link named like an entry (and the file
    it points to) survive eviction, however old; tilec's entries go least recently used first."""
    monkeypatch.setenv("TILEC_CACHE_MAX_MB", "1")
    folder = cache.cache_dir()
    folder.mkdir(mode=0o700)
    victim = tmp_path / "victim.json"
    victim.write_text("precious")
    foreign = {
        "config.json": '{"learning_rate": 0.1}',
        "data.json": "d" * 600_000,
        f"{key('f')}.json": "f" * 600_000,  # an entry's name, but not tilec's header
        "weights.bin": "w" * 600_000,
        "notes.txt": "keep me",
    }
    for name, text in foreign.items():
        (folder / name).write_text(text)
    (folder / f"{key('s')}.json").symlink_to(victim)
    long_ago = time.time() - 10_000  # older than every entry: the first to go were they entries
    for name in [*foreign, f"{key('s')}.json"]:
        os.utime(folder / name, (long_ago, long_ago), follow_symlinks=False)
    cache.write(key("a"), ENTRY)
    age("a", 300)
    cache.write(key("b"), ENTRY)
    age("b", 200)
    cache.write(key("c"), ENTRY)
    for name, text in foreign.items():
        assert (folder / name).read_text() == text, name
    assert (folder / f"{key('s')}.json").is_symlink()
    assert victim.read_text() == "precious"
    assert {path.name[0] for path in cache.entries()} == {"b", "c"}
