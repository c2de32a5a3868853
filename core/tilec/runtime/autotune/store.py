"""Autotuning results on disk: `<cache dir>/autotune/<digest>.json`, one file per (kernel source,
key values, device, tilec version), holding each config's timings separately, so that a config
added later is the only one timed. The file has the compile cache's framing (a sha256 header
line, then JSON); a file or a timing that does not check out is ignored and re-tuned."""

from __future__ import annotations

import contextlib
import hashlib
import json
import math
import os
import tempfile
from pathlib import Path
from typing import Any

from tilec import settings
from tilec.version import __version__

HEADER = "// tilec-autotune v1 sha256="


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
    return folder() / f"{digest.hexdigest()}.json"


def _valid(timing: Any) -> bool:
    return (
        isinstance(timing, list)
        and len(timing) == 3
        and all(isinstance(t, (int, float)) and math.isfinite(t) and t >= 0 for t in timing)
    )


def load(path: Path) -> dict[str, list[float]]:
    """Each config key's stored timings; {} for a missing or corrupt file, and a timing that is
    not three finite times is left out (its config is timed again)."""
    try:
        header, _, body = path.read_text().partition("\n")
    except (OSError, UnicodeDecodeError):
        return {}
    if header != HEADER + hashlib.sha256(body.encode()).hexdigest():
        return {}
    try:
        timings = json.loads(body)["timings"]
    except (ValueError, KeyError, TypeError):
        return {}
    if not isinstance(timings, dict):
        return {}
    return {k: [float(t) for t in v] for k, v in timings.items() if _valid(v)}


def save(path: Path, timings: dict[str, list[float]], about: dict[str, str]) -> None:
    """Write `timings` atomically; a cache that cannot be written is skipped."""
    body = json.dumps({**about, "timings": timings}, sort_keys=True)
    text = f"{HEADER}{hashlib.sha256(body.encode()).hexdigest()}\n{body}"
    with contextlib.suppress(OSError):
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.stem}.", suffix=".tmp")
        try:
            with os.fdopen(fd, "w") as file:
                file.write(text)
            os.replace(tmp, path)
        except OSError:
            with contextlib.suppress(OSError):
                os.unlink(tmp)


def entries() -> list[tuple[Path, dict[str, Any]]]:
    """Every stored result (for `tilec cache`): its path and contents (None when corrupt)."""
    found = []
    for path in sorted(folder().glob("*.json")) if folder().is_dir() else ():
        about = None
        with contextlib.suppress(OSError, ValueError, UnicodeDecodeError):
            header, _, body = path.read_text().partition("\n")
            if header == HEADER + hashlib.sha256(body.encode()).hexdigest():
                about = json.loads(body)
        found.append((path, about))
    return found
