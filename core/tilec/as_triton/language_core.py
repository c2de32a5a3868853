"""`triton.language.core` and `triton.language.standard` under the alias: Triton's modules
behind `triton.language`; every name is `tilec.language`'s (`tl.core.view is tl.view`)."""

from __future__ import annotations

from typing import Any

import tilec.language as _language


def __getattr__(name: str) -> Any:
    try:
        return getattr(_language, name)
    except AttributeError:
        raise AttributeError(
            f"triton.language.core has no {name!r} under tilec.as_triton: tilec.language has "
            "no such name (docs/triton-names.md lists what is absent)"
        ) from None
