"""Resolved pipeline orders, remembered per process and on disk (`$TILEC_CACHE_DIR/pipelines/`).

The pass manager keys an order by a digest of every registered pass's declared relations and the
request, so a new process whose pipeline was resolved before does not import networkx.
"""

from __future__ import annotations

import contextlib
import json
import os
import tempfile
from pathlib import Path

from tilec import settings

remembered: dict[str, list[str]] = {}
"""The orders resolved or read in this process, by key."""


def pipeline_dir() -> Path:
    return settings.cache_dir() / "pipelines"


def read_resolved(key: str) -> list[str] | None:
    """A remembered order, or None (absent, unreadable or malformed: resolved again)."""
    try:
        order = json.loads((pipeline_dir() / f"{key}.json").read_text())
    except (OSError, ValueError):
        return None
    if isinstance(order, list) and all(isinstance(n, str) for n in order):
        return order
    return None


def write_resolved(key: str, order: list[str]) -> None:
    """Remember an order (atomically: temporary file, then rename); failures are ignored."""
    folder = pipeline_dir()
    with contextlib.suppress(OSError):
        folder.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=folder, prefix=f".{key}.", suffix=".tmp")
        try:
            with os.fdopen(fd, "w") as file:
                json.dump(order, file)
            os.replace(tmp, folder / f"{key}.json")
        except OSError:
            with contextlib.suppress(OSError):
                os.unlink(tmp)


__all__ = ["pipeline_dir", "read_resolved", "remembered", "write_resolved"]
