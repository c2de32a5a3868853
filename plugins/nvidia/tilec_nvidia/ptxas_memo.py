"""The ptxas `codegen.find_ptxas` found, remembered between processes (issue 24).

The search costs about 110 ms of CPU a process (the import of cuda.pathfinder and its CUDA-runtime
canary, a Python subprocess). Its answer is kept in `$TILEC_CACHE_DIR/tools/` (authenticated and
written atomically like a compiled kernel: `tilec.cache_files`), in a file named by a digest of what
the search reads:

- the environment variables it reads: `TILEC_PTXAS`, `PATH`, `CUDA_PATH`, `CUDA_HOME`,
  `CONDA_PREFIX`, `LD_LIBRARY_PATH` (the canary loads the CUDA runtime through the dynamic
  loader);
- the interpreter (`sys.prefix`, `sys.base_prefix`) and cuda.pathfinder's version (its
  `_version.py`, read without importing it);
- the size and modification time of each folder whose listing the search depends on: every
  site-packages folder (installing or removing a distribution, such as the nvidia-cuda-nvcc
  wheel, changes it), `/usr/local` (a toolkit installed there) and the loader's cache
  (`/etc/ld.so.cache`).

The remembered path is used only while that file still is what was found: a regular file of the
same size and modification time, executable; else the search runs again and its answer replaces
the entry. Only a found ptxas is remembered (where there is none, every process searches).
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import os
import site
import sys
from pathlib import Path

from tilec import cache_files, settings

FORMAT = 1
"""The entry's layout; a change makes older entries miss."""
VARIABLES = ("TILEC_PTXAS", "PATH", "CUDA_PATH", "CUDA_HOME", "CONDA_PREFIX", "LD_LIBRARY_PATH")
"""The environment variables the search reads."""
FOLDERS = ("/usr/local", "/etc/ld.so.cache")
"""Outside the interpreter's folders, what the search lists or the loader reads."""


def memo_dir() -> Path:
    return settings.cache_dir() / "tools"


def remembered() -> str | None:
    """The ptxas found by an earlier process under the same conditions, if it is still there."""
    text = cache_files.read_entry(settings.cache_dir(), memo_dir(), entry_name(), ".json")
    if text is None:
        return None
    try:
        record = json.loads(text)
        if record["format"] != FORMAT:
            return None
        path, size, mtime = record["path"], record["size"], record["mtime_ns"]
    except (ValueError, KeyError, TypeError):
        return None
    return path if isinstance(path, str) and _stamp(path) == (size, mtime) else None


def remember(path: str) -> None:
    """Keep `path`, the ptxas the search found, for the next processes."""
    stamp = _stamp(path)
    if stamp is None:
        return
    record = {"format": FORMAT, "path": path, "size": stamp[0], "mtime_ns": stamp[1]}
    body = json.dumps(record, sort_keys=True)
    cache_files.write_entry(settings.cache_dir(), memo_dir(), entry_name(), ".json", body)


def _stamp(path: str) -> tuple[int, int] | None:
    """(size, modification time) of `path` where it is an executable regular file, else None."""
    try:
        info = os.stat(path)
    except (OSError, ValueError):
        return None
    if not os.path.isfile(path) or not os.access(path, os.X_OK):
        return None
    return info.st_size, info.st_mtime_ns


def entry_name() -> str:
    """A digest of everything the search depends on (module doc)."""
    parts = ["ptxas", str(FORMAT), sys.prefix, sys.base_prefix, _pathfinder_version()]
    parts += [f"{name}={os.environ.get(name, '')}" for name in VARIABLES]
    for folder in [*_site_folders(), *FOLDERS]:
        parts.append(f"{folder}:{_folder_stamp(folder)}")
    return hashlib.sha256("\x00".join(parts).encode()).hexdigest()


def _site_folders() -> list[str]:
    folders = list(site.getsitepackages())
    if site.ENABLE_USER_SITE:
        folders.append(site.getusersitepackages())
    return folders


def _folder_stamp(path: str) -> str:
    try:
        info = os.stat(path)
    except OSError:
        return "-"
    return f"{info.st_size}:{info.st_mtime_ns}"


def _pathfinder_version() -> str:
    """The text of cuda.pathfinder's `_version.py` ("-" without cuda.pathfinder), found without
    importing cuda.pathfinder (its import is most of what is saved)."""
    try:
        spec = importlib.util.find_spec("cuda.pathfinder")
    except (ImportError, ValueError):
        return "-"
    if spec is None or not spec.submodule_search_locations:
        return "-"
    for folder in spec.submodule_search_locations:
        try:
            return (Path(folder) / "_version.py").read_text()
        except OSError:
            continue
    return "?"


__all__ = ["entry_name", "memo_dir", "remember", "remembered"]
