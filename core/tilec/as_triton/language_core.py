"""`triton.language.core` and `triton.language.standard` under the alias: Triton's modules
behind `triton.language`; every name is `tilec.language`'s (`tl.core.view is tl.view`), besides
the few helpers of Triton's own that libraries call from their kernels: `CONSTEXPR_0` (a
`descending` default), `get_int_dtype(bitwidth, signed)` and `_log2(i)`, both evaluated at
compile time in kernels, as Triton evaluates them."""

from __future__ import annotations

from typing import Any

import tilec.language as _language
from tilec.language.target_info import _compile_time

CONSTEXPR_0 = _language.constexpr(0)


@_compile_time
def get_int_dtype(bitwidth: int, signed: bool) -> Any:
    """Triton's integer dtype of `bitwidth` bits (1 is `int1`, which has no sign)."""
    if bitwidth == 1:
        return _language.int1
    name = f"{'' if signed else 'u'}int{bitwidth}"
    if bitwidth not in (8, 16, 32, 64):
        raise ValueError(f"get_int_dtype: no integer type of {bitwidth} bits (1, 8, 16, 32, 64)")
    return getattr(_language, name)


@_compile_time
def _log2(i: int) -> int:
    """The floor of log2 of the positive int `i` (0 for 1), Triton's `tl.standard._log2`."""
    return max(int(i), 1).bit_length() - 1


def __getattr__(name: str) -> Any:
    try:
        return getattr(_language, name)
    except AttributeError:
        raise AttributeError(
            f"triton.language.core has no {name!r} under tilec.as_triton: tilec.language has "
            "no such name (docs/triton-names.md lists what is absent)"
        ) from None
