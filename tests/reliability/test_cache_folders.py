"""The cache folder is checked as ssh checks `~/.ssh` (issue 22): nothing is made in a refused
folder; every folder on the way to it, through symbolic links, must be the user's or root's and
writable by no one else (a sticky folder such as /tmp excepted); nothing inside the cache is
followed through a symbolic link.

The tests run as root, for whom permission bits do not bind: what they check is tilec's reading
of the owners and modes, which `chmod` and `chown` set for root too."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest
from cache_launches import launch, relaunch

from tilec import cache_files
from tilec.cache_files import CacheWarning
from tilec.passes import resolved_orders
from tilec.runtime import cache

OTHER_UID = 54321


def use_cache(monkeypatch: pytest.MonkeyPatch, folder: Path) -> None:
    monkeypatch.setenv("TILEC_CACHE_DIR", str(folder))


@pytest.mark.parametrize("refusal", ["writable by others", "another user's"])
def test_nothing_is_made_in_a_refused_cache_folder(frontend_calls, monkeypatch, tmp_path, refusal):
    folder = tmp_path / "shared"
    folder.mkdir()
    if refusal == "writable by others":
        folder.chmod(0o777)
    else:
        folder.chmod(0o700)
        os.chown(folder, OTHER_UID, OTHER_UID)
    use_cache(monkeypatch, folder)
    with pytest.warns(CacheWarning, match=f"the cache folder is .*{folder}"):
        launch()
    relaunch()
    monkeypatch.setattr(resolved_orders, "remembered", {})
    resolved_orders.write_resolved("k", ["cse"])  # as a process that resolves its pipeline
    assert list(folder.iterdir()) == []  # no pipelines/, no entry, no marker
    assert frontend_calls == ["add_kernel"] * 2


def test_a_cache_folder_under_a_folder_others_may_write_is_refused(
    frontend_calls, monkeypatch, tmp_path
):
    """`<another user's 0777 folder>/sub`: the other user could swap `sub` for a symbolic link
    into the victim's folder; tilec refuses it and makes nothing there."""
    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(0o777)
    use_cache(monkeypatch, shared / "sub" / "tilec")
    with pytest.warns(
        CacheWarning, match=f"lies under a path that is writable by group or .*{shared};"
    ):
        launch()
    relaunch()
    assert list(shared.iterdir()) == []
    assert frontend_calls == ["add_kernel"] * 2


def test_a_cache_folder_under_another_users_folder_is_refused(monkeypatch, tmp_path):
    theirs = tmp_path / "theirs"
    theirs.mkdir(mode=0o755)
    os.chown(theirs, OTHER_UID, OTHER_UID)
    use_cache(monkeypatch, theirs / "tilec")
    with pytest.warns(CacheWarning, match=f"owned by uid {OTHER_UID}, neither this user"):
        launch()
    assert list(theirs.iterdir()) == []


def test_a_sticky_folder_above_is_accepted(frontend_calls, monkeypatch, tmp_path):
    """As /tmp: others may write it, but not rename or remove what is not theirs."""
    sticky = tmp_path / "tmp"
    sticky.mkdir()
    sticky.chmod(0o1777)
    use_cache(monkeypatch, sticky / "tilec")
    launch()
    relaunch()
    assert frontend_calls == ["add_kernel"]
    assert len(list((sticky / "tilec").glob("*.json"))) == 1


def test_a_symbolic_link_to_a_folder_others_may_write_is_refused(monkeypatch, tmp_path):
    """The way to the cache is checked as the system resolves it, not only the folders named."""
    shared = tmp_path / "shared"
    (shared / "target").mkdir(parents=True, mode=0o700)
    shared.chmod(0o777)
    mine = tmp_path / "mine"
    mine.mkdir(mode=0o700)
    (mine / "link").symlink_to(shared / "target")
    use_cache(monkeypatch, mine / "link" / "tilec")
    with pytest.warns(CacheWarning, match=f"writable by group or others.*{shared};"):
        launch()
    assert list((shared / "target").iterdir()) == []
    # the cache folder itself a link whose target lies there
    use_cache(monkeypatch, mine / "link")
    with pytest.warns(CacheWarning, match=f"writable by group or others.*{shared};"):
        relaunch()
    assert list((shared / "target").iterdir()) == []


def test_a_safe_symbolic_link_and_a_relative_path_are_followed(monkeypatch, tmp_path):
    (tmp_path / "real").mkdir(mode=0o700)
    (tmp_path / "link").symlink_to("real")
    monkeypatch.chdir(tmp_path)
    use_cache(monkeypatch, Path("link/../link/tilec"))
    launch()
    assert len(list((tmp_path / "real" / "tilec").glob("*.json"))) == 1


def test_a_loop_of_links_is_refused(monkeypatch, tmp_path):
    (tmp_path / "a").symlink_to("b")
    (tmp_path / "b").symlink_to("a")
    use_cache(monkeypatch, tmp_path / "a" / "tilec")
    with pytest.warns(CacheWarning, match="symbolic links"):
        launch()


def test_the_walk_reads_modes_and_owners(tmp_path, monkeypatch):
    folder = tmp_path / "a" / "b"
    folder.mkdir(parents=True)
    (tmp_path / "a").chmod(0o775)
    assert cache_files.unsafe_folder_above(folder) == (
        tmp_path / "a",
        "writable by group or others without the sticky bit (mode 775)",
    )
    (tmp_path / "a").chmod(0o1775)
    assert cache_files.unsafe_folder_above(folder) is None
    (tmp_path / "a").chmod(0o755)
    monkeypatch.setattr(cache_files, "_user", lambda: OTHER_UID)
    assert cache_files.unsafe_folder_above(folder) is None  # root's folders are trusted
    os.chown(tmp_path / "a", OTHER_UID + 1, -1)
    assert cache_files.unsafe_folder_above(folder) == (
        tmp_path / "a",
        f"owned by uid {OTHER_UID + 1}, neither this user ({OTHER_UID}) nor root",
    )
    assert cache_files.unsafe_folder_above(folder / "c" / "d") == (
        tmp_path / "a",
        f"owned by uid {OTHER_UID + 1}, neither this user ({OTHER_UID}) nor root",
    )


@pytest.mark.parametrize("target_exists", [True, False])
def test_the_eviction_marker_is_never_followed(monkeypatch, tmp_path, target_exists):
    """A link in the marker's place is replaced by the marker; its target is neither touched
    nor made."""
    monkeypatch.setenv("TILEC_CACHE_MAX_MB", "1")
    victim = tmp_path / "victim"
    if target_exists:
        victim.write_text("precious")
        long_ago = time.time() - 10_000
        os.utime(victim, (long_ago, long_ago))
    cache.write("a" * 64, "small")
    marker = cache.cache_dir() / cache.SCAN_MARKER
    marker.unlink()
    marker.symlink_to(victim)
    cache.write("b" * 64, "x" * (1024 * 1024 // 10))  # a tenth of the bound: a scan
    assert not marker.is_symlink() and marker.is_file()
    if target_exists:
        assert victim.read_text() == "precious"
        assert victim.stat().st_mtime < time.time() - 9_000
    else:
        assert not victim.exists()


def test_a_hit_does_not_touch_through_a_link(monkeypatch, tmp_path):
    """The entry read is the file its name holds (`O_NOFOLLOW`); a link there is a miss, and
    refreshing a hit's time never reaches a link's target."""
    cache.write("a" * 64, "body")
    entry = cache.cache_dir() / f"{'a' * 64}.json"
    saved = tmp_path / "saved.json"
    os.replace(entry, saved)
    long_ago = time.time() - 10_000
    os.utime(saved, (long_ago, long_ago))
    entry.symlink_to(saved)
    with pytest.warns(CacheWarning, match="symbolic link"):
        assert cache.read("a" * 64) is None
    assert saved.stat().st_mtime < time.time() - 9_000
