"""`tl.extra.hip`: Triton 3.6's HIP extras: `libdevice` (the functions of `tl.extra.libdevice`)
and `memrealtime()`, the 64-bit real-time counter (`s_memrealtime`; on gfx11 and gfx12 the
`MSG_RTN_GET_REALTIME` message). Other targets refuse it, located."""

from typing import Any

from tilec.language import _builtin
from tilec.language.extra import libdevice


def _memrealtime() -> Any:
    function = _builtin("hip_memrealtime")
    function.__name__ = function.__qualname__ = "memrealtime"
    function.__doc__ = "memrealtime()\n\nThe GPU's 64-bit real-time counter (constant rate), int64."
    return function


memrealtime = _memrealtime()

__all__ = ["libdevice", "memrealtime"]
