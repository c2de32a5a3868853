"""Files of the on-disk caches (compiled kernels, resolved pass orders), kept so that no one else
can make tilec run their code, and so that tilec touches no file it did not write.

- The cache folder is created 0700. It is refused, with one `CacheWarning` naming it, and the
  cache bypassed (compiles still work, nothing is read, written or created there), when it is not
  the user's or group or others may write it, or when a folder on the way to it (each one, through
  symbolic links as the system resolves them) could be changed by someone else: as ssh's
  StrictModes, every folder above must be owned by the user or root and not writable by group or
  others, unless its sticky bit is set (as `/tmp`'s: no one may rename another's entry there).
- Every entry is authenticated: its first line is `// tilec-cache v3 hmac-sha256=<hex>`, an HMAC of
  the entry's name and body under a per-user key (`tilec.settings.cache_key_file()`, 32 random
  bytes created 0600 outside the cache folder). An entry that fails is a miss: recompiled and
  rewritten.
- Only regular files are opened, never through a symbolic link (`O_NOFOLLOW`), without blocking on
  a FIFO (`O_NONBLOCK`), and at most `MAX_ENTRY_BYTES` are read. A file that cannot be read or
  written (a folder in an entry's place, a name too long, a full disk) is a miss, with a warning.
- `is_own_entry` tells tilec's files from others' (the user's own name, the tilec header), so that
  the eviction removes nothing else from a folder it shares.
Writes are atomic (a 0600 temporary file in the same folder, then `os.replace`, which replaces a
symbolic link in the entry's place, never its target).

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
MAGIC = b"// tilec-cache v"
"""How every file tilec's caches write starts (this format's `HEADER` and the earlier ones')."""
MAX_ENTRY_BYTES = 256 * 1024 * 1024
"""The largest entry read (a bigger file is a miss, never loaded into memory)."""
KEY_BYTES = 32
MAX_LINKS = 40
"""The most symbolic links followed on the way to a cache folder (as Linux bounds a lookup)."""

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


def _above_reason(info: os.stat_result, user: int) -> str | None:
    """Why a folder above the cache folder may not be trusted: someone but the user and root
    could rename or replace what it holds."""
    if not stat.S_ISDIR(info.st_mode):
        return "not a folder"
    if info.st_uid not in (user, 0):
        return f"owned by uid {info.st_uid}, neither this user ({user}) nor root"
    if info.st_mode & 0o022 and not info.st_mode & stat.S_ISVTX:
        mode = stat.S_IMODE(info.st_mode)
        return f"writable by group or others without the sticky bit (mode {mode:o})"
    return None


def unsafe_folder_above(path: Path) -> tuple[Path, str] | None:
    """The first folder on the way to `path` (not `path` itself) that someone else could change,
    and why; None when there is none. The way is walked as the system resolves it: a symbolic
    link is read (its own folder was checked) and its target walked in turn, so that a link to a
    folder under another user's is caught. A part that does not exist ends the walk: tilec makes
    the rest, 0700."""
    user = _user()
    if user is None:
        return None
    parts = list((path if path.is_absolute() else Path(os.getcwd(), path)).parts)
    current = Path(parts.pop(0))
    links = 0
    reason = _above_reason(os.stat(current), user)
    while parts and reason is None:
        part = parts.pop(0)
        if part == "..":  # the parent of the real folder reached so far, as the system takes it
            current = current.parent
            continue
        candidate = current / part
        try:
            info = os.lstat(candidate)
        except FileNotFoundError:
            return None
        if stat.S_ISLNK(info.st_mode):
            links += 1
            if links > MAX_LINKS:
                return candidate, "a loop of symbolic links"
            target = Path(os.readlink(candidate))
            current = Path(target.anchor) if target.is_absolute() else current
            parts[:0] = target.parts[1:] if target.is_absolute() else target.parts
            continue
        current = candidate
        reason = _above_reason(info, user) if parts else None
    return (current, reason) if reason is not None else None


def usable_folder(folder: Path, root: Path, create: bool) -> bool:
    """Whether `folder` (the cache `root` or a folder inside it) may be used. With `create`, what
    is missing of it is made 0700, but only once the folders above are found safe: nothing is
    made in or under a refused folder. A refused folder warns once; a missing one (without
    `create`) is just unusable."""
    try:
        above = unsafe_folder_above(root)
    except OSError as error:
        warn_once(root, f"the cache folder cannot be reached ({error.strerror})")
        return False
    if above is not None:
        warn_once(above[0], f"the cache folder {root} lies under a path that is {above[1]}")
        return False
    for path in dict.fromkeys((root, folder)):
        try:
            if create:
                _make_folders(path)
            info = os.stat(path) if path == root else os.lstat(path)
        except FileNotFoundError:
            return False
        except OSError as error:
            doing = "made" if create else "reached"
            warn_once(path, f"the cache folder cannot be {doing} ({error.strerror})")
            return False
        reason = "not a folder" if not stat.S_ISDIR(info.st_mode) else unsafe_reason(info)
        if reason is not None:
            warn_once(path, f"the cache folder is {reason}")
            return False
    return True


def _make_folders(path: Path) -> None:
    """Make `path` and the folders above it that are missing, each 0700 (mkdir -p would leave
    the ones above to the umask)."""
    missing = []
    while not os.path.lexists(path) and path != path.parent:
        missing.append(path)
        path = path.parent
    for folder in reversed(missing):
        with contextlib.suppress(FileExistsError):
            os.mkdir(folder, 0o700)


def user_key() -> bytes | None:
    """The per-user key entries are authenticated with (created on first use); None, with a
    warning, when the key file cannot be made or is not private to this user."""
    path = settings.cache_key_file()
    key = _keys.get(path)
    if key is not None:
        return key
    key = _read_file(path, "the cache key", KEY_BYTES, private=True)
    if key is not None and len(key) != KEY_BYTES:
        warn_once(path, f"the cache key is {len(key)} bytes long, not {KEY_BYTES}")
        return None
    if key is None and not os.path.lexists(path):
        key = _create_key(path)
    if key is not None:
        _keys[path] = key
    return key


def _read_file(path: Path, what: str, limit: int, private: bool = False) -> bytes | None:
    """At most `limit` + 1 bytes of the regular file `path` (never through a symbolic link, never
    blocking on a FIFO), or None: absent, too big (more than `limit` bytes), or refused or
    unreadable (with a warning naming `what`)."""
    try:
        fd = os.open(path, _OPEN_FLAGS)
    except FileNotFoundError:
        return None
    except OSError as error:
        link = error.errno == errno.ELOOP
        warn_once(
            path, f"{what} is {'a symbolic link' if link else f'unreadable ({error.strerror})'}"
        )
        return None
    try:
        info = os.fstat(fd)
        reason = "not a regular file" if not stat.S_ISREG(info.st_mode) else None
        reason = reason or unsafe_reason(info, private=private)
        if reason is not None:
            warn_once(path, f"{what} is {reason}")
            return None
        if info.st_size > limit:
            return None
        with open(fd, "rb", closefd=False) as file:
            data = file.read(limit + 1)
    except OSError as error:
        warn_once(path, f"{what} is unreadable ({error.strerror})")
        return None
    finally:
        os.close(fd)
    return data if len(data) <= limit else None


def _create_key(path: Path) -> bytes | None:
    """A new random key, written 0600 to a temporary file and linked into place, so that a
    concurrent process never reads a half-written key: the first link wins, the others read it."""
    key = secrets.token_bytes(KEY_BYTES)
    try:
        _make_folders(path.parent)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".cache-key.", suffix=".tmp")
    except OSError as error:
        warn_once(path, f"the cache key cannot be created ({error.strerror})")
        return None
    try:
        with os.fdopen(fd, "wb") as file:
            file.write(key)
        os.link(tmp, path)
    except FileExistsError:  # another process made it first
        return _read_file(path, "the cache key", KEY_BYTES, private=True)
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
    absent, refused, too big, not a regular file, unreadable, corrupt or not made with this
    user's key."""
    if not usable_folder(folder, root, create=False) or user_key() is None:
        return None
    data = _read_file(folder / f"{name}{suffix}", "the cache entry", MAX_ENTRY_BYTES)
    return None if data is None else verified(name, data)


def verified(name: str, data: bytes) -> str | None:
    """The body of `data`, an entry named `name` (a file's, or the remote tier's value), or None:
    not text, without tilec's header, or not authenticated with this key for this name (forged,
    moved to another name, truncated, or made with another key)."""
    key = user_key()
    if key is None:
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


def write_entry(root: Path, folder: Path, name: str, suffix: str, body: str) -> bool:
    """Store `body` as entry `name`, authenticated and atomically; whether it was stored (a cache
    that cannot be used, being refused, unwritable or without a key, is skipped)."""
    if not usable_folder(folder, root, create=True):
        return False
    data = signed(name, body)
    return data is not None and replace_file(folder, f"{name}{suffix}", data, "the cache entry")


def signed(name: str, body: str) -> bytes | None:
    """Entry `name` with `body` as stored: tilec's header with the HMAC of name and body under
    the user's key, then the body (None where there is no key)."""
    key = user_key()
    if key is None:
        return None
    return f"{HEADER}{_mac(key, name, body)}\n{body}".encode()


def replace_file(folder: Path, name: str, data: bytes, what: str) -> bool:
    """Write `data` as the file `name` of `folder` atomically: a 0600 temporary file, then
    `os.replace`, which replaces a symbolic link in its place, never writing to its target.
    Whether it was written; a failure (a folder in its place, a full disk) warns once."""
    path = folder / name
    try:
        fd, tmp = tempfile.mkstemp(dir=folder, prefix=f".{name}.", suffix=".tmp")
    except OSError as error:
        warn_once(path, f"{what} cannot be written ({error.strerror})")
        return False
    try:
        with os.fdopen(fd, "wb") as file:
            file.write(data)
        os.replace(tmp, path)
    except OSError as error:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        warn_once(path, f"{what} cannot be written ({error.strerror})")
        return False
    return True


def is_own_entry(name: str, dir_fd: int) -> bool:
    """Whether the file `name` of the open folder `dir_fd` is one that tilec wrote: a regular
    file (never followed through a symbolic link) of this user that starts with tilec's header.
    What else a shared folder holds is never taken for an entry (the caller checks the name)."""
    try:
        fd = os.open(name, _OPEN_FLAGS, dir_fd=dir_fd)
    except OSError:
        return False
    try:
        info = os.fstat(fd)
        user = _user()
        if not stat.S_ISREG(info.st_mode) or (user is not None and info.st_uid != user):
            return False
        return os.read(fd, len(MAGIC)) == MAGIC
    except OSError:
        return False
    finally:
        os.close(fd)
