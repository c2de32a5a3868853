"""The `tilec` entry points of the installed distributions, remembered between processes.

`importlib.metadata.entry_points()` reads every distribution's metadata on `sys.path`: 13 ms on
the GPU host's 200 distributions, and importing `importlib.metadata` costs as much again where
nothing else has. A launch from a warm disk cache is otherwise a few milliseconds of work, so
the result of the scan is kept in `$TILEC_CACHE_DIR/plugins/` (authenticated and written
atomically like a compiled kernel: `tilec.cache_files`), one file per `sys.path` and
`sys.meta_path` (the classes of its finders), which a scan overwrites. The file holds what
decides the scan, and is used only while all of it still holds:

- the distributions' metadata folders (`*.dist-info`, `*.egg-info`) in each `sys.path` entry:
  installing, upgrading or removing a distribution creates or deletes one. Each entry's
  modification time is kept too: where it is unchanged, nothing was added to or removed from
  the folder and it is not listed again; where it changed (a script's folder, where the script
  writes), the folder is listed and its metadata folders compared;
- the size and modification time of each `entry_points.txt` that declared an entry point of the
  group (an edit in place changes no folder).

A distribution that a finder provides without such a file is not remembered: every process
scans. An unreadable, forged or corrupt file is a scan too.
"""

from __future__ import annotations

import hashlib
import importlib
import json
import os
import sys
from pathlib import Path
from typing import NamedTuple

from tilec import cache_files, settings

FORMAT = 1
"""The index's layout; a change makes older indexes miss."""


class IndexedEntryPoint(NamedTuple):
    name: str
    value: str
    """`module` or `module:attribute`, as in `entry_points.txt`."""
    distribution: str | None
    version: str | None

    def load(self) -> object:
        """What the entry point names, as `importlib.metadata.EntryPoint.load` gives it."""
        module_name, _, attribute = self.value.partition(":")
        loaded: object = importlib.import_module(module_name.strip())
        for part in filter(None, attribute.strip().split(".")):
            loaded = getattr(loaded, part)
        return loaded


def index_dir() -> Path:
    return settings.cache_dir() / "plugins"


def entry_points(group: str) -> list[IndexedEntryPoint]:
    """The entry points of `group`, from the index where it still holds, else scanned."""
    name = _name(group)
    text = cache_files.read_entry(settings.cache_dir(), index_dir(), name, ".json")
    if text is not None:
        found = _valid(text)
        if found is not None:
            return found
    folders = [[_stamp(entry), _metadata_folders(entry)] for entry in sys.path]
    found, stamps = _scan(group)
    if stamps is None:
        return found
    record = {"format": FORMAT, "entry_points": found, "folders": folders, "stamps": stamps}
    body = json.dumps(record, sort_keys=True)
    cache_files.write_entry(settings.cache_dir(), index_dir(), name, ".json", body)
    return found


def _name(group: str) -> str:
    """The index file's name: a digest of the group, the interpreter, `sys.path` and the
    finders."""
    finders = [f"{type(f).__module__}.{type(f).__qualname__}" for f in sys.meta_path]
    parts = ["entry points", str(FORMAT), group, sys.version, *sys.path, "", *finders]
    return hashlib.sha256("\x00".join(parts).encode()).hexdigest()


def _metadata_folders(entry: str) -> list[str]:
    try:
        listed = os.listdir(entry or ".")
    except OSError:
        return []
    return sorted(n for n in listed if n.endswith((".dist-info", ".egg-info")))


def _folders_hold(folders: list) -> bool:
    """Whether each `sys.path` entry holds the metadata folders it held at the scan."""
    if len(folders) != len(sys.path):
        return False
    for entry, (stamp, names) in zip(sys.path, folders, strict=True):
        if _stamp(entry) != stamp and _metadata_folders(entry) != names:
            return False
    return True


def _stamp(path: str) -> str:
    try:
        info = os.stat(path or ".")
    except OSError:
        return "-"
    return f"{info.st_size}:{info.st_mtime_ns}"


def _valid(text: str) -> list[IndexedEntryPoint] | None:
    try:
        record = json.loads(text)
        if record["format"] != FORMAT or not _folders_hold(record["folders"]):
            return None
        if any(_stamp(path) != stamp for path, stamp in record["stamps"].items()):
            return None
        return [IndexedEntryPoint(*item) for item in record["entry_points"]]
    except (ValueError, KeyError, TypeError, AttributeError):
        return None


def _scan(group: str) -> tuple[list[IndexedEntryPoint], dict[str, str] | None]:
    """The entry points, and the `entry_points.txt` files that declared them with their stamps
    (None where a distribution has no such file to check: that scan is not remembered)."""
    import importlib.metadata  # deferred: only a scan (index missing or stale) reads it

    found, stamps, cacheable = [], {}, True
    for entry_point in importlib.metadata.entry_points(group=group):
        dist = getattr(entry_point, "dist", None)
        name = version = None
        if dist is not None:
            name, version = dist.name, dist.version
            where = getattr(dist, "_path", None)  # a PathDistribution's folder
            if where is None:
                cacheable = False  # a finder's own distribution: nothing here to check it by
            else:
                path = os.path.join(str(where), "entry_points.txt")
                stamps[path] = _stamp(path)
        found.append(IndexedEntryPoint(entry_point.name, entry_point.value, name, version))
    return found, (stamps if cacheable else None)
