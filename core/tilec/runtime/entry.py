"""A user's entry points into tilec (a launch, a warmup, `tilec.compile`, a decorator): their
mistakes (`TilecError`) are raised at their call, with its `call_site` and without tilec's frames
below the raising one unless `TILEC_DEBUG` is on.

It imports nothing of tilec but `settings` and `errors`, so that every part of the runtime can use
it: the launcher (`kernel[grid]`), the compiler (`compiled[grid]`, `tilec.compile`, which the
launcher imports) and the autotuner.
"""

from __future__ import annotations

import functools
import os
import sys
from collections.abc import Callable
from typing import Any

from tilec import settings
from tilec.errors import TilecError


def user_error(error: TilecError, caller: Any) -> bool:
    """Ready `error`, a user's mistake found under their call in frame `caller` (a launch, a
    warmup), to be raised to them: it gets that call's `call_site` (where it has none yet).
    Returns whether to raise it without tilec's frames below the raising one (`raise
    error.with_traceback(None)`); under `TILEC_DEBUG` it keeps them (a bare `raise`)."""
    if error.call_site is None:
        error.call_site = _call_site(caller)
    return not settings.DEBUG.enabled()


def user_entry(function: Callable[..., Any]) -> Callable[..., Any]:
    """`function`, an entry point of a user's (`kernel.warmup`, an autotuned kernel's
    `kernel[grid]`, `compiled[grid]`, `tilec.compile`, a decorator), raising their mistakes as a
    launch does (`user_error`)."""

    @functools.wraps(function)
    def entry(*args: Any, **kwargs: Any) -> Any:
        try:
            return function(*args, **kwargs)
        except TilecError as error:
            if not user_error(error, sys._getframe(1)):
                raise
            raise error.with_traceback(None)  # noqa: B904 (the same error, its cause kept)

    return entry


_TILEC_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def user_stacklevel() -> int:
    """The `stacklevel` that makes a `warnings.warn` in the calling function name the first
    frame outside tilec (the user's decorator or launch), however deep inside tilec it is."""
    frame, level = sys._getframe(1), 1
    while frame is not None and _is_tilec(frame.f_code.co_filename):
        frame, level = frame.f_back, level + 1
    return level


def _is_tilec(filename: str) -> bool:
    return os.path.abspath(filename).startswith(_TILEC_DIR + os.sep)


def _call_site(frame: Any) -> str | None:
    """`file:line` of the first frame from `frame` outward that is not tilec's (the user's
    `kernel[grid](...)`, also where it goes through `Launcher.__call__` or the autotuner)."""
    while frame is not None:
        filename = frame.f_code.co_filename
        if not _is_tilec(filename):
            return f"{filename}:{frame.f_lineno}"
        frame = frame.f_back
    return None
