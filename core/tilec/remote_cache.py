"""The remote cache tier: a Redis server (`TILEC_REMOTE_CACHE=redis://host:port/db`) that the
processes of a cluster share behind their disk caches, holding compiled kernels (`compile`),
autotuning results (`autotune`) and resolved pass orders (`pipelines`). Lookups go memory, disk,
Redis, then compile; a Redis hit is written to the disk cache, a compile's result published.
`tilec.remote_claims` makes a kernel missed by many processes at once compiled by one of them.

- Keys: `<prefix><tilec version>:v<entry format>:<kind>:<name>` (`TILEC_REMOTE_CACHE_PREFIX`,
  default `tilec:`), `<name>` the disk cache's digest, which holds the compiler's versions too.
- Trust: a value is a disk entry's bytes (`tilec.cache_files.signed`), its HMAC over the whole
  Redis key and the body under the key of `TILEC_CACHE_KEY_FILE`, which every host must share. A
  value that fails (forged, truncated, made with another key or for another key) is ignored with
  a warning, never used. Each value is one `SET`, so no reader sees half of one.
- Bounds: a value over `TILEC_REMOTE_CACHE_MAX_MB` is neither published nor read (the server
  checks the size before sending it); each lives `TILEC_REMOTE_CACHE_TTL` seconds from its last
  read or write.
- Faults: a missing `redis` package, or a server that is down, slower than
  `TILEC_REMOTE_CACHE_TIMEOUT`, full (`OOM` errors on writes) or dropping connections never fails
  a compile or a launch: one warning per process and kind of fault, then the tier is skipped for
  a pause that doubles from 1 s up to a minute while it keeps failing (reads go on while it is
  only full).
- Counts: hits, misses, bytes read and published, and rejected values are kept on the server
  (a hash `<prefix>stats`), for `tilec cache info`.

The `redis` package is imported only when the variable is set (never by `import tilec`).
"""

from __future__ import annotations

import hashlib
import logging
import os
import re
import time
import urllib.parse
import warnings
from collections.abc import Callable, Iterator
from typing import Any

from tilec import cache_files, settings
from tilec.errors import OptionValueError
from tilec.version import __version__

KINDS = ("compile", "autotune", "pipelines")
FORMAT = cache_files.HEADER.split(" v", 1)[1].split(" ", 1)[0]
"""The entry format's version (`tilec.cache_files.HEADER`), part of every key."""
MAX_PAUSE_S = 60.0
log = logging.getLogger(__name__)

_GET = """
local size = redis.call('STRLEN', KEYS[1])
local count = ARGV[3] == '1'
if size == 0 or size > tonumber(ARGV[1]) then
  if count then redis.pcall('HINCRBY', KEYS[2], 'misses', 1) end
  return false
end
redis.pcall('EXPIRE', KEYS[1], ARGV[2])
if count then
  redis.pcall('HINCRBY', KEYS[2], 'hits', 1)
  redis.pcall('HINCRBY', KEYS[2], 'bytes_read', size)
end
return redis.call('GET', KEYS[1])
"""
"""A bounded, counted read: nothing over the size bound leaves the server; a hit refreshes the
entry's TTL. Counting and refreshing are writes that a full server refuses: they may fail
(`pcall`) without failing the read."""


class RemoteCacheWarning(UserWarning):
    """The remote cache tier (or one value of it) is skipped; tilec carries on locally."""


class _Server:
    """One `TILEC_REMOTE_CACHE` server: its client and its fault state."""

    def __init__(self, url: str, client: Any, errors: tuple[type[BaseException], ...]):
        self.url, self.client, self.errors = url, client, errors
        self.paused_until, self.pause, self.failing = 0.0, 0.0, False
        self.get = client.register_script(_GET)


FAILED = object()
"""What `run` returns for an operation that did not happen."""
_servers: dict[str, _Server | None] = {}
_warned: set[str] = set()


def enabled() -> bool:
    """Whether a remote tier is configured (whether or not it can be reached)."""
    return settings.remote_cache() is not None


def forget() -> None:
    """Drop the servers' clients and fault states and the warnings given (tests)."""
    _servers.clear()
    _warned.clear()


def warn_once(text: str, topic: str | None = None) -> None:
    """Warn of `text`, once per `topic` (default: the text) in this process."""
    topic = text if topic is None else topic
    if topic not in _warned:
        _warned.add(topic)
        warnings.warn(f"tilec remote cache: {text}", RemoteCacheWarning, stacklevel=3)


def address(url: str) -> str:
    """`url` without its password, to show."""
    parts = urllib.parse.urlsplit(url)
    if parts.password is None:
        return url
    netloc = parts.netloc.rsplit("@", 1)[1]
    user = f"{parts.username}:***@" if parts.username else "***@"
    return urllib.parse.urlunsplit(parts._replace(netloc=user + netloc))


def _server() -> _Server | None:
    """The configured server, or None: no tier, no `redis` package, or paused after a fault."""
    url = settings.remote_cache()
    if url is None:
        return None
    if url not in _servers:
        _servers[url] = _connect(url)
    server = _servers[url]
    if server is None or time.monotonic() < server.paused_until:
        return None
    return server


def _connect(url: str) -> _Server | None:
    try:
        # deferred: an optional extra (tilec[redis]), needed only where the tier is configured
        import redis
        from redis.backoff import NoBackoff
        from redis.retry import Retry
    except ImportError:
        warn_once(
            f"{settings.REMOTE_CACHE.name} is set but the redis package is not installed "
            "(pip install 'tilec[redis]'): the local cache alone is used"
        )
        return None
    timeout = settings.remote_number(settings.REMOTE_CACHE_TIMEOUT, 2.0)
    # one retry where a pooled connection was dropped (a server's idle timeout, a restart); a
    # timeout is not retried: a slow server is skipped
    retry = Retry(NoBackoff(), 1, supported_errors=(redis.ConnectionError,))
    try:
        client = redis.Redis.from_url(
            url, socket_timeout=timeout, socket_connect_timeout=timeout, retry=retry
        )
    except ValueError as error:  # a port that is no number, an unknown option
        raise OptionValueError(
            f"{settings.REMOTE_CACHE.name}={address(url)!r} is not a Redis URL ({error}); set it "
            "to, e.g., redis://cache-host:6379/0, or unset it"
        ) from None
    return _Server(url, client, (redis.RedisError, OSError))


def run(what: str, operation: Callable[[Any, _Server], Any], write: bool = False) -> Any:
    """`operation(client, server)`, or `FAILED` where there is no usable server or it fails: a
    fault warns once and pauses the tier; a full server (on a write) only warns."""
    server = _server()
    if server is None:
        return FAILED
    try:
        result = operation(server.client, server)
    except server.errors as error:
        _fault(server, what, error, write)
        return FAILED
    if server.failing:
        log.info("remote cache %s answers again", address(server.url))
    server.pause, server.failing = 0.0, False
    return result


def _fault(server: _Server, what: str, error: BaseException, write: bool) -> None:
    where = address(server.url)
    if write and (type(error).__name__ == "OutOfMemoryError" or str(error).startswith("OOM")):
        warn_once(f"{where} is full ({error}); entries are not published there", f"{where} full")
        return
    server.pause = min(max(server.pause * 2, 1.0), MAX_PAUSE_S)
    server.paused_until = time.monotonic() + server.pause
    server.failing = True
    warn_once(
        f"{where} failed while {what} ({type(error).__name__}: {error}); tilec carries on with "
        "its local cache and tries the server again later",
        f"{where} failed",
    )
    log.info("remote cache %s paused for %.0f s after: %s", where, server.pause, error)


def redis_key(kind: str, name: str) -> str:
    return f"{settings.remote_cache_prefix()}{__version__}:v{FORMAT}:{kind}:{name}"


def _stats_key() -> str:
    return f"{settings.remote_cache_prefix()}stats"


def _max_bytes() -> int:
    return int(settings.remote_number(settings.REMOTE_CACHE_MAX_MB, 64) * 1024 * 1024)


def _ttl() -> int:
    return max(1, int(settings.remote_number(settings.REMOTE_CACHE_TTL, 604800)))


def get(kind: str, name: str, count: bool = True) -> str | None:
    """The authenticated body of entry `name` of `kind`, or None (absent, too big, forged, or no
    usable server). `count`: a lookup (counted as hit or miss), not a waiting process's poll."""
    key = redis_key(kind, name)
    data = run(
        "reading",
        lambda _, s: s.get(keys=[key, _stats_key()], args=[_max_bytes(), _ttl(), int(count)]),
    )
    if data is FAILED or data is None:
        return None
    body = cache_files.verified(key, data)
    if body is None:
        warn_once(
            f"the entry {key} on {address(settings.remote_cache() or '')} is not authenticated "
            f"with this host's key (forged or damaged, or {settings.CACHE_KEY_FILE.name} differs "
            "between hosts): ignored, compiled here"
        )
        run("counting", lambda c, _: c.hincrby(_stats_key(), "rejected", 1), write=True)
    return body


def put(kind: str, name: str, body: str) -> bool:
    """Publish `body` as entry `name` of `kind`; whether it was stored."""
    key = redis_key(kind, name)
    data = cache_files.signed(key, body) if enabled() else None
    if data is None or len(data) > _max_bytes():
        return False

    def publish(client: Any, _: _Server) -> bool:
        pipe = client.pipeline(transaction=False)
        pipe.set(key, data, ex=_ttl())
        pipe.hincrby(_stats_key(), "published", 1)
        pipe.hincrby(_stats_key(), "bytes_published", len(data))
        return bool(pipe.execute()[0])

    return run("publishing", publish, write=True) is True


def _own_keys(client: Any) -> Iterator[bytes]:
    """tilec's keys under the prefix: entries, claims and the counts (told by their form, so that
    another program's keys that share the prefix are never touched)."""
    prefix = settings.remote_cache_prefix()
    glob = re.sub(r"([*?\[\]\\])", r"\\\1", prefix) + "*"
    kinds = "|".join(KINDS)
    own = re.compile(
        re.escape(prefix).encode()
        + rf"(stats|[^:]+:v\d+:(claim:)?({kinds}):[0-9a-f]{{64}})".encode()
    )
    for key in client.scan_iter(match=glob, count=1000):
        if own.fullmatch(key):
            yield key


def clear(kinds: tuple[str, ...] = KINDS) -> int | None:
    """Delete tilec's entries of `kinds` under the prefix (SCAN and UNLINK, never a FLUSHDB);
    the number deleted, or None where the server cannot be used. Clearing every kind also
    resets the counts."""
    wanted = re.compile(rf".*:({'|'.join(kinds)}):[0-9a-f]{{64}}".encode())
    stats = _stats_key().encode()

    def delete(client: Any, _: _Server) -> int:
        doomed = [
            k for k in _own_keys(client) if wanted.fullmatch(k) or (k == stats and kinds == KINDS)
        ]
        for start in range(0, len(doomed), 500):
            client.unlink(*doomed[start : start + 500])
        return sum(1 for k in doomed if k != stats)

    deleted = run("clearing", delete)
    return None if deleted is FAILED else deleted


def describe() -> list[str]:
    """`tilec cache info`'s lines for the remote tier ([] where none is configured)."""
    url = settings.remote_cache()
    if url is None:
        return []

    def survey(client: Any, _: _Server) -> tuple[dict[str, list[int]], dict[bytes, bytes]]:
        sizes: dict[str, list[int]] = {kind: [0, 0] for kind in KINDS}
        stats = _stats_key().encode()
        keys = [k for k in _own_keys(client) if k != stats and b":claim:" not in k]
        pipe = client.pipeline(transaction=False)
        for key in keys:
            pipe.strlen(key)
        for key, size in zip(keys, pipe.execute(), strict=True):
            kind = key.decode().rsplit(":", 2)[1]
            sizes[kind][0] += 1
            sizes[kind][1] += size
        return sizes, client.hgetall(_stats_key())

    found = run("surveying", survey)
    head = f"remote cache: {address(url)} (prefix {settings.remote_cache_prefix()!r})"
    if found is FAILED:
        return [f"{head}: unreachable"]
    sizes, stats = found
    counts = {k.decode(): int(v) for k, v in stats.items()}
    lines = [head]
    for kind, (entries, size) in sizes.items():
        lines.append(f"  {kind}: {entries} entries, {_size(size)}")
    hits, misses, read = counts.get("hits", 0), counts.get("misses", 0), counts.get("bytes_read", 0)
    lines.append(
        f"  lookups: {hits} hits, {misses} misses, {_size(read)} read; "
        f"{counts.get('published', 0)} published ({_size(counts.get('bytes_published', 0))}); "
        f"{counts.get('rejected', 0)} rejected (not authenticated)"
    )
    return lines


def _size(count: int) -> str:
    return f"{count / 1e6:.2f} MB" if count >= 1e6 else f"{count / 1e3:.1f} kB"


def stamp(path: str | os.PathLike[str], contents: bool | None = None) -> str:
    """What the compile-cache key takes of a file of the compiler's code: its size and
    modification time, or, with a remote tier (`contents`: None asks `enabled()`), a digest of
    its contents, so that hosts that installed the same code at other times share entries. A
    `str` path costs no `Path`, a `contents` given no settings look-up (a first launch stamps
    some 250 files)."""
    if not (enabled() if contents is None else contents):
        info = os.stat(path)
        return f"{info.st_size}:{info.st_mtime_ns}"
    with open(path, "rb") as file:
        return hashlib.sha256(file.read()).hexdigest()
