"""Files of the on-disk caches (compiled kernels, resolved pass orders), kept so that no one else
can make tilec run their code.

- The cache folder is created 0700; a folder (or entry) that is not the user's, or that group or
  others may write, is refused with one `CacheWarning` naming it, and the cache is bypassed
  (compiles still work, nothing is read from or written there).
- Every entry is authenticated: its first line is `// tilec-cache v3 hmac-sha256=<hex>`, an HMAC of
  the entry's name and body under a per-user key (`tilec.settings.cache_key_file()`, 32 random
  bytes created 0600 outside the cache folder). An entry that fails is a miss: recompiled and
  rewritten.
- Only regular files are opened, never through a symbolic link (`O_NOFOLLOW`), without blocking on
  a FIFO (`O_NONBLOCK`), and at most `MAX_ENTRY_BYTES` are read.
Writes are atomic (a 0600 temporary file in the same folder, then `os.replace`).

Imports nothing of tilec but `settings`, so the runtime's cache and `passes/` may both use it.
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import hmac
import os
import secrets
import stat
import tempfile
import warnings
from pathlib import Path

from tilec import settings

HEADER = "// tilec-cache v3 hmac-sha256="
MAX_ENTRY_BYTES = 256 * 1024 * 1024
"""The largest entry read (a bigger file is a miss, never loaded into memory)."""
KEY_BYTES = 32

_OPEN_FLAGS = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0)
_keys: dict[Path, bytes] = {}
_warned: set[str] = set()


class CacheWarning(UserWarning):
    """The disk cache (or one entry of it) is refused; tilec compiles without it."""


def warn_once(path: Path, reason: str) -> None:
    text = f"tilec cache: {reason}: {path}; the disk cache is bypassed for it"
    if text in _warned:
        return
    _warned.add(text)
    warnings.warn(text, CacheWarning, stacklevel=3)


def _user() -> int | None:
    getuid = getattr(os, "getuid", None)
    return getuid() if getuid is not None else None


def unsafe_reason(info: os.stat_result, private: bool = False) -> str | None:
    """Why a file or folder with this `stat` may not be trusted (None: it may). `private`: also
    refuse read access for group and others (the key file)."""
    user = _user()
    if user is not None and info.st_uid != user:
        return f"owned by uid {info.st_uid}, not by this user ({user})"
    forbidden = 0o077 if private else 0o022
    if user is not None and info.st_mode & forbidden:
        who = "readable or writable" if private else "writable"
        return f"{who} by group or others (mode {stat.S_IMODE(info.st_mode):o})"
    return None


def usable_folder(folder: Path, root: Path, create: bool) -> bool:
    """Whether `folder` (the cache `root` or a folder inside it) may be used; with `create`, it is
    created 0700 first. A refused folder warns once."""
    if create:
        try:
            root.mkdir(mode=0o700, parents=True, exist_ok=True)
            folder.mkdir(mode=0o700, exist_ok=True)
        except OSError:
            return False
    for path in dict.fromkeys((root, folder)):
        try:
            info = os.stat(path) if path == root else os.lstat(path)
        except OSError:
            return False
        reason = "not a folder" if not stat.S_ISDIR(info.st_mode) else unsafe_reason(info)
        if reason is not None:
            warn_once(path, f"the cache folder is {reason}")
            return False
    return True


def user_key() -> bytes | None:
    """The per-user key entries are authenticated with (created on first use); None, with a
    warning, when the key file cannot be made or is not private to this user."""
    path = settings.cache_key_file()
    key = _keys.get(path)
    if key is not None:
        return key
    key = _read_key(path)
    if key is None and not path.exists() and not path.is_symlink():
        key = _create_key(path)
    if key is not None:
        _keys[path] = key
    return key


def _read_key(path: Path) -> bytes | None:
    try:
        fd = os.open(path, _OPEN_FLAGS)
    except FileNotFoundError:
        return None
    except OSError as error:
        warn_once(path, f"the cache key cannot be read ({error.strerror})")
        return None
    with os.fdopen(fd, "rb") as file:
        info = os.fstat(fd)
        reason = "not a regular file" if not stat.S_ISREG(info.st_mode) else None
        reason = reason or unsafe_reason(info, private=True)
        if reason is None and info.st_size != KEY_BYTES:
            reason = f"{info.st_size} bytes long, not {KEY_BYTES}"
        if reason is not None:
            warn_once(path, f"the cache key is {reason}")
            return None
        return file.read(KEY_BYTES)


def _create_key(path: Path) -> bytes | None:
    """A new random key, written 0600 to a temporary file and linked into place, so that a
    concurrent process never reads a half-written key: the first link wins, the others read it."""
    key = secrets.token_bytes(KEY_BYTES)
    try:
        path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".cache-key.", suffix=".tmp")
    except OSError as error:
        warn_once(path, f"the cache key cannot be created ({error.strerror})")
        return None
    try:
        with os.fdopen(fd, "wb") as file:
            file.write(key)
        os.link(tmp, path)
    except FileExistsError:
        return _read_key(path)  # another process made it first
    except OSError as error:
        warn_once(path, f"the cache key cannot be created ({error.strerror})")
        return None
    finally:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
    return key


def _mac(key: bytes, name: str, body: str) -> str:
    return hmac.new(key, f"{name}\x00{body}".encode(), hashlib.sha256).hexdigest()


def read_entry(root: Path, folder: Path, name: str, suffix: str) -> str | None:
    """The authenticated body of entry `name` in `folder` (inside the cache `root`), or None:
    absent, refused, too big, not a regular file, corrupt or not made with this user's key."""
    if not folder.is_dir() or not usable_folder(folder, root, create=False):
        return None
    key = user_key()
    if key is None:
        return None
    path = folder / f"{name}{suffix}"
    data = _read_regular(path)
    if data is None:
        return None
    try:
        text = data.decode()
    except UnicodeDecodeError:
        return None
    header, _, body = text.partition("\n")
    if not header.startswith(HEADER):
        return None
    if not hmac.compare_digest(header[len(HEADER) :], _mac(key, name, body)):
        return None
    return body


def _read_regular(path: Path) -> bytes | None:
    try:
        fd = os.open(path, _OPEN_FLAGS)
    except OSError as error:
        if error.errno == errno.ELOOP:
            warn_once(path, "the cache entry is a symbolic link")
        return None
    with os.fdopen(fd, "rb") as file:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            warn_once(path, "the cache entry is not a regular file")
            return None
        reason = unsafe_reason(info)
        if reason is not None:
            warn_once(path, f"the cache entry is {reason}")
            return None
        if info.st_size > MAX_ENTRY_BYTES:
            return None
        data = file.read(MAX_ENTRY_BYTES + 1)
    return data if len(data) <= MAX_ENTRY_BYTES else None


def write_entry(root: Path, folder: Path, name: str, suffix: str, body: str) -> bool:
    """Store `body` as entry `name`, authenticated and atomically; whether it was stored (a cache
    that cannot be used, being refused, unwritable or without a key, is skipped)."""
    if not usable_folder(folder, root, create=True):
        return False
    key = user_key()
    if key is None:
        return False
    try:
        fd, tmp = tempfile.mkstemp(dir=folder, prefix=f".{name}.", suffix=".tmp")
    except OSError:
        return False
    try:
        with os.fdopen(fd, "w") as file:
            file.write(f"{HEADER}{_mac(key, name, body)}\n{body}")
        os.replace(tmp, folder / f"{name}{suffix}")
    except OSError:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        return False
    return True
