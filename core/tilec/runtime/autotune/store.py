"""Autotuning results on disk: `<cache dir>/autotune/<digest>.json`, one file per (kernel source,
key values, device, tilec version), holding each config's timings separately, so that a config
added later is the only one timed. Files are read and written as the compile cache's entries are
(`tilec.cache_files`: authenticated with the user's key, regular files only, atomic writes); a
file or a timing that does not check out is ignored and re-tuned.

With a remote tier (`tilec.remote_cache`), results missing on disk are looked up there (and
written to disk), and a tuning's results are published there; when many processes miss the same
results at once, one tunes while the others wait for its results (`shared`,
`tilec.remote_claims`)."""

from __future__ import annotations

import contextlib
import hashlib
import json
import math
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from tilec import cache_files, remote_claims, settings
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
    return _parsed(cache_files.read_entry(_root(path), path.parent, path.stem, SUFFIX))


def _parsed(body: str | None) -> dict[str, Any] | None:
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
    return _timings(_read(path))


def _timings(data: dict[str, Any] | None) -> dict[str, list[float]]:
    timings = (data or {}).get("timings")
    if not isinstance(timings, dict):
        return {}
    return {k: [float(t) for t in v] for k, v in timings.items() if _valid(v)}


def save(path: Path, timings: dict[str, list[float]], about: dict[str, str]) -> str:
    """Write `timings` atomically (a cache that cannot be written is skipped); the body."""
    body = json.dumps({**about, "timings": timings}, sort_keys=True)
    cache_files.write_entry(_root(path), path.parent, path.stem, SUFFIX, body)
    return body


@contextlib.contextmanager
def shared(path: Path | None, wanted: list[str]) -> Iterator[tuple[dict[str, list[float]], Any]]:
    """The stored timings at `path` (None: none are kept) and, where the `wanted` config keys are
    not all timed on disk and a remote tier is configured, its results (written to disk) or the
    claim to tune them (`tilec.remote_claims.Shared`: `publish` the saved body; None where there
    is nothing to publish). The claim is given up when the block ends."""
    stored = load(path) if path is not None else {}
    if path is None or all(k in stored for k in wanted):
        yield stored, None
        return
    with remote_claims.shared("autotune", path.stem, _parsed) as claim:
        if claim.value is not None:
            fetched = _timings(claim.value)
            if any(k not in stored for k in fetched):
                stored = {**fetched, **stored}
                about = {k: v for k, v in claim.value.items() if k != "timings"}
                save(path, stored, about)
        yield stored, claim


def entries() -> list[tuple[Path, dict[str, Any] | None]]:
    """Every stored result (for `tilec cache`): its path and contents (None when corrupt). Only
    tilec's files count (`tilec.runtime.cache.entries`): `tilec cache clear` removes no other."""
    return [(path, _read(path)) for path in cache.entries(folder())]
