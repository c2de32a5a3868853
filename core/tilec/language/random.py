"""`tl.random`: Triton's random module (`triton.language.random`). Each function is the `tl`
function of the same name (`tl.random.rand is tl.rand`)."""

from tilec.language import (
    constexpr,
    pair_uniform_to_normal,
    philox,
    philox_impl,
    rand,
    rand4x,
    randint,
    randint4x,
    randn,
    randn4x,
    uint_to_uniform_float,
)

N_ROUNDS_DEFAULT = constexpr(10)
"""The rounds of Philox the functions run unless told (`n_rounds=`)."""

__all__ = [
    "N_ROUNDS_DEFAULT", "pair_uniform_to_normal", "philox", "philox_impl", "rand", "rand4x",
    "randint", "randint4x", "randn", "randn4x", "uint_to_uniform_float",
]  # fmt: skip
