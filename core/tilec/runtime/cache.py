"""The compile cache: in memory, and on disk under `TILEC_CACHE_DIR` (default
`$XDG_CACHE_HOME/tilec`, else `~/.cache/tilec`).

A disk entry is `<key>.json`: an authenticated header line then a JSON body (the compiled stages
and the kernel's metadata, see `tilec.runtime.compiler`). `tilec.cache_files` reads and writes it:
the folder must be the user's alone, the entry a regular file of bounded size with a valid HMAC
under the user's key; anything else reads as a miss and is recompiled. Writes are atomic, so
concurrent compilers never see half an entry. The folder stays within `TILEC_CACHE_MAX_MB`: after
a write, the least recently used entries (a hit refreshes an entry's modification time) go.
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import os
import time
from pathlib import Path
from typing import Any

from tilec import cache_files, settings

SUFFIX = ".json"
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
        with contextlib.suppress(OSError):
            os.utime(folder / f"{key}{SUFFIX}")
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
        with contextlib.suppress(OSError):
            (folder / SCAN_MARKER).touch()
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
    bytes or less."""
    entries = []
    with contextlib.suppress(OSError), os.scandir(folder) as listing:
        for entry in listing:
            if entry.name.endswith(SUFFIX) and entry.is_file(follow_symlinks=False):
                info = entry.stat(follow_symlinks=False)
                entries.append((info.st_mtime_ns, info.st_size, entry.path))
    total = sum(size for _, size, _ in entries)
    for _, size, path in sorted(entries):
        if total <= limit:
            return
        with contextlib.suppress(OSError):
            os.unlink(path)
            log.debug("cache entry evicted (least recently used): %s", path)
        total -= size
