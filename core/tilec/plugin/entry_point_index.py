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

The scan itself reads the metadata folders of `sys.path` directly (`entry_points.txt`, and the
`Name` and `Version` headers of those that declare the group), as `importlib.metadata` reads
them, without importing it: its import (and the `email` package's, for the headers) is 15-20 ms
of CPU, most of a first compile's plugin loading with a fresh cache folder. Where a finder other
than the standard path finder provides distributions, or a `sys.path` entry is a zip file or an
egg, or an `entry_points.txt` line is one the direct reading does not take, the scan is
`importlib.metadata`'s.
"""

from __future__ import annotations

import hashlib
import importlib.machinery
import json
import os
import re
import sys
from typing import NamedTuple

from tilec import cache_files, settings
from tilec.plugin.installed import (
    files_hold,
    folders,
    folders_hold,
    index_dir,
    load_value,
    metadata_folders,
    stamp,
)

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
        return load_value(self.value)


def entry_points(group: str) -> list[IndexedEntryPoint]:
    """The entry points of `group`, from the index where it still holds, else scanned."""
    return checked_entry_points(group)[0]


def checked_entry_points(group: str) -> Scan:
    """`entry_points(group)`, and the `entry_points.txt` files that declared them with their
    stamps: with the `sys.path` entries' metadata folders, what the answer holds by (None where
    a distribution has no such file to check: every process scans then)."""
    name = _name(group)
    text = cache_files.read_entry(settings.cache_dir(), index_dir(), name, ".json")
    if text is not None:
        found = _valid(text)
        if found is not None:
            return found
    held = folders()
    found, stamps = _scan(group)
    if stamps is None:
        return found, None
    record = {"format": FORMAT, "entry_points": found, "folders": held, "stamps": stamps}
    body = json.dumps(record, sort_keys=True)
    cache_files.write_entry(settings.cache_dir(), index_dir(), name, ".json", body)
    return found, stamps


def _name(group: str) -> str:
    """The index file's name: a digest of the group, the interpreter, `sys.path` and the
    finders."""
    finders = [f"{type(f).__module__}.{type(f).__qualname__}" for f in sys.meta_path]
    parts = ["entry points", str(FORMAT), group, sys.version, *sys.path, "", *finders]
    return hashlib.sha256("\x00".join(parts).encode()).hexdigest()


def _valid(text: str) -> Scan | None:
    try:
        record = json.loads(text)
        if record["format"] != FORMAT or not folders_hold(record["folders"]):
            return None
        if not files_hold(record["stamps"]):
            return None
        return [IndexedEntryPoint(*item) for item in record["entry_points"]], record["stamps"]
    except (ValueError, KeyError, TypeError, AttributeError):
        return None


Scan = tuple[list[IndexedEntryPoint], dict[str, str] | None]


def _scan(group: str) -> Scan:
    """The entry points, and the `entry_points.txt` files that declared them with their stamps
    (None where a distribution has no such file to check: that scan is not remembered)."""
    if not _only_folders():
        return _scan_metadata(group)
    found: list[IndexedEntryPoint] = []
    stamps: dict[str, str] = {}
    seen: set[str] = set()
    for entry in sys.path:
        for folder in metadata_folders(entry):
            name = folder.lower().rpartition(".")[0].partition("-")[0]
            key = re.sub(r"[-_.]+", "_", name)  # importlib.metadata's: the first on the path wins
            if key in seen:
                continue
            seen.add(key)
            where = os.path.join(entry or ".", folder)
            path = os.path.join(where, "entry_points.txt")
            try:
                with open(path, encoding="utf-8") as file:
                    text = file.read()
            except OSError:  # no entry points (or a `.egg-info` file, not a folder)
                continue
            pairs = _group_pairs(text, group)
            if pairs is None:
                return _scan_metadata(group)
            if pairs:
                stamps[path] = stamp(path)
                dist, version = _name_and_version(where)
                found += [IndexedEntryPoint(n, v, dist, version) for n, v in pairs]
    return found, stamps


def _only_folders() -> bool:
    """Whether every distribution comes from a metadata folder in a `sys.path` folder: only the
    standard path finder provides distributions, and no `sys.path` entry is a zip file or an
    egg (whose metadata `importlib.metadata` reads in other ways)."""
    providers = [f for f in sys.meta_path if hasattr(f, "find_distributions")]
    if providers != [importlib.machinery.PathFinder]:
        return False
    return not any(e.lower().endswith(".egg") or os.path.isfile(e or ".") for e in sys.path)


def _group_pairs(text: str, group: str) -> list[tuple[str, str]] | None:
    """The (name, value) pairs of `[group]` in an `entry_points.txt`, read as
    `importlib.metadata` reads it (lines stripped, `#` comments and blank lines skipped); None
    for a line of the group without `=`, which the direct reading leaves to it."""
    pairs, section = [], None
    for line in map(str.strip, text.splitlines()):
        if not line or line.startswith("#"):
            continue
        if line.startswith("[") and line.endswith("]"):
            section = line.strip("[]")
            continue
        if section != group:
            continue
        name, sep, value = line.partition("=")
        if not sep:
            return None
        pairs.append((name.strip(), value.strip()))
    return pairs


def _name_and_version(folder: str) -> tuple[str | None, str | None]:
    """The `Name` and `Version` headers of a metadata folder's `METADATA` (`PKG-INFO` for an
    egg-info folder), the first of each, as `importlib.metadata` reads them."""
    for file_name in ("METADATA", "PKG-INFO"):
        try:
            with open(os.path.join(folder, file_name), encoding="utf-8") as file:
                text = file.read()
        except OSError:
            continue
        headers: dict[str, str] = {}
        for line in text.splitlines():
            if not line.strip():
                break  # the headers end at the first blank line
            key, sep, value = line.partition(":")
            if sep and key in ("Name", "Version"):
                headers.setdefault(key, value.strip())
        return headers.get("Name"), headers.get("Version")
    return None, None


def _scan_metadata(group: str) -> Scan:
    """`_scan` through `importlib.metadata`, for the distributions it alone finds."""
    import importlib.metadata  # deferred: only a scan it alone can make (index missing or stale)

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
                stamps[path] = stamp(path)
        found.append(IndexedEntryPoint(entry_point.name, entry_point.value, name, version))
    return found, (stamps if cacheable else None)
