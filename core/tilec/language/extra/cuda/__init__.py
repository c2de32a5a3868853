"""`tl.extra.cuda`: Triton 3.6's CUDA extras. `libdevice` (the functions of
`tl.extra.libdevice`), the special registers `globaltimer()` (`%globaltimer`, ns, int64) and
`smid()` (`%smid`, int32), `num_warps()` and `num_threads()` (the compile's, as constexprs), and
grid dependency control (`gdc_wait()`, `gdc_launch_dependents()`, sm_90 and later). The registers
are NVIDIA's: other targets refuse them, located (`tilec.frontend.extra_builtins`).
`convert_custom_float8_sm70`/`_sm80` are absent (docs/triton-names.md says why)."""

from typing import Any

from tilec.language import _builtin
from tilec.language.extra import libdevice


def _extra(name: str, doc: str) -> Any:
    function = _builtin(f"cuda_{name}")
    function.__name__ = function.__qualname__ = name
    function.__doc__ = doc
    return function


globaltimer = _extra(
    "globaltimer", "globaltimer()\n\nThe GPU's global nanosecond timer (`%globaltimer`), int64."
)
smid = _extra("smid", "smid()\n\nThe index of the SM running the program (`%smid`), int32.")
num_warps = _extra("num_warps", "num_warps()\n\nThe kernel's num_warps, a constexpr.")
num_threads = _extra(
    "num_threads", "num_threads()\n\nThe kernel's threads a program, num_warps * 32, a constexpr."
)
gdc_wait = _extra(
    "gdc_wait",
    "gdc_wait()\n\nWait for the grids this one depends on (`griddepcontrol.wait`, sm_90+).",
)
gdc_launch_dependents = _extra(
    "gdc_launch_dependents",
    "gdc_launch_dependents()\n\nLet dependent grids launch (`griddepcontrol.launch_dependents`).",
)

__all__ = [
    "gdc_launch_dependents",
    "gdc_wait",
    "globaltimer",
    "libdevice",
    "num_threads",
    "num_warps",
    "smid",
]
