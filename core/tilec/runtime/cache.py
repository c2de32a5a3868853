"""The compile cache: in memory, and on disk under `TILEC_CACHE_DIR` (default
`$XDG_CACHE_HOME/tilec`, else `~/.cache/tilec`).

A disk entry is `<key>.json`: an authenticated header line then a JSON body (the compiled stages
and the kernel's metadata, see `tilec.runtime.compiler`). `tilec.cache_files` reads and writes it:
the folder must be the user's alone, the entry a regular file of bounded size with a valid HMAC
under the user's key; anything else reads as a miss and is recompiled. Writes are atomic, so
concurrent compilers never see half an entry.
"""

from __future__ import annotations

import hashlib
from typing import Any

from tilec import cache_files, settings

SUFFIX = ".json"

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
    """The stored text for `key`, or None when absent, refused, truncated, corrupt or forged."""
    folder = cache_dir()
    return cache_files.read_entry(folder, folder, key, SUFFIX)


def write(key: str, text: str) -> None:
    """Store `text` atomically; a cache that cannot be written (or is refused) is skipped."""
    folder = cache_dir()
    cache_files.write_entry(folder, folder, key, SUFFIX, text)
