"""The compile cache: in memory, and on disk under `TILEC_CACHE_DIR` (default `~/.cache/tilec`).

A disk entry is `<key>.json`: a header line `// tilec-cache v2 sha256=<hex>` then a JSON body (the
compiled stages and the kernel's metadata, see `tilec.runtime.compiler`).
Writes are atomic (temporary file in the same folder, then `os.replace`), so concurrent compilers
never see half an entry; an entry whose header or checksum is wrong reads as a miss.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import tempfile
from typing import Any

from tilec import settings

HEADER = "// tilec-cache v2 sha256="
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
    """The stored text for `key`, or None when absent, unreadable, truncated or corrupt."""
    try:
        data = (cache_dir() / f"{key}{SUFFIX}").read_text()
    except (OSError, UnicodeDecodeError):
        return None
    header, _, body = data.partition("\n")
    if not header.startswith(HEADER):
        return None
    if hashlib.sha256(body.encode()).hexdigest() != header[len(HEADER) :]:
        return None
    return body


def write(key: str, text: str) -> None:
    """Store `text` atomically; a cache that cannot be written is skipped silently."""
    folder = cache_dir()
    with contextlib.suppress(OSError):
        folder.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=folder, prefix=f".{key}.", suffix=".tmp")
        try:
            with os.fdopen(fd, "w") as file:
                file.write(f"{HEADER}{hashlib.sha256(text.encode()).hexdigest()}\n{text}")
            os.replace(tmp, folder / f"{key}{SUFFIX}")
        except OSError:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
