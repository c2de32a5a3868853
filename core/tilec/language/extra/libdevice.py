"""Triton's `tl.extra.libdevice` functions that tilec computes exactly as libdevice specifies.

Every name is a `tl` function: `fast_*` variants compute the precise function (at least as
accurate as libdevice's approximation), the `_rn` variants round to nearest even, as the plain
IEEE operations do. Names missing here are listed in docs/triton-names.md with the reason.
"""

from tilec import language as tl

abs = tl.abs
fabs = tl.abs
floor = tl.floor
ceil = tl.ceil
sqrt = tl.sqrt
sqrt_rn = tl.sqrt_rn
rsqrt = tl.rsqrt
exp = tl.exp
exp2 = tl.exp2
log = tl.log
log2 = tl.log2
sin = tl.sin
cos = tl.cos
tanh = tl.tanh
erf = tl.erf
fma = tl.fma
fma_rn = tl.fma
div_rn = tl.div_rn
umulhi = tl.umulhi
fast_expf = tl.exp
fast_logf = tl.log
fast_log2f = tl.log2
fast_sinf = tl.sin
fast_cosf = tl.cos
fast_dividef = tl.fdiv

NAMES = sorted(name for name, value in globals().items() if hasattr(value, "__tilec_builtin__"))
"""The libdevice names this module provides."""
