"""Compiling (and tuning) once per cluster, through the remote tier (`tilec.remote_cache`).

`shared(kind, name, parse)` looks an entry up on the server; on a miss, the process claims it: a
Redis key `<...>:claim:<kind>:<name>` set only where it is absent (`SET NX PX`) to a random token,
with a lease of `LEASE_S` seconds that a thread of the holder renews while it works. The holder
does the work and publishes it; the others poll for the entry (and for the claim, which they take
over when a crashed holder's lease runs out) for up to `TILEC_REMOTE_CACHE_WAIT` seconds, then do
the work themselves. A claim is given up only by its holder (a compare-and-delete script), so a
holder whose lease ran out never deletes another's. A holder that ends without publishing (its
compile failed, or the entry is over the size bound) leaves the claim marked `UNSHARED` for a
lease, so that the waiting processes work at once instead of claiming it one after another.
Without a usable server every process works on its own, at once.

The renewing thread is stopped before a fork (the autotuner's workers) and started again after
it in the parent; a child holds none of its parent's claims.
"""

from __future__ import annotations

import contextlib
import logging
import os
import secrets
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any, Generic, TypeVar

from tilec import remote_cache, settings

LEASE_S = 10.0
"""How long a claim outlives its holder's last renewal (renewed every third of it)."""
POLL_S = (0.02, 0.5)
"""The first and the longest pause between a waiting process's looks at the server."""
log = logging.getLogger(__name__)

_RELEASE = (
    "if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end return 0"
)
_RENEW = (
    "if redis.call('GET', KEYS[1]) == ARGV[1] then "
    "return redis.call('PEXPIRE', KEYS[1], ARGV[2]) end return 0"
)
_GIVE_UP = (
    "if redis.call('GET', KEYS[1]) == ARGV[1] then "
    "return redis.call('SET', KEYS[1], ARGV[2], 'PX', ARGV[3]) end return 0"
)
UNSHARED = b"unshared"
"""A claim's value once its holder ended without publishing."""
T = TypeVar("T")


class Shared(Generic[T]):
    """What `shared` found: `value` (the parsed entry another process made), or None: then the
    caller does the work and `publish`es its entry's text."""

    def __init__(self, kind: str, name: str, value: T | None, text: str | None):
        self.kind, self.name, self.value, self.text = kind, name, value, text
        self.published = False

    def publish(self, text: str) -> None:
        if remote_cache.enabled():
            self.published = remote_cache.put(self.kind, self.name, text)


@contextlib.contextmanager
def shared(kind: str, name: str, parse: Callable[[str], T | None]) -> Iterator[Shared[T]]:
    """The entry `name` of `kind` from the remote tier, or the claim to make it (see the module's
    description); the claim is given up when the block ends."""
    if not remote_cache.enabled():
        yield Shared(kind, name, None, None)
        return
    claim = remote_cache.redis_key("claim:" + kind, name)
    token = secrets.token_hex(16)
    text, value, held = _wait(kind, name, parse, claim, token)
    if held:
        _held[claim] = token
        _ensure_renewing()
    found = Shared(kind, name, value, text)
    try:
        yield found
    finally:
        if held:
            _held.pop(claim, None)
            _release(claim, token, found.published)


def _release(claim: str, token: str, published: bool = True) -> None:
    """Give the claim up: deleted, or marked `UNSHARED` where no entry was published."""
    if published:
        script, args = _RELEASE, (token,)
    else:
        script, args = _GIVE_UP, (token, UNSHARED, int(LEASE_S * 1000))
    remote_cache.run(
        "giving up a claim", lambda c, _: c.eval(script, 1, claim, *args), write=not published
    )


def _wait(kind, name, parse, claim, token) -> tuple[str | None, Any, bool]:
    """(text, parsed value, False) of an entry found, or (None, None, whether this process holds
    the claim) when it is to make it."""
    count, pause = True, POLL_S[0]
    deadline = time.monotonic() + settings.remote_number(settings.REMOTE_CACHE_WAIT, 600)
    lease_ms = int(LEASE_S * 1000)
    while True:
        text = remote_cache.get(kind, name, count=count)
        value = parse(text) if text is not None else None
        if value is not None:
            return text, value, False
        count = False
        claimed = remote_cache.run(
            "claiming", lambda c, _: c.set(claim, token, nx=True, px=lease_ms), write=True
        )
        if claimed is True:  # unless the entry came between the look and the claim
            text = remote_cache.get(kind, name, count=False)
            value = parse(text) if text is not None else None
            if value is None:
                return None, None, True
            _release(claim, token)
            return text, value, False
        if claimed is remote_cache.FAILED:
            return None, None, False  # no usable server, or a full one: work at once
        if text is not None:  # the holder published an entry this host cannot use
            return None, None, False
        if not _worth_waiting(claim):
            return None, None, False
        if time.monotonic() >= deadline:
            log.info("%s %s: waited for another process's entry in vain: made here", kind, name)
            return None, None, False
        time.sleep(pause)
        pause = min(pause * 1.5, POLL_S[1])


def _worth_waiting(claim: str) -> bool:
    """Whether the claim is a working holder's: not marked `UNSHARED` (made, not published),
    and with no longer a lease than a holder gives (a claim set by hand for an hour or for ever,
    by mistake or to stall the cluster, is not waited for)."""

    def look(client: Any, _: Any) -> list[Any]:
        return client.pipeline(transaction=False).get(claim).pttl(claim).execute()

    found = remote_cache.run("reading a claim", look)
    if found is remote_cache.FAILED:
        return False
    value, left_ms = found  # -2: gone (claimed at the next look), -1: no expiry (not a holder's)
    return value != UNSHARED and (left_ms == -2 or 0 <= left_ms <= LEASE_S * 1000)


_held: dict[str, str] = {}
"""The claims this process holds (Redis key -> token), renewed by `_renewer`."""
_renewer: dict[str, Any] = {"thread": None, "stop": None}


def _ensure_renewing() -> None:
    if _renewer["thread"] is not None:
        return
    stop = threading.Event()
    thread = threading.Thread(target=_renew, args=(stop,), name="tilec-claims", daemon=True)
    _renewer.update(thread=thread, stop=stop)
    thread.start()


def _renew(stop: threading.Event) -> None:
    while not stop.wait(LEASE_S / 3):
        lease_ms = int(LEASE_S * 1000)
        for claim, token in list(_held.items()):
            remote_cache.run(
                "renewing a claim",
                lambda c, _, k=claim, t=token, m=lease_ms: c.eval(_RENEW, 1, k, t, m),
            )


def _stop_renewing() -> None:
    """Before a fork: the thread ends (a fork with threads running may deadlock the child)."""
    thread, stop = _renewer["thread"], _renewer["stop"]
    if thread is None:
        return
    stop.set()
    thread.join(timeout=5.0)
    _renewer.update(thread=None, stop=None)


def _after_fork_in_parent() -> None:
    if _held:
        _ensure_renewing()


def _after_fork_in_child() -> None:
    _held.clear()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(
        before=_stop_renewing,
        after_in_parent=_after_fork_in_parent,
        after_in_child=_after_fork_in_child,
    )
