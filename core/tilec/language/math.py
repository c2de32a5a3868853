"""`tl.math`: Triton's math module. Each name is the `tl` function of the same name."""

from tilec.language import (
    abs,
    cdiv,
    ceil,
    cos,
    div_rn,
    erf,
    exp,
    exp2,
    fdiv,
    floor,
    fma,
    log,
    log2,
    rsqrt,
    sin,
    sqrt,
    sqrt_rn,
    umulhi,
)

__all__ = [
    "abs", "cdiv", "ceil", "cos", "div_rn", "erf", "exp", "exp2", "fdiv", "floor", "fma", "log",
    "log2", "rsqrt", "sin", "sqrt", "sqrt_rn", "umulhi",
]  # fmt: skip
