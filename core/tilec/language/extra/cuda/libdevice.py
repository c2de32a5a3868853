"""`tl.extra.cuda.libdevice`: the same functions as `tl.extra.libdevice`."""

from tilec.language.extra.libdevice import *  # noqa: F403
from tilec.language.extra.libdevice import NAMES

__all__ = NAMES
