"""tilec's log messages: stdlib `logging` under the `tilec` logger (each module logs to its own
child, `tilec.runtime.compiler`, `tilec.pipeline.stages`, ...): which backend was chosen and why,
compile cache hits and misses, and the time of each compile stage.

`TILEC_LOG=info` (or `debug`) prints them on stderr; `configure()` applies the variable and runs
when `tilec` is imported. Programs that configure logging themselves can use the `tilec` logger
without it.
"""

from __future__ import annotations

import logging
import warnings

from tilec import settings

LEVELS = {"info": logging.INFO, "debug": logging.DEBUG}
_OFF = ("0", "off", "false", "no")

logger = logging.getLogger("tilec")
_handler: logging.Handler | None = None


def configure() -> None:
    """Apply `TILEC_LOG`: a stderr handler on the `tilec` logger at that level, or none."""
    global _handler
    if _handler is not None:
        logger.removeHandler(_handler)
        _handler = None
    value = (settings.LOG.get() or "").strip().lower()
    if value in ("", *_OFF):
        return
    level = LEVELS.get(value)
    if level is None:
        warnings.warn(
            f"TILEC_LOG={settings.LOG.get()!r} is not a log level tilec knows; use "
            f"{' or '.join(LEVELS)} (tilec logs nothing until it is)",
            stacklevel=2,
        )
        return
    _handler = logging.StreamHandler()
    _handler.setFormatter(logging.Formatter("tilec %(levelname)s [%(name)s] %(message)s"))
    logger.addHandler(_handler)
    logger.setLevel(level)
