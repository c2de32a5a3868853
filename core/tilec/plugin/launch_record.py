"""What a launch from the disk cache needs of the plugins, remembered between processes.

A launch needs, of the plugins, the backend it launches on and the plugins' fingerprint (part of
the compile-cache key: `tilec.plugin.manager.fingerprint`); the automatic choice needs every
backend's name and priority. Loading every plugin through pluggy for that was about half of a
first launch from the cache (pluggy, importing the other backends' plugins, registering them).
So each full load (`manager.load_backends`) writes this record, and a process that has not
loaded the plugin manager reads it instead: the fingerprint is computed from the recorded
plugins' labels and module files exactly as the manager computes it, the automatic order from
the recorded priorities, and only the backends tried are imported, by calling their plugin's
`tilec_backends` function directly (no pluggy). A compile, a miss, `set_backend`, the CLI and
everything else still load every plugin.

The record (in `$TILEC_CACHE_DIR/plugins/`, authenticated like the entry-point index, one per
`sys.path` and interpreter) is used only while all of this still holds, else the manager loads
(and reports a failing plugin as always):
- the full load it was written after had no plugin failure and no `register_plugin`;
- the `tilec` entry points are those loaded: the `entry_points.txt` files that declared them are
  unchanged and each `sys.path` entry holds the distributions it held (installing, upgrading or
  removing any distribution, such as a plugin's dependency, makes the next launch load every
  plugin), as the entry-point index (`entry_point_index`) is checked; where the index is not
  remembered (a finder's own distributions), the entry points are scanned again;
- tilec's own code is unchanged (`code_fingerprint("tilec")`, given by the caller);
- every `.py` file of each plugin's top-level package (path, size, modification time), and each
  other module file that loading the plugins imported or that defines a backend's class, is
  unchanged: an edited plugin (its hooks, its backends' priority) is loaded again.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import sys
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from tilec import cache_files, remote_cache, settings
from tilec.backend import Backend
from tilec.plugin import installed

FORMAT = 2
GROUP = "tilec"


def fingerprint_of(plugins: Iterable[tuple[str, str, str | None]]) -> str:
    """The plugins' fingerprint from (registered name, label, module file) triples: the manager's
    `fingerprint()` is this of the registered plugins."""
    digest = hashlib.sha256()
    for _, label, path in sorted(plugins, key=lambda item: item[0]):
        digest.update(f"{label}\n".encode())
        with contextlib.suppress(OSError, TypeError):  # by contents with a remote tier
            where = "" if remote_cache.enabled() else path
            digest.update(f"{where}:{remote_cache.stamp(Path(path))}\n".encode())  # type: ignore[arg-type]
    return digest.hexdigest()


def _name() -> str:
    finders = [f"{type(f).__module__}.{type(f).__qualname__}" for f in sys.meta_path]
    parts = ["launch record", str(FORMAT), sys.version, *sys.path, "", *finders]
    return hashlib.sha256("\x00".join(parts).encode()).hexdigest()


def _package_stamp(folder: str) -> str:
    """A digest of the `.py` files below `folder` by path, size and modification time (for a
    top-level module, its file's stamp)."""
    if not os.path.isdir(folder):
        return installed.stamp(folder)
    digest = hashlib.sha256()
    stack = [folder]
    while stack:
        current = stack.pop()
        with contextlib.suppress(OSError), os.scandir(current) as entries:
            for entry in sorted(entries, key=lambda e: e.name):
                if entry.name.endswith(".py"):
                    with contextlib.suppress(OSError):
                        info = entry.stat()
                        digest.update(f"{entry.path}:{info.st_size}:{info.st_mtime_ns}\n".encode())
                elif entry.name != "__pycache__" and entry.is_dir(follow_symlinks=False):
                    stack.append(entry.path)
    return digest.hexdigest()


# Writing (after a full load) -------------------------------------------------------------------


def write(
    plugins: list[dict[str, Any]], backends: list[tuple[str, int, str]], files: Iterable[str]
) -> None:
    """Record a full load: `plugins` as dicts (name, label, path, value: the entry point's value
    or the built-in module's name, hook: the attribute of its `tilec_backends` or None),
    `backends` as (name, priority, plugin name), `files` the module files its loading imported
    or that define the backends' classes. Called by the manager; never raises."""
    with contextlib.suppress(Exception):
        _write(plugins, backends, files)


def _write(plugins, backends, files) -> None:
    compiler = sys.modules.get("tilec.runtime.compiler")  # not imported: no launch reads it
    if compiler is None:
        return
    # deferred: the index and its scan load with the plugin manager, which writes the record;
    # a launch reading the record imports neither
    from tilec.plugin import entry_point_index

    entry_points, entry_point_files = entry_point_index.checked_entry_points(GROUP)
    tilec_folder = os.path.dirname(sys.modules["tilec"].__file__ or "")
    packages = sorted({_top_folder(p["path"]) for p in plugins if p["path"]} - {tilec_folder})
    inside = [*packages, tilec_folder]
    others = sorted({f for f in files if f and not any(_below(f, p) for p in inside)})
    record = {
        "format": FORMAT,
        "tilec": compiler.code_fingerprint("tilec"),
        "entry_points": [list(e) for e in entry_points],
        "entry_point_files": entry_point_files,
        "folders": installed.folders(),
        "plugins": plugins,
        "backends": [list(b) for b in backends],
        "packages": {folder: _package_stamp(folder) for folder in packages},
        "files": {path: installed.stamp(path) for path in others},
    }
    body = json.dumps(record, sort_keys=True)
    folder = installed.index_dir()
    if cache_files.read_entry(settings.cache_dir(), folder, _name(), ".json") == body:
        return  # the record holds already: a compile process writes nothing
    cache_files.write_entry(settings.cache_dir(), folder, _name(), ".json", body)


def _top_folder(path: str) -> str:
    """The folder of the top-level package holding module file `path` (its own folder for a
    top-level module)."""
    folder = os.path.dirname(path)
    while os.path.exists(os.path.join(os.path.dirname(folder), "__init__.py")):
        folder = os.path.dirname(folder)
    if not os.path.exists(os.path.join(folder, "__init__.py")):
        return path  # a top-level module: the file alone
    return folder


def _below(path: str, folder: str) -> bool:
    return path == folder or path.startswith(folder + os.sep)


# Reading (a launch in a process without the manager) --------------------------------------------


class Record:
    """A valid record: the fingerprint, the automatic order, and backends made on demand."""

    def __init__(self, data: dict[str, Any]) -> None:
        self.plugins = {p["name"]: p for p in data["plugins"]}
        self.fingerprint = fingerprint_of(
            (p["name"], p["label"], p["path"]) for p in data["plugins"]
        )
        self.priorities = {name: (priority, plugin) for name, priority, plugin in data["backends"]}
        self._made: dict[str, Any] = {}

    def order(self) -> list[str]:
        """The backend names in the automatic choice's order (priority, then name)."""
        return sorted(self.priorities, key=lambda name: (-self.priorities[name][0], name))

    def backend(self, name: str) -> Backend | None:
        """Backend `name`, from its plugin's `tilec_backends` alone; None where that does not
        give what the record says (the caller loads every plugin instead)."""
        if name in self._made:
            return self._made[name]
        made = None
        with contextlib.suppress(Exception, SystemExit):  # the manager loads it and reports
            made = self._make(name)
        self._made[name] = made
        return made

    def _make(self, name: str) -> Backend | None:
        if name not in self.priorities:
            return None
        priority, plugin_name = self.priorities[name]
        plugin = self.plugins[plugin_name]
        if plugin["hook"] is None:
            return None
        backends = getattr(installed.load_value(plugin["value"]), plugin["hook"])()
        for backend in backends:
            if isinstance(backend, Backend) and backend.name == name:
                return backend if backend.priority == priority else None
        return None


_cached: dict[str, Record | None] = {}


def current(tilec_code: str) -> Record | None:
    """The record, where it still holds (see the module's text), else None; read once a
    process."""
    if tilec_code not in _cached:
        record = None
        with contextlib.suppress(Exception):
            record = _read(tilec_code)
        _cached[tilec_code] = record
    return _cached[tilec_code]


def _read(tilec_code: str) -> Record | None:
    if settings.DISABLE_PLUGIN_AUTOLOAD.enabled():
        return None
    folder = installed.index_dir()
    text = cache_files.read_entry(settings.cache_dir(), folder, _name(), ".json")
    if text is None:
        return None
    data = json.loads(text)
    if data["format"] != FORMAT or data["tilec"] != tilec_code:
        return None
    if not installed.folders_hold(data["folders"]) or not _entry_points_hold(data):
        return None
    if any(_package_stamp(folder) != stamp for folder, stamp in data["packages"].items()):
        return None
    if not installed.files_hold(data["files"]):
        return None
    return Record(data)


def _entry_points_hold(data: dict[str, Any]) -> bool:
    """Whether the `tilec` entry points are those of the record: its `entry_points.txt` files
    unchanged (with the `sys.path` folders, checked by the caller), or, where the entry-point
    index could not remember them, scanned again."""
    files = data["entry_point_files"]
    if files is not None:
        return installed.files_hold(files)
    # deferred: a scan, only where distributions come from elsewhere than metadata folders
    from tilec.plugin import entry_point_index

    return [list(e) for e in entry_point_index.entry_points(GROUP)] == data["entry_points"]
