"""`triton.runtime.cache` under the alias: Triton's file cache for programs that keep their own
files (`get_cache_manager(key).put(data, name)`), in a folder per key under
`triton.knobs.cache.dir` (tilec's cache folder, `TILEC_CACHE_DIR`, unless the program sets it).
tilec's own compiled kernels are not stored here (see `tilec.runtime.cache`)."""

from __future__ import annotations

import base64
import json
import os
import uuid
from pathlib import Path
from typing import Any

from tilec.as_triton import knobs


def _base32(key: str) -> str:
    """A hex key in base 32 (shorter folder names), as Triton writes it."""
    return base64.b32encode(bytes.fromhex(key)).decode("utf-8").rstrip("=")


def _base64(key: str) -> str:
    return base64.urlsafe_b64encode(bytes.fromhex(key)).decode("utf-8").rstrip("=")


class CacheManager:
    """The interface of a cache manager (`knobs.cache.manager_class` may name a subclass)."""

    def __init__(self, key: str, override: bool = False, dump: bool = False):
        raise NotImplementedError("a CacheManager subclass defines __init__")

    def get_file(self, filename: str) -> str | None:
        raise NotImplementedError

    def put(self, data: Any, filename: str, binary: bool = True) -> str:
        raise NotImplementedError

    def get_group(self, filename: str) -> dict[str, str] | None:
        raise NotImplementedError

    def put_group(self, filename: str, group: dict[str, str]) -> str:
        raise NotImplementedError


class FileCacheManager(CacheManager):
    """Files under `<folder>/<key>/`: `knobs.cache.dir`, or `dump_dir`/`override_dir` when
    asked (an error while that knob is unset)."""

    def __init__(self, key: str, override: bool = False, dump: bool = False):
        self.key = key
        knob = "dump_dir" if dump else "override_dir" if override else "dir"
        folder = getattr(knobs.cache, knob)
        if not folder:
            raise RuntimeError(
                f"triton.runtime.cache: triton.knobs.cache.{knob} is not set; set it to a folder"
            )
        self.cache_dir = os.path.join(folder, key)
        self.lock_path = os.path.join(self.cache_dir, "lock")
        if not override:
            os.makedirs(self.cache_dir, mode=0o700, exist_ok=True)

    def _make_path(self, filename: str) -> str:
        return os.path.join(self.cache_dir, filename)

    def has_file(self, filename: str) -> bool:
        return os.path.exists(self._make_path(filename))

    def get_file(self, filename: str) -> str | None:
        return self._make_path(filename) if self.has_file(filename) else None

    def get_group(self, filename: str) -> dict[str, str] | None:
        path = self.get_file(f"__grp__{filename}")
        if path is None:
            return None
        children = json.loads(Path(path).read_text()).get("child_paths")
        if children is None:
            return None
        return {name: p for name, p in children.items() if os.path.exists(p)}

    def put_group(self, filename: str, group: dict[str, str]) -> str:
        return self.put(json.dumps({"child_paths": group}), f"__grp__{filename}", binary=False)

    def put(self, data: Any, filename: str, binary: bool = True) -> str:
        """Write atomically (a temporary file renamed into place); returns the file's path."""
        binary = isinstance(data, bytes)
        path = self._make_path(filename)
        temporary = self._make_path(f"tmp.pid_{os.getpid()}_{uuid.uuid4()}")
        with open(temporary, "wb" if binary else "w") as f:
            f.write(data if binary else str(data))
        os.replace(temporary, path)
        return path


def _manager(key: str, **kind: bool) -> CacheManager:
    manager_class = knobs.cache.manager_class or FileCacheManager
    return manager_class(_base32(key), **kind)


def get_cache_manager(key: str) -> CacheManager:
    return _manager(key)


def get_override_manager(key: str) -> CacheManager:
    return _manager(key, override=True)


def get_dump_manager(key: str) -> CacheManager:
    return _manager(key, dump=True)


def default_cache_dir() -> str:
    return knobs.cache.dir


__all__ = [
    "CacheManager",
    "FileCacheManager",
    "default_cache_dir",
    "get_cache_manager",
    "get_dump_manager",
    "get_override_manager",
    "knobs",
]
