"""`tl.extra.cuda`: Triton 3.6's CUDA extras. `libdevice` (the functions of
`tl.extra.libdevice`), the special registers `globaltimer()` (`%globaltimer`, ns, int64) and
`smid()` (`%smid`, int32), `num_warps()` and `num_threads()` (the compile's, as constexprs), and
grid dependency control (`gdc_wait()`, `gdc_launch_dependents()`, sm_90 and later). The registers
are NVIDIA's: other targets refuse them, located (`tilec.frontend.extra_builtins`).
`convert_custom_float8_sm70`/`_sm80` convert to and from `float8e4b15` as `.to()` does, which is
what Triton computes with them (`tilec.ir.float8`), on every backend."""

from typing import Any

from tilec import language as tl
from tilec.frontend.kernel import KernelFunction as _inlined
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


@_inlined
def convert_custom_float8_sm80(arg, dst_ty, fp_downcast_rounding=None):
    """Triton's float8e4b15 conversion (float16/float32 to float8e4b15 and back), which its
    `.to()` uses on sm_80 and later: `arg.to(dst_ty)` (an f32 is truncated to f16 first, so
    `fp_downcast_rounding` has no effect, as in Triton)."""
    tl.static_assert(
        arg.dtype == tl.float8e4b15 or dst_ty == tl.float8e4b15,
        "convert_custom_float8 converts to or from tl.float8e4b15",
    )
    return arg.to(dst_ty)


@_inlined
def convert_custom_float8_sm70(arg, dst_ty, fp_downcast_rounding=None):
    """`convert_custom_float8_sm80`, Triton's form for GPUs before sm_80 (the same values)."""
    return convert_custom_float8_sm80(arg, dst_ty, fp_downcast_rounding)


__all__ = [
    "convert_custom_float8_sm70",
    "convert_custom_float8_sm80",
    "gdc_launch_dependents",
    "gdc_wait",
    "globaltimer",
    "libdevice",
    "num_threads",
    "num_warps",
    "smid",
]
