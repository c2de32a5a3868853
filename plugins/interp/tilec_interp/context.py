"""What every handler gets besides the op: the chunk of programs it runs for."""

from __future__ import annotations

import numpy as np

from tilec.ir.attributes import FileLineColLoc
from tilec.ir.core import Operation


def location_text(op: Operation) -> str:
    loc = op.location
    return loc.short() if isinstance(loc, FileLineColLoc) else str(loc)


class Context:
    """One chunk of programs: their ids, the grid, and which programs are active (None: all)."""

    def __init__(self, P: int, pids: tuple, grid: tuple, active: np.ndarray | None):
        self.P, self.pids, self.grid, self.active = P, pids, grid, active

    def with_active(self, active: np.ndarray | None) -> Context:
        return Context(self.P, self.pids, self.grid, active)

    def pid(self, p: int) -> tuple[int, ...]:
        return tuple(int(a[p]) for a in self.pids[: len(self.grid)])

    def combine(self, mask: np.ndarray | None, shape: tuple[int, ...]) -> np.ndarray | None:
        """`mask` (P, *shape) and the active mask, or None when everything is on."""
        if self.active is None:
            return mask
        act = self.active.reshape((self.P,) + (1,) * len(shape))
        return np.broadcast_to(act, (self.P, *shape)) if mask is None else (mask & act)
