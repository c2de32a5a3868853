"""Where a use of the shared scratch buffer goes, and whether it needs a barrier before it.

A scratch user (a reduction or scan across warps, a layout conversion through shared memory, an
atomic's result handed to every thread) writes its bytes, waits at a barrier and reads them back:
`write; barrier; read`. Its writes must not land on bytes that a slower thread still reads for
the access before, so in general a barrier comes first too. `ScratchPlan` leaves that one out
where the lowering can tell that no such reader exists, as Triton's membar analysis does:

- **Nothing yet.** No thread has accessed shared memory: the kernel's first use, in the
  function's own block (a use inside a loop follows the previous iteration's).
- **Beside the last use.** The last access to shared memory was a scratch use in the same gir
  block (straight-line code between them: no loop's back edge, no other op's shared memory) and
  the new bytes do not overlap its bytes: the new use goes above the last one where that stays
  within the kernel's shared memory so far or `SPARE_BYTES`. Consecutive uses then alternate
  between two places, and the barrier in the middle of each use separates its writes from the
  reads of the use two before.

Anything else that touches shared memory makes the plan unknown (`forget`: the buffers of
`gpu.local_alloc`, matrix units, a user of `LoweringContext.shared_scratch`), and so does a
change of the live buffers' extent (`reserved`); the next use then has its barrier.
"""

from __future__ import annotations

import attrs

from tilec.ir.core import Block, Operation

SPARE_BYTES = 1024
"""The shared memory a kernel may grow to so that a use goes beside the last one (beyond what its
other uses and buffers already take)."""


def aligned(nbytes: int) -> int:
    return (nbytes + 15) // 16 * 16


@attrs.define
class ScratchPlan:
    """The shared-memory state the next scratch use starts from (see the module doc)."""

    block: Block | None = None
    """The gir block whose straight-line code the state below holds in; None: unknown."""
    reserved: int = 0
    """The live buffers' extent (`LoweringContext.shared_reserved`) when the state was set."""
    busy: tuple[int, int] | None = None
    """The bytes threads may still read, from the last use's reads (None: no access yet)."""

    def start(self, block: Block) -> None:
        """No thread has accessed shared memory before the ops of `block` (a kernel's body)."""
        self.block, self.reserved, self.busy = block, 0, None

    def forget(self) -> None:
        """Something else accessed shared memory: the next use barriers first."""
        self.block = None

    def place(
        self, op: Operation, reserved: int, nbytes: int, shared_bytes: int
    ) -> tuple[int, bool]:
        """The byte offset of `op`'s `nbytes` in shared memory and whether a barrier must
        come before its writes; `reserved` is where the scratch buffer starts, `shared_bytes`
        the kernel's shared memory so far."""
        size = aligned(nbytes)
        if self.block is None or op.parent is not self.block or reserved != self.reserved:
            return reserved, True
        if self.busy is None or self.busy[1] <= reserved or reserved + size <= self.busy[0]:
            return reserved, False
        above = aligned(self.busy[1])
        if above + size <= max(shared_bytes, SPARE_BYTES):
            return above, False
        return reserved, True

    def used(self, op: Operation, reserved: int, offset: int, nbytes: int) -> None:
        """`op`'s use at `offset` was emitted: its reads are the bytes that may be busy next."""
        self.block, self.reserved = op.parent, reserved
        self.busy = (offset, offset + aligned(nbytes))


__all__ = ["SPARE_BYTES", "ScratchPlan"]
