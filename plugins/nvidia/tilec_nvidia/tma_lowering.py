"""`tile.descriptor_load` through TMA (docs/tma.md): NVIDIA's `TargetInfo.descriptor_load`,
`added_parameters` and `added_metadata`.

A descriptor load the target claims (`claims`: sm_90 and later, an element type and block TMA
copies) reads its block with one set of box copies: every thread fences its earlier shared
accesses for the async proxy and meets the others at a barrier (the scratch buffer may have
been in use), thread 0 arms the kernel's mbarrier with the block's bytes and issues one
`cp.async.bulk.tensor` a box, every thread waits for the barrier's phase (a phase bit the kernel
carries in a register: each load completes the barrier once), reads its registers from the
swizzled buffer and meets the others at a barrier again. Boxes of a block wider than its
swizzle (or longer than 256 along a dimension) lie one after another in the buffer, the
innermost dimension's box index slowest (`NvmmaTile`'s column blocks).

Each distinct descriptor (its parameters, padding, element and block) is one tensor-map
parameter after the kernel's own; the metadata's `tensor_maps` (`tilec_nvidia.tma_launch`) tells
the launch how to encode it.
"""

from __future__ import annotations

import itertools
import math
from typing import Any

from llvmlite import ir

from tilec.dialects.tile import DescriptorLoadOp
from tilec.ir.type_names import BY_IR_TYPE
from tilec.ir.types import element_type, shape_of
from tilec.lowering.context import I32, I64, LoweringContext, LTensor, memory_type
from tilec_nvidia import tensor_map, tma
from tilec_nvidia.arch import ARCHS

ALIGN = 1024
"""The buffer's alignment: the 128-byte swizzle repeats every 1024 bytes of the address."""
MAX_BLOCK_BYTES = 64 << 10
"""The largest block read this way (its buffer is the kernel's scratch, 1 KB more)."""


def _element(op: DescriptorLoadOp) -> str | None:
    scalar = BY_IR_TYPE.get(element_type(op.result.type))
    return scalar.signature if scalar is not None else None


def _element_bytes(op: DescriptorLoadOp) -> int:
    return max(element_type(op.result.type).width // 8, 1)  # type: ignore[attr-defined]


def layout(op: DescriptorLoadOp) -> tuple[tuple[int, ...], int, tuple[int, ...]]:
    """The block, its swizzle (bytes) and its box, outermost first."""
    block = tuple(shape_of(op.result.type))
    size = _element_bytes(op)
    swizzle = tensor_map.swizzle_bytes(block[-1] * size)
    return block, swizzle, tensor_map.box_shape(block, size, swizzle)


def claims(arch: str, op: Any) -> bool:
    """Whether the descriptor load `op` is read through TMA on `arch`."""
    if not isinstance(op, DescriptorLoadOp) or "tma" not in ARCHS.check(arch).features:
        return False
    element = _element(op)
    if element not in tensor_map.DATA_TYPES:
        return False
    block, _swizzle, box = layout(op)
    size = _element_bytes(op)
    return (
        1 <= len(block) <= tensor_map.MAX_RANK
        and box[-1] * size % 16 == 0
        and math.prod(block) * size <= MAX_BLOCK_BYTES
        and (
            op.padding.value == "zero"
            or tensor_map.DATA_TYPES[element] in tensor_map.FLOAT_DATA_TYPES
        )
    )


def map_key(op: DescriptorLoadOp) -> tuple:
    """What one tensor-map parameter stands for: loads with equal keys share it."""
    block, swizzle, _box = layout(op)
    return (
        op.base_param.value, tuple(op.shape_params.ints()), tuple(op.stride_params.ints()),
        op.padding.value, _element(op), block, swizzle,
    )  # fmt: skip


def added_parameters(arch: str, func: Any) -> list[tuple[Any, ir.Type]]:
    keys: list[tuple] = []
    for op in func.walk():
        if claims(arch, op) and map_key(op) not in keys:
            keys.append(map_key(op))
    return [(key, ir.PointerType()) for key in keys]


def added_metadata(keys: list[tuple]) -> dict[str, Any]:
    maps = []
    for base, shape, strides, padding, element, block, swizzle in keys:
        maps.append({
            "element": element, "base": base, "shape": [["param", i] for i in shape],
            "strides": [["param", i] if i >= 0 else ["const", 1] for i in strides],
            "block": list(block), "padding": padding, "swizzle": swizzle,
        })  # fmt: skip
    return {"tensor_maps": maps}


def descriptor_load(arch: str, ctx: LoweringContext, op: DescriptorLoadOp) -> bool:
    if not claims(arch, op):
        return False
    b = ctx.builder
    target = ctx.target
    key = map_key(op)
    argument = ctx.added_args[key]
    tma.tensor_map_parameter(ctx.fn, list(ctx.fn.args).index(argument))
    issuer, barrier, phase = _kernel_state(arch, ctx)
    ctx._entry(("tma.prefetch", key), lambda p: tma.prefetch(arch, p, argument))
    block, swizzle, box = layout(op)
    size = _element_bytes(op)
    total = math.prod(block) * size
    box_bytes = math.prod(box) * size
    start = ctx.shared_scratch(total + ALIGN)
    address = b.ptrtoint(start, I64)
    aligned = b.and_(b.add(address, I64(ALIGN - 1)), I64(-ALIGN))
    buffer = b.inttoptr(aligned, start.type)

    tma.fence_async_shared(arch, b)  # earlier generic accesses to the scratch, then
    target.barrier(b)  # every thread done with it
    tma.expect_bytes(arch, b, barrier, total, issuer)
    offsets = [b.trunc(o, I32) if o.type.width > 32 else o for o in map(ctx.get, op.offsets)]
    counts = [size // part for size, part in zip(block, box, strict=True)]
    for index, origin in enumerate(_box_origins(block, box)):
        coordinates = [
            b.add(o, I32(at)) if at else o for o, at in zip(offsets, origin, strict=True)
        ]
        destination = b.gep(buffer, [I32(index * box_bytes)], source_etype=ir.IntType(8))
        tma.copy_box(arch, b, destination, barrier, argument, coordinates, issuer)
    parity = b.load(phase, typ=I32)
    tma.wait(arch, b, barrier, parity)
    b.store(b.xor(parity, I32(1)), phase)

    result_type = op.result.type
    mem = memory_type(element_type(result_type), target)
    mapping = LTensor(result_type, []).mapping
    vec = vector_width(mapping, box[-1], size)
    access = ir.VectorType(mem, vec) if vec > 1 else mem
    all_coords = ctx.element_coords(mapping)
    values = []
    for start in range(0, len(all_coords), vec):
        offset = _box_offset(b, all_coords[start], box, counts, box_bytes, size)
        if swizzle:  # a 16-byte chunk moves whole: a vector of up to 16 bytes stays in one
            chunk_row = b.and_(b.lshr(offset, I32(7)), I32(swizzle // 16 - 1))
            offset = b.xor(offset, b.shl(chunk_row, I32(4)))
        source = b.gep(buffer, [offset], source_etype=ir.IntType(8))
        loaded = b.load(source, typ=access, align=vec * size)
        values += [b.extract_element(loaded, I32(k)) for k in range(vec)] if vec > 1 else [loaded]
    target.barrier(b)  # the scratch is free again
    ctx.set(op.result, LTensor(result_type, values))
    return True


def vector_width(mapping: Any, box_inner: int, size: int) -> int:
    """How many registers (at most 16 bytes) each shared-memory read takes: a power of two
    `vec` where every group of `vec` registers holds consecutive elements of the innermost
    dimension starting at a multiple of `vec` (registers and thread offsets alike), within one
    box row."""
    registers = mapping.registers
    last = mapping.dims[-1]
    scales = [d_scale for d_scale, count in ((last.lane_scale, last.lane_count),
                                             (last.warp_scale, last.warp_count)) if count > 1]  # fmt: skip
    vec = max(16 // size, 1)
    while vec > 1:
        groups = range(0, len(registers), vec)
        if (
            box_inner % vec == 0
            and len(registers) % vec == 0
            and all(scale % vec == 0 for scale in scales)
            and all(
                registers[g][-1] % vec == 0
                and all(
                    registers[g + k] == (*registers[g][:-1], registers[g][-1] + k)
                    for k in range(vec)
                )
                for g in groups
            )
        ):
            return vec
        vec //= 2
    return 1


def _box_origins(block: tuple[int, ...], box: tuple[int, ...]) -> list[tuple[int, ...]]:
    """The boxes' origins in buffer order: the innermost dimension's box index slowest."""
    ranges = [range(0, size, part) for size, part in zip(block, box, strict=True)]
    order = [ranges[-1], *ranges[:-1]]
    return [(*outer, inner) for inner, *outer in itertools.product(*order)]


def _box_offset(b: ir.IRBuilder, coords: list[ir.Value], box: tuple[int, ...],
                counts: list[int], box_bytes: int, size: int) -> ir.Value:  # fmt: skip
    """The byte offset (unswizzled) in the buffer of the element at `coords` (i32)."""
    index: ir.Value = I32(0)  # the box's, in `_box_origins`' order
    within: ir.Value = I32(0)  # row-major in the box
    order = [len(box) - 1, *range(len(box) - 1)]
    for dim in order:
        if counts[dim] > 1:
            index = b.add(b.mul(index, I32(counts[dim])), b.udiv(coords[dim], I32(box[dim])))
    for dim, part in enumerate(box):
        inner = b.urem(coords[dim], I32(part)) if counts[dim] > 1 else coords[dim]
        within = b.add(b.mul(within, I32(part)), inner)
    return b.add(b.mul(index, I32(box_bytes)), b.mul(within, I32(size)))


def _kernel_state(arch: str, ctx: LoweringContext) -> tuple[ir.Value, ir.Value, ir.Value]:
    """The kernel's issuing-thread flag, mbarrier (initialized once, in the prologue) and
    phase bit (an i32 slot that LLVM keeps in a register)."""

    def make(p: ir.IRBuilder) -> Any:
        issuer = p.icmp_unsigned("==", ctx.thread_id(), I32(0))
        barrier = ir.GlobalVariable(ctx.module, I64, "tma_barrier", addrspace=3)
        barrier.align, barrier.linkage = 8, "internal"
        barrier.initializer = ir.Constant(I64, None)
        tma.init(arch, p, barrier, issuer)
        phase = p.alloca(I32, name="tma.phase")
        p.store(I32(0), phase)
        return (issuer, barrier, phase)

    return ctx._entry("tma.state", make)
