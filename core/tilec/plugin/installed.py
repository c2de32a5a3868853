"""The installed distributions as a remembered scan of them is checked: a file's size and
modification time, the distributions' metadata folders in each `sys.path` entry; and the loading of
an entry point's value.

The entry-point index (`entry_point_index`) and the plugins' launch record (`launch_record`) are
both checked by these, and kept in `index_dir()`. A launch from the disk cache reads the launch
record alone: this module is what it imports of them (the index, with its scan, loads with the
plugin manager).
"""

from __future__ import annotations

import importlib
import os
import sys
from pathlib import Path

from tilec import settings


def index_dir() -> Path:
    """The folder of the entry-point index and the launch record, in the cache folder."""
    return settings.cache_dir() / "plugins"


def stamp(path: str) -> str:
    """`size:modification time` of `path` (`-` where it cannot be read)."""
    try:
        info = os.stat(path or ".")
    except OSError:
        return "-"
    return f"{info.st_size}:{info.st_mtime_ns}"


def metadata_folders(entry: str) -> list[str]:
    """The distributions' metadata folders (`*.dist-info`, `*.egg-info`) in `sys.path` entry
    `entry`, sorted."""
    try:
        listed = os.listdir(entry or ".")
    except OSError:
        return []
    return sorted(n for n in listed if n.lower().endswith((".dist-info", ".egg-info")))


def folders() -> list[list]:
    """Each `sys.path` entry's stamp and metadata folders, as `folders_hold` checks them."""
    return [[stamp(entry), metadata_folders(entry)] for entry in sys.path]


def folders_hold(recorded: list) -> bool:
    """Whether each `sys.path` entry holds the metadata folders it held when `recorded` (a
    `folders()` answer) was taken: where an entry's modification time is unchanged, nothing was
    added to or removed from it and it is not listed again."""
    if len(recorded) != len(sys.path):
        return False
    for entry, (was, names) in zip(sys.path, recorded, strict=True):
        if stamp(entry) != was and metadata_folders(entry) != names:
            return False
    return True


def files_hold(stamps: dict[str, str]) -> bool:
    """Whether every file of `stamps` (path: `stamp`) still has its recorded stamp."""
    return all(stamp(path) == recorded for path, recorded in stamps.items())


def load_value(value: str) -> object:
    """What an entry point's value (`module` or `module:attribute`, as in `entry_points.txt`)
    names, as `importlib.metadata.EntryPoint.load` gives it."""
    module_name, _, attribute = value.partition(":")
    loaded: object = importlib.import_module(module_name.strip())
    for part in filter(None, attribute.strip().split(".")):
        loaded = getattr(loaded, part)
    return loaded
