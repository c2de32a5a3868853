"""A cache that cannot be read or written never fails a compile or a launch (issue 22): an entry
that is a folder, a cache folder whose name is too long, any other OSError on a read or a write
is a miss, recompiled, with one `CacheWarning`, as the other kinds of corruption are."""

from __future__ import annotations

import errno
import os

import pytest
from cache_launches import launch, relaunch

from tilec import cache_files
from tilec.cache_files import CacheWarning
from tilec.runtime import cache


def test_an_entry_that_is_a_folder_is_recompiled(frontend_calls):
    launch()
    (entry,) = cache.cache_dir().glob("*.json")
    entry.unlink()
    entry.mkdir()
    (entry / "inside").write_text("left alone")
    with pytest.warns(CacheWarning) as caught:
        relaunch()
    messages = [str(w.message) for w in caught]
    assert any("not a regular file" in m and str(entry) in m for m in messages), messages
    assert any("cannot be written (Is a directory)" in m for m in messages), messages
    relaunch()
    assert frontend_calls == ["add_kernel"] * 3
    assert (entry / "inside").read_text() == "left alone"  # not ours to remove


@pytest.mark.parametrize(
    "name",
    [
        "x" * 300,  # one name longer than the file system's 255
        "/".join(["y" * 200] * 25),  # a path longer than PATH_MAX (4096)
    ],
    ids=["long-name", "long-path"],
)
def test_a_cache_folder_name_too_long_is_bypassed(frontend_calls, tmp_path, monkeypatch, name):
    monkeypatch.setenv("TILEC_CACHE_DIR", str(tmp_path / name))
    with pytest.warns(CacheWarning, match="File name too long"):
        launch()
    relaunch()
    assert frontend_calls == ["add_kernel"] * 2


def test_an_error_reading_an_entry_is_a_miss(frontend_calls, monkeypatch):
    launch()

    def failing_open(*args, **kwargs):
        raise OSError(errno.EIO, os.strerror(errno.EIO))

    monkeypatch.setattr(cache_files, "open", failing_open, raising=False)
    with pytest.warns(CacheWarning, match="entry is unreadable \\(Input/output error\\)"):
        relaunch()
    assert frontend_calls == ["add_kernel"] * 2


@pytest.mark.parametrize("failing", ["mkstemp", "replace"])
def test_an_error_writing_an_entry_is_skipped(frontend_calls, monkeypatch, failing):
    def no_space(*args, **kwargs):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    assert cache_files.user_key() is not None  # made before the disk fills
    target = cache_files.tempfile if failing == "mkstemp" else cache_files.os
    with monkeypatch.context() as patch:
        patch.setattr(target, failing, no_space)
        with pytest.warns(CacheWarning, match="cannot be written \\(No space left on device\\)"):
            launch()
    relaunch()  # nothing was stored
    assert frontend_calls == ["add_kernel"] * 2
    assert [p.name for p in cache.cache_dir().iterdir() if p.name.endswith(".tmp")] == []
