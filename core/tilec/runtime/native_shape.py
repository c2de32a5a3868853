"""What a native fast launch (`tilec.runtime.native_launch`) is made for, known without building
it: the call shape (`CallShape`: each argument's kind, the options, the state guarded) and the
kind of each runtime argument (`kind`). The launcher records these at the first launch of a shape
and builds the native code (llvmlite's JIT, tens of milliseconds) at the next launch of it
(`tilec.runtime.hot_path`), so that a program's first launch of a kernel from the disk cache does
not wait for it. Nothing here imports llvmlite.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

import attrs

from tilec.runtime.specialization import I32, _tensor_token, _token_function


@attrs.frozen
class CallShape:
    """The launches a native fast launch takes: positional arguments described by `positional`
    (per argument: `("constexpr", value)`, compared with `==`, `("is", value)`, that very
    object (a None argument), or `("runtime", kind, slot)`, `kind` from `kind()`, packed into
    kernelParams slot `slot` of `slots`), keywords `options`
    (constexprs and launch options, compared with `==`; no `backend=`) and `stream=` or not (an
    int handle where given). `grid`: the grid of the launch it was made for (that very tuple
    skips the grid's checks); `globals_read`: (dict, name, value) that must still hold;
    `state`: what the Python fast path checks of tilec's state (`_Emitter.state_guards`)."""

    positional: Sequence[tuple]
    slots: int
    options: dict[str, Any]
    grid: Any
    globals_read: Sequence[tuple[Any, str, Any]]
    state: dict[str, Any]


def environment(name: str) -> bytes | None:
    """The value of environment variable `name` as the C library's `getenv` sees it (what the
    native guard compares), None where it is unset."""
    value = os.environ.get(name)
    return None if value is None else os.fsencode(value)


def kind(value: Any, signature: str) -> tuple | None:
    """How a runtime argument of type `signature` (`*fp32`, `i32`, ...) given `value` is
    checked and packed natively, or None where it cannot be."""
    if signature.startswith("*"):
        if _token_function(type(value)) is not _tensor_token:
            return None
        return (
            "tensor",
            type(value),
            value.dtype,
            int(value.get_device()),
            value.data_ptr() & 15 == 0,
        )
    if type(value) is int and signature in ("i32", "i64", "u32", "u64"):
        return ("int", value == 1, value & 15 == 0, I32[0] <= value <= I32[1])
    if type(value) is float and signature in ("fp32", "fp64"):
        return ("float", signature)
    return None
