"""Resolved pipeline orders, remembered per process and on disk (`$TILEC_CACHE_DIR/pipelines/`).

The pass manager keys an order by a digest of every registered pass's declared relations and the
request, so a new process whose pipeline was resolved before does not import networkx. The files
are authenticated like compiled kernels (`tilec.cache_files`): a rewritten one cannot drop or
inject passes. With a remote tier (`tilec.remote_cache`) an order missing on disk is looked up
there (and written to disk), and a resolved one is published there too.
"""

from __future__ import annotations

import json
from pathlib import Path

from tilec import cache_files, remote_cache, settings

remembered: dict[str, list[str]] = {}
"""The orders resolved or read in this process, by key."""


def pipeline_dir() -> Path:
    return settings.cache_dir() / "pipelines"


def read_resolved(key: str) -> list[str] | None:
    """A remembered order, or None (absent, refused, forged or malformed: resolved again)."""
    order = _parsed(cache_files.read_entry(settings.cache_dir(), pipeline_dir(), key, ".json"))
    if order is None and remote_cache.enabled():
        order = _parsed(remote_cache.get("pipelines", key))
        if order is not None:
            _write_disk(key, order)
    return order


def _parsed(text: str | None) -> list[str] | None:
    if text is None:
        return None
    try:
        order = json.loads(text)
    except ValueError:
        return None
    if isinstance(order, list) and all(isinstance(n, str) for n in order):
        return order
    return None


def write_resolved(key: str, order: list[str]) -> None:
    """Remember an order (authenticated, atomically), also on the remote tier; failures are
    ignored."""
    _write_disk(key, order)
    if remote_cache.enabled():
        remote_cache.put("pipelines", key, json.dumps(order))


def _write_disk(key: str, order: list[str]) -> None:
    cache_files.write_entry(settings.cache_dir(), pipeline_dir(), key, ".json", json.dumps(order))


__all__ = ["pipeline_dir", "read_resolved", "remembered", "write_resolved"]
