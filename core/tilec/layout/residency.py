"""How many blocks of a kernel share an SM, as far as the gir stage can tell (occupancy).

The kernel's shared memory is estimated from its ops as the lowering will place them
(`tilec.lowering.shared_memory`: a stack): a conversion to a shared-memory encoding
(`#gpu.nvmma_shared`: a loop-invariant wgmma operand) holds its bytes to the end of the kernel,
and the rings `pipeline-loops` is about to give a loop are allocated before it and freed after it
(unless memory was held above them meanwhile, as the lowering's dealloc does); a kernel with
descriptor accesses also gets the bytes a backend may place above the rest for them
(`DESCRIPTOR_TAIL_BYTES`: NVIDIA's TMA barrier and the map a kernel builds for a descriptor made
in it, `LoweringContext.shared_tail`; at most 136 bytes that a kernel whose descriptor loads
all fill rings does not use). The scratch of layout conversions through shared memory is left
out, so the estimate is a lower bound (but for those tail bytes), and the blocks an SM
(`tilec.arch.SmResources.blocks`) an upper bound; registers, which ptxas decides after the layout
passes, too. Where it says one block, one block it is.

`pipeline-loops` reads it to decide where a vector load used in registers gets a ring
(`vector_rings_pay`): measured on the H200 (benchmarks/RESULTS.md, the fifth session's A/B of the
attention backward's m and Delta rings), a synchronous load is waited for with nothing else to
run only where one block has the SM (d128: 163840 bytes of shared memory a block, one an SM; the
rings gained up to 14%), while with two blocks an SM (d64: 81920 and 106496 bytes) the other
block's warps run during the wait and the rings' copies and shared-memory reads (16-32 more
instructions an iteration) lost up to 10%, at the same occupancy (ptxas: 201-255 registers,
two blocks an SM, with and without them).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from tilec.dialects.gpu import ConvertLayoutOp, SharedEncodingAttr
from tilec.dialects.gpu_shared import LocalAllocOp, LocalDeallocOp
from tilec.dialects.tile import DescriptorLoadOp, DescriptorStoreOp
from tilec.ir.core import Operation
from tilec.ir.types import MemDescType, TensorType, Type

ALIGNMENT = 128
"""The lowering's alignment of a buffer (1024 for wgmma's tiles: the estimate rounds to 128)."""
DESCRIPTOR_TAIL_BYTES = {"access": 8, "made": 128}
"""Shared memory above every other use where the kernel has a descriptor access (`access`: a
TMA copy's mbarrier) and one made in the kernel (`made`, `in_kernel`: the 128-byte map it
builds), once each (`tilec_nvidia.tma_lowering`, `tilec_nvidia.tma_made`)."""


def tile_bytes(shape: Iterable[int], element: Type) -> int:
    """The bytes of a tile of `shape` and `element` (sub-byte elements as one byte)."""
    count = 1
    for extent in shape:
        count *= extent
    return count * max(getattr(element, "width", 8) // 8, 1)


def _aligned(nbytes: int) -> int:
    return -(-nbytes // ALIGNMENT) * ALIGNMENT


def ring_bytes(types: Iterable[TensorType], stages: int) -> int:
    """The shared memory of a loop's rings: `stages` slots of each of `types`."""
    return sum(stages * _aligned(tile_bytes(t.shape, t.element_type)) for t in types)


class _Stack:
    def __init__(self) -> None:
        self.reserved = 0
        self.peak = 0
        self.buffers: dict[Any, tuple[int, int]] = {}

    def push(self, nbytes: int) -> int:
        offset = self.reserved
        self.reserved += _aligned(nbytes)
        self.peak = max(self.peak, self.reserved)
        return offset

    def pop(self, offset: int, nbytes: int) -> None:
        if offset + _aligned(nbytes) == self.reserved:
            self.reserved = offset


def shared_bytes(
    module: Operation, rings: Mapping[Operation, int], replaced: frozenset[Operation] = frozenset()
) -> int:
    """The kernel's shared memory (module doc): `rings` gives the bytes of the rings each loop
    is about to get, `replaced` the conversions those rings replace (read from a slot instead)."""
    stack = _Stack()
    _walk(module, rings, replaced, stack)
    return stack.peak + _tail_bytes(module)


def _tail_bytes(module: Operation) -> int:
    """`DESCRIPTOR_TAIL_BYTES` of the kernel's descriptor accesses (module doc)."""
    kinds = set()
    for op in module.walk():
        if isinstance(op, DescriptorLoadOp | DescriptorStoreOp):
            kinds.add("access")
            if "made" in op.attributes or "in_kernel" in op.attributes:
                kinds.add("made")
    return sum(DESCRIPTOR_TAIL_BYTES[kind] for kind in kinds)


def _walk(
    op: Operation, rings: Mapping[Operation, int], replaced: frozenset[Operation], stack: _Stack
) -> None:
    for region in op.regions:
        for block in region.blocks:
            for inner in block.ops:
                ring = rings.get(inner, 0)
                offset = stack.push(ring) if ring else 0
                _hold(inner, replaced, stack)
                _walk(inner, rings, replaced, stack)
                if ring:
                    stack.pop(offset, ring)


def _hold(op: Operation, replaced: frozenset[Operation], stack: _Stack) -> None:
    """The shared memory `op` itself takes or gives back."""
    if isinstance(op, LocalAllocOp):
        t: MemDescType = op.result.type  # type: ignore[assignment]
        nbytes = t.slots * _aligned(tile_bytes(t.tile_shape, t.element_type))
        stack.buffers[op.result] = (stack.push(nbytes), nbytes)
    elif isinstance(op, LocalDeallocOp) and op.buffer in stack.buffers:
        stack.pop(*stack.buffers.pop(op.buffer))
    elif isinstance(op, ConvertLayoutOp) and op not in replaced:
        t = op.result.type  # type: ignore[assignment]
        if isinstance(t, TensorType) and isinstance(t.encoding, SharedEncodingAttr):
            stack.push(tile_bytes(t.shape, t.element_type))


def vector_rings_pay(
    sm: Any, num_warps: int, block_limit: int, without: int, with_vectors: int
) -> bool:
    """Whether vector loads used in registers get rings (module doc), given the kernel's shared
    memory `without` and `with_vectors` their rings, the SM's `sm` (`tilec.arch.SmResources`,
    None: unknown, they do as before) and the shared memory one block may use, `block_limit`:
    where the kernel runs one block an SM and the rings fit that block and cost no block."""
    if sm is None:
        return True
    if with_vectors > block_limit:
        return False
    blocks = sm.blocks(num_warps, without)
    return blocks <= 1 and sm.blocks(num_warps, with_vectors) == blocks


__all__ = ["ring_bytes", "shared_bytes", "tile_bytes", "vector_rings_pay"]
