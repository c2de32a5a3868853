"""Autotuning results on disk: `<cache dir>/autotune/<digest>.json`, one file per (kernel source,
key values, device, tilec version), holding each config's timings separately, so that a config
added later is the only one timed. Files are read and written as the compile cache's entries are
(`tilec.cache_files`: authenticated with the user's key, regular files only, atomic writes); a
file or a timing that does not check out is ignored and re-tuned."""

from __future__ import annotations

import hashlib
import json
import math
from pathlib import Path
from typing import Any

from tilec import cache_files, settings
from tilec.runtime import cache
from tilec.version import __version__

SUFFIX = ".json"


def folder() -> Path:
    return settings.cache_dir() / "autotune"


def device_name(backend: Any) -> str:
    """The backend and, on GPUs, the device's name and architecture."""
    runtime_of = getattr(backend.driver, "runtime", None)
    if runtime_of is None:
        return backend.name
    properties = getattr(runtime_of(), "properties", None)
    arch = getattr(properties, "arch", "")
    return f"{backend.name}:{getattr(properties, 'name', '')}:{arch}"


def path_for(kernel_key: str, key: Any, device: str) -> Path:
    digest = hashlib.sha256("\x00".join([kernel_key, repr(key), device, __version__]).encode())
    return folder() / f"{digest.hexdigest()}{SUFFIX}"


def _valid(timing: Any) -> bool:
    return (
        isinstance(timing, list)
        and len(timing) == 3
        and all(isinstance(t, (int, float)) and math.isfinite(t) and t >= 0 for t in timing)
    )


def _read(path: Path) -> dict[str, Any] | None:
    """The stored JSON object at `path`, or None (absent, refused, corrupt or forged)."""
    body = cache_files.read_entry(_root(path), path.parent, path.stem, SUFFIX)
    if body is None:
        return None
    try:
        data = json.loads(body)
    except ValueError:
        return None
    return data if isinstance(data, dict) else None


def _root(path: Path) -> Path:
    """The cache folder `path` lies in (its own folder for a path elsewhere)."""
    root = settings.cache_dir()
    return root if path.is_relative_to(root) else path.parent


def load(path: Path) -> dict[str, list[float]]:
    """Each config key's stored timings; {} for a missing or corrupt file, and a timing that is
    not three finite times is left out (its config is timed again)."""
    timings = (_read(path) or {}).get("timings")
    if not isinstance(timings, dict):
        return {}
    return {k: [float(t) for t in v] for k, v in timings.items() if _valid(v)}


def save(path: Path, timings: dict[str, list[float]], about: dict[str, str]) -> None:
    """Write `timings` atomically; a cache that cannot be written is skipped."""
    body = json.dumps({**about, "timings": timings}, sort_keys=True)
    cache_files.write_entry(_root(path), path.parent, path.stem, SUFFIX, body)


def entries() -> list[tuple[Path, dict[str, Any] | None]]:
    """Every stored result (for `tilec cache`): its path and contents (None when corrupt). Only
    tilec's files count (`tilec.runtime.cache.entries`): `tilec cache clear` removes no other."""
    return [(path, _read(path)) for path in cache.entries(folder())]
