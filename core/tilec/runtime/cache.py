"""The compile cache: in memory, and on disk under `TILEC_CACHE_DIR` (default
`$XDG_CACHE_HOME/tilec`, else `~/.cache/tilec`).

A disk entry is `<key>.json`: an authenticated header line then a JSON body (the compiled stages
and the kernel's metadata, see `tilec.runtime.compiler`). `tilec.cache_files` reads and writes it:
the folder must be the user's alone, the entry a regular file of bounded size with a valid HMAC
under the user's key; anything else reads as a miss and is recompiled. Writes are atomic, so
concurrent compilers never see half an entry. The folder stays within `TILEC_CACHE_MAX_MB`: after
a write, the least recently used entries (a hit refreshes an entry's modification time) go. Only
tilec's entries count and go, told by name and header (`entries`): the folder may be shared with
other files (a project's `config.json`), which eviction never touches.
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import os
import re
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from tilec import cache_files, settings

SUFFIX = ".json"
ENTRY_NAME = re.compile(r"[0-9a-f]{64}" + re.escape(SUFFIX))
"""The name of an entry (`make_key`'s digest): `evict` and `tilec cache clear` look at no other."""
log = logging.getLogger(__name__)

memory: dict[str, Any] = {}
generation = 0
"""Bumped by `clear_memory`; launchers drop their per-kernel caches when it changes."""


def clear_memory() -> None:
    """Forget every in-memory compiled kernel (the disk cache stays)."""
    global generation
    memory.clear()
    generation += 1


cache_dir = settings.cache_dir


def make_key(*parts: Any) -> str:
    return hashlib.sha256("\x00".join(map(str, parts)).encode()).hexdigest()


def read(key: str) -> str | None:
    """The stored text for `key`, or None when absent, refused, truncated, corrupt or forged.
    A hit marks the entry used (its modification time), for the least-recently-used eviction."""
    folder = cache_dir()
    text = cache_files.read_entry(folder, folder, key, SUFFIX)
    if text is not None:
        with contextlib.suppress(OSError, NotImplementedError):
            os.utime(folder / f"{key}{SUFFIX}", follow_symlinks=False)
    return text


SCAN_INTERVAL_S = 60.0
"""A cache folder is scanned for eviction at most this often (by all processes together,
through the modification time of `SCAN_MARKER`), unless this process has written a tenth of the
bound since its own last scan: the folder stays within the bound give or take a minute's
writes, and a compile does not stat every entry of a large cache (35,896 entries took 3.8 s a
compile when every write scanned)."""
SCAN_MARKER = ".eviction-scan"
_written_since_scan: dict[Path, int] = {}


def write(key: str, text: str) -> None:
    """Store `text` atomically, then keep the cache within `TILEC_CACHE_MAX_MB` (`evict`, as
    often as `SCAN_INTERVAL_S` says); a cache that cannot be written (or is refused) is
    skipped."""
    limit = settings.cache_max_bytes()
    folder = cache_dir()
    if not cache_files.write_entry(folder, folder, key, SUFFIX, text):
        return
    written = _written_since_scan.get(folder, 0) + len(text)
    if written >= limit // 10 or _scan_due(folder):
        evict(folder, limit)
        cache_files.replace_file(folder, SCAN_MARKER, b"", "the eviction marker")
        written = 0
    _written_since_scan[folder] = written


def _scan_due(folder: Path) -> bool:
    try:
        scanned = os.stat(folder / SCAN_MARKER, follow_symlinks=False).st_mtime
    except OSError:
        return True
    return time.time() - scanned >= SCAN_INTERVAL_S


def evict(folder: Path, limit: int) -> None:
    """Remove the least recently used entries of `folder` until their sizes add up to `limit`
    bytes or less. Only tilec's entries count and go (as `entries` tells them); nothing is followed
    through a symbolic link."""
    with _opened(folder) as dir_fd:
        if dir_fd is None:
            return
        listing = _listing(dir_fd)
        if sum(size for _, size, _ in listing) <= limit:
            return  # the common case: no file is opened
        entries = sorted(e for e in listing if cache_files.is_own_entry(e[2], dir_fd))
        total = sum(size for _, size, _ in entries)
        for _, size, name in entries:
            if total <= limit:
                return
            with contextlib.suppress(OSError):
                os.unlink(name, dir_fd=dir_fd)
                log.debug("cache entry evicted (least recently used): %s", folder / name)
            total -= size


def entries(folder: Path | None = None) -> list[Path]:
    """The compile cache's entries (for `tilec cache`), or those of another folder of the cache
    (`autotune/`): its files named as `make_key` names them, regular files of this user's that
    start with tilec's header (`cache_files.is_own_entry`); whatever else the folder holds is
    not the cache's."""
    folder = cache_dir() if folder is None else folder
    with _opened(folder) as dir_fd:
        if dir_fd is None:
            return []
        names = [name for _, _, name in _listing(dir_fd)]
        return sorted(folder / name for name in names if cache_files.is_own_entry(name, dir_fd))


@contextlib.contextmanager
def _opened(folder: Path) -> Iterator[int | None]:
    """A descriptor of the cache folder (None where it cannot be opened or is not the user's
    alone), so that its files are named relative to the folder checked."""
    try:
        dir_fd = os.open(folder, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    except OSError:
        yield None
        return
    try:
        yield None if cache_files.unsafe_reason(os.fstat(dir_fd)) else dir_fd
    finally:
        os.close(dir_fd)


def _listing(dir_fd: int) -> list[tuple[int, int, str]]:
    """(modification time, size, name) of each regular file of the folder with an entry's name
    (a symbolic link is never an entry)."""
    found = []
    with contextlib.suppress(OSError), os.scandir(dir_fd) as listing:
        for entry in listing:
            if ENTRY_NAME.fullmatch(entry.name) and entry.is_file(follow_symlinks=False):
                with contextlib.suppress(OSError):
                    info = entry.stat(follow_symlinks=False)
                    found.append((info.st_mtime_ns, info.st_size, entry.name))
    return found
