"""Compare what the CPU emulator computed with the interpreter's result and, where they differ,
say which side is right: each differing element is set against the exact value (computed by
the test in float64), and the message counts the elements where the emulator is nearer, where
the interpreter is, and shows the first few. A test whose two sides may round differently (a
different order of float sums) gives a tolerance; the message still names the nearer side."""

from __future__ import annotations

import numpy as np

SHOWN = 5
"""How many differing elements the message lists."""


def differing(got: np.ndarray, want: np.ndarray, rtol: float = 0.0, atol: float = 0.0):
    """The mask of elements of `got` and `want` that differ beyond `atol + rtol * |want|` (NaNs
    agree with NaNs; with no tolerance, floats must be equal, integers identical)."""
    if not (np.issubdtype(got.dtype, np.floating) and np.issubdtype(want.dtype, np.floating)):
        return got != want
    g, w = got.astype(np.float64), want.astype(np.float64)
    both_nan = np.isnan(g) & np.isnan(w)
    with np.errstate(invalid="ignore"):
        return ~both_nan & ~(np.abs(g - w) <= atol + rtol * np.abs(w))


def explain(
    got: np.ndarray, want: np.ndarray, exact: np.ndarray | None, mask: np.ndarray, name: str
) -> str:
    """The message for elements `mask` where `got` (`name`'s: the emulator, the GPU) and `want`
    (the interpreter's) differ, with which is nearer `exact` where it is given."""
    shape = mask.shape
    got, want, mask = got.reshape(-1), want.reshape(-1), mask.reshape(-1)
    where = np.flatnonzero(mask)
    lines = [f"the {name} and the interpreter differ at {where.size} of {mask.size} elements"]
    if exact is None:
        for i in where[:SHOWN]:
            lines.append(f"  [{i}] {name} {got[i].item()!r}, interpreter {want[i].item()!r}")
        return "\n".join(lines)
    exact = np.broadcast_to(np.asarray(exact, np.float64), shape).reshape(-1)
    with np.errstate(invalid="ignore"):
        off_got = np.abs(got.astype(np.float64) - exact)[where]
        off_want = np.abs(want.astype(np.float64) - exact)[where]
    emulator, interpreter = int((off_got < off_want).sum()), int((off_want < off_got).sum())
    lines.append(
        f"nearer the exact value: the {name} at {emulator}, the interpreter at {interpreter}, "
        f"neither at {where.size - emulator - interpreter}"
    )
    for i, a, b in list(zip(where, off_got, off_want, strict=True))[:SHOWN]:
        side = f"the {name}" if a < b else "the interpreter" if b < a else "neither"
        lines.append(
            f"  [{i}] {name} {got[i].item()!r}, interpreter {want[i].item()!r}, "
            f"exact {exact[i].item()!r}: {side} is nearer"
        )
    return "\n".join(lines)


def assert_matches_interpreter(
    got: np.ndarray,
    want: np.ndarray,
    exact: np.ndarray | None = None,
    rtol: float = 0.0,
    atol: float = 0.0,
    what: str = "",
    name: str = "emulator",
) -> None:
    """`got` (`name`'s: the emulator's by default) equals `want` (the interpreter's), within
    `atol + rtol * |want|`; else an AssertionError that says, against `exact` when given, which
    side is right."""
    got, want = np.asarray(got), np.asarray(want)
    mask = differing(got, want, rtol, atol)
    if mask.any():
        prefix = f"{what}: " if what else ""
        raise AssertionError(prefix + explain(got, want, exact, mask, name))


__all__ = ["assert_matches_interpreter", "differing", "explain"]
