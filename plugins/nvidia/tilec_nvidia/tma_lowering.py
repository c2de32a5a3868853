"""`tile.descriptor_load` and `tile.descriptor_store` through TMA (docs/tma.md): NVIDIA's
`TargetInfo.descriptor_load`, `descriptor_store`, `added_parameters` and `added_metadata`.

A descriptor load the target claims (`claims`: sm_90 and later, an element type and block TMA
copies) reads its block with one set of box copies: every thread fences its earlier shared
accesses for the async proxy and meets the others at a barrier (the scratch buffer may have
been in use), thread 0 arms the kernel's mbarrier with the block's bytes and issues one
`cp.async.bulk.tensor` a box, every thread waits for the barrier's phase (a phase bit the kernel
carries in a register: each load completes the barrier once), reads its registers from the
swizzled buffer and meets the others at a barrier again. Boxes of a block wider than its
swizzle (or longer than 256 along a dimension) lie one after another in the buffer, the
innermost dimension's box index slowest (`NvmmaTile`'s column blocks). A claimed store writes
its registers into the buffer, fences them for the async proxy, and thread 0 stores each box
(`cp.async.bulk.tensor` ... `bulk_group`: elements outside the tensor are not written) and waits
for its bulk group before the threads meet again.

Each distinct descriptor (its parameters, padding, element and block) is one tensor-map
parameter after the kernel's own; the metadata's `tensor_maps` (`tilec_nvidia.tma_launch`) tells
the launch how to encode it.
"""

from __future__ import annotations

import itertools
import math
from typing import Any

import attrs
from llvmlite import ir

from tilec.dialects.func import FuncOp
from tilec.dialects.gpu_bulk import AsyncBulkCopyGlobalToLocalOp
from tilec.dialects.tile import DescriptorLoadOp, DescriptorStoreOp
from tilec.ir.attributes import ArrayAttr, IntegerAttr
from tilec.ir.type_names import BY_IR_TYPE
from tilec.ir.types import TensorType, element_type, shape_of
from tilec.lowering.context import I8, I32, I64, LoweringContext, LTensor, memory_type
from tilec.lowering.memory import masked_load
from tilec_nvidia import tensor_map, tma
from tilec_nvidia.arch import ARCHS

CLAIMED = (DescriptorLoadOp, DescriptorStoreOp, AsyncBulkCopyGlobalToLocalOp)
"""The ops read or written through TMA where `claims` says so: a ring's bulk copy
(`tilec_nvidia.tma_ring`) has the descriptor's attributes and its slot's block."""

STORES = True
"""Whether `tile.descriptor_store` is claimed: a TMA store where TMA writes exactly the masked
elements (`tma_store.exact`), else the masked store. On since every GPU test and the nvidia
conformance run passed with it on, on the H200 (2026-11-27, seventh session: 507 and 2170
passed); the fifth session's failures (an fp32 block crossing the tensor's last column, an int8
block starting before the tensor) were TMA's own rules, which `tma_store.exact` now keeps to
the masked store. False makes every descriptor store the masked store (docs/tma.md)."""

ALIGN = 1024
"""The buffer's alignment: the 128-byte swizzle repeats every 1024 bytes of the address."""
MAX_BLOCK_BYTES = 64 << 10
"""The largest block read this way (its buffer is the kernel's scratch, 1 KB more)."""


def _block_type(op: Any) -> Any:
    if isinstance(op, AsyncBulkCopyGlobalToLocalOp):
        buffer = op.buffer.type
        return TensorType(buffer.tile_shape, buffer.element_type)
    return op.result.type if isinstance(op, DescriptorLoadOp) else op.value.type


def _element(op: Any) -> str | None:
    scalar = BY_IR_TYPE.get(element_type(_block_type(op)))
    return scalar.signature if scalar is not None else None


def _element_bytes(op: Any) -> int:
    return max(element_type(_block_type(op)).width // 8, 1)  # type: ignore[attr-defined]


def layout(op: Any) -> tuple[tuple[int, ...], int, tuple[int, ...]]:
    """The block, its swizzle (bytes) and its box, outermost first."""
    block = tuple(shape_of(_block_type(op)))
    size = _element_bytes(op)
    swizzle = tensor_map.swizzle_bytes(block[-1] * size)
    return block, swizzle, tensor_map.box_shape(block, size, swizzle)


def claims(arch: str, op: Any) -> bool:
    """Whether the descriptor load `op` is read through TMA on `arch` on a map the launch
    encodes (a descriptor `made` from computed values: `tma_made.claims`)."""
    if "made" in op.attributes:
        return False
    return block_claims(arch, op) and ("in_kernel" not in op.attributes or proven_aligned(op))


def block_claims(arch: str, op: Any) -> bool:
    """Whether TMA copies the block of the descriptor access `op` on `arch`: an element type
    and block it copies, stores where `STORES`."""
    if not isinstance(op, CLAIMED) or "tma" not in ARCHS.check(arch).features:
        return False
    if isinstance(op, DescriptorStoreOp) and not STORES:
        return False
    element = _element(op)
    if element not in tensor_map.DATA_TYPES:
        return False
    block, swizzle, box = layout(op)
    size = _element_bytes(op)
    return (
        1 <= len(block) <= tensor_map.MAX_RANK
        and box[-1] * size % 16 == 0
        and (block == box or math.prod(box) * size % box_alignment(swizzle) == 0)
        and math.prod(block) * size <= MAX_BLOCK_BYTES
        and (
            op.padding.value == "zero"
            or tensor_map.DATA_TYPES[element] in tensor_map.FLOAT_DATA_TYPES
        )
    )


def enclosing_function(op: Any) -> FuncOp | None:
    """The `func.func` around `op`, None where it has none."""
    func = op.parent_op
    while func is not None and not isinstance(func, FuncOp):
        func = func.parent_op
    return func


def proven_aligned(op: Any) -> bool:
    """Whether the specialization proves TMA's alignments for a descriptor made in the kernel
    (`in_kernel`: no host `TensorDescriptor` checked them): its base a parameter known 16-byte
    aligned, each outer stride a parameter whose divisibility (16, or 1) or a constant whose
    value makes it a multiple of 16 bytes below 2**40, each constant size 1 to 2**32. A stride
    or size whose run-time value breaks a rule (not positive) is the launch's error
    (`tma_launch`)."""
    func = enclosing_function(op)
    if func is None:
        return False
    size = _element_bytes(op)

    def divisibility(index: int) -> int:
        found = func.argument_attributes(index).get("tile.divisibility")
        return found.value if isinstance(found, IntegerAttr) else 1

    if divisibility(op.base_param.value) % 16:
        return False
    for stride in op.stride_params.ints()[:-1]:
        known = -stride if stride < 0 else divisibility(stride)
        if known * size % 16 or (stride < 0 and known * size >= tensor_map.MAX_STRIDE):
            return False
    return all(not isinstance(p, int) or p >= 0 or -p <= tensor_map.MAX_GLOBAL_DIM
               for p in parts(op.shape_params))  # fmt: skip


def box_alignment(swizzle: int) -> int:
    """The alignment of a box's shared memory: 128 bytes, and the swizzle's whole pattern (8 rows
    of `swizzle` bytes) where swizzled, whose phase TMA takes from the address: a block of several
    boxes is claimed only where each box starts so aligned in the buffer (a box of fewer rows
    would not; NVIDIA/Fuser#4096, tile-ai/tilelang#2379)."""
    return max(128, 8 * swizzle)


def map_key(op: Any) -> tuple:
    """What one tensor-map parameter stands for: loads with equal keys share it."""
    block, swizzle, _box = layout(op)
    return (
        op.base_param.value, parts(op.shape_params), parts(op.stride_params),
        op.padding.value, _element(op), block, swizzle, "in_kernel" in op.attributes,
    )  # fmt: skip


PRODUCT = "mul"
"""A size made in the kernel as a product (`tilec.frontend.descriptors._size`)."""


def parts(attr: Any) -> tuple:
    """A descriptor op's `shape_params` or `stride_params`, hashable: each a parameter index
    (-c: the constant c), or `(PRODUCT, width, factors)` for a product of such, wrapping at
    `width` bits."""
    return tuple(
        (PRODUCT, e.elements[0].type.width, tuple(f.value for f in e.elements))
        if isinstance(e, ArrayAttr) else e.value
        for e in attr.elements
    )  # fmt: skip


def product(b: ir.IRBuilder, args: Any, part: tuple) -> ir.Value:
    """A `(PRODUCT, width, factors)` part's value (`parts`): its factors (a parameter index, -c
    the constant c) multiplied in `width` bits, as the kernel computed it."""
    _kind, width, factors = part
    kind = ir.IntType(width)
    found = ir.Constant(kind, 1)
    for factor in factors:
        found = b.mul(found, ir.Constant(kind, -factor) if factor < 0 else args[factor])
    return found


def _part(index: Any) -> list:
    """A size's or stride's metadata: `["param", index]`, `["const", c]` for `-c`, or
    `["mul", width, [factors...]]`."""
    if not isinstance(index, int):
        _kind, width, factors = index
        return [PRODUCT, width, [_part(f) for f in factors]]
    return ["param", index] if index >= 0 else ["const", -index]


def added_parameters(arch: str, func: Any) -> list[tuple[Any, ir.Type]]:
    """A tensor map a distinct claimed descriptor, then the global scratch of the maps the
    kernel builds (`tma_made.scratch_key`), if it builds any."""
    from tilec_nvidia import tma_made  # it builds on this module

    keys: list[tuple] = []
    for op in func.walk():
        if claims(arch, op) and map_key(op) not in keys:
            keys.append(map_key(op))
    scratch = tma_made.scratch_key(arch, func)
    return [(key, ir.PointerType()) for key in keys + ([scratch] if scratch else [])]


def added_metadata(keys: list[tuple]) -> dict[str, Any]:
    from tilec_nvidia import tma_made

    maps: list[dict[str, Any]] = []
    metadata: dict[str, Any] = {}
    for key in keys:
        if key[0] == tma_made.SCRATCH:  # the maps built in the kernel
            metadata.update(tma_made.scratch_metadata(key))
            continue
        base, shape, strides, padding, element, block, swizzle, in_kernel = key
        maps.append({
            "element": element, "base": base, "shape": [_part(i) for i in shape],
            "strides": [_part(i) for i in strides], "block": list(block),
            "padding": padding, "swizzle": swizzle, **({"in_kernel": True} if in_kernel else {}),
        })  # fmt: skip
    return {"tensor_maps": maps, **metadata} if maps else metadata


@attrs.frozen
class _Block:
    """A claimed access's block in the scratch buffer: its boxes and their place."""

    arch: str
    argument: ir.Argument
    block: tuple[int, ...]
    swizzle: int
    box: tuple[int, ...]
    size: int
    buffer: ir.Value
    offsets: list[ir.Value]

    @property
    def box_bytes(self) -> int:
        return math.prod(self.box) * self.size

    @property
    def nbytes(self) -> int:
        return math.prod(self.block) * self.size

    def boxes(self, b: ir.IRBuilder) -> list[tuple[ir.Value, list[ir.Value]]]:
        """Each box's place in the buffer and its coordinates in the tensor (i32)."""
        out = []
        for index, origin in enumerate(_box_origins(self.block, self.box)):
            coordinates = [
                b.add(o, I32(at)) if at else o for o, at in zip(self.offsets, origin, strict=True)
            ]
            place = b.gep(self.buffer, [I32(index * self.box_bytes)], source_etype=I8)
            out.append((place, coordinates))
        return out

    def accesses(self, ctx: LoweringContext, tensor_type: Any) -> tuple[int, list[ir.Value]]:
        """The vector width and, per group of that many registers of `tensor_type`'s layout,
        the shared address of its first element (swizzled)."""
        b = ctx.builder
        mapping = LTensor(tensor_type, []).mapping
        vec = vector_width(mapping, self.box[-1], self.size)
        counts = [extent // part for extent, part in zip(self.block, self.box, strict=True)]
        coords = ctx.element_coords(mapping)
        addresses = []
        for start in range(0, len(coords), vec):
            offset = _box_offset(b, coords[start], self.box, counts, self.box_bytes, self.size)
            if self.swizzle:  # a 16-byte chunk moves whole: a vector of up to 16 bytes stays
                chunk_row = b.and_(b.lshr(offset, I32(7)), I32(self.swizzle // 16 - 1))
                offset = b.xor(offset, b.shl(chunk_row, I32(4)))
            addresses.append(b.gep(self.buffer, [offset], source_etype=I8))
        return vec, addresses


def tensor_map_argument(arch: str, ctx: LoweringContext, op: Any) -> ir.Argument:
    """The tensor map's parameter of a claimed access, made a grid constant and prefetched in
    the prologue."""
    key = map_key(op)
    argument = ctx.added_args[key]
    tma.tensor_map_parameter(ctx.fn, list(ctx.fn.args).index(argument))
    ctx._entry(("tma.prefetch", key), lambda p: tma.prefetch(arch, p, argument))
    return argument


def _prepare(arch: str, ctx: LoweringContext, op: Any, argument: Any = None) -> _Block:
    """The tensor map's parameter (or `argument`: the address of a map the kernel builds), the
    1024-aligned scratch buffer and the offsets of a claimed access."""
    b = ctx.builder
    if argument is None:
        argument = tensor_map_argument(arch, ctx, op)
    block, swizzle, box = layout(op)
    size = _element_bytes(op)
    start = ctx.shared_scratch(math.prod(block) * size + ALIGN)
    address = b.ptrtoint(start, I64)
    buffer = b.inttoptr(b.and_(b.add(address, I64(ALIGN - 1)), I64(-ALIGN)), start.type)
    offsets = [b.trunc(o, I32) if o.type.width > 32 else o for o in map(ctx.get, op.offsets)]
    return _Block(arch, argument, block, swizzle, box, size, buffer, offsets)


def descriptor_load(arch: str, ctx: LoweringContext, op: DescriptorLoadOp) -> bool:
    """A claimed load: through TMA where its innermost offset is a multiple of 16 bytes (TMA's
    rule: known from the offset's divisibility, else one uniform test, `innermost_aligned`),
    else the masked load it stands for."""
    if not claims(arch, op):  # perhaps on a map the kernel builds
        from tilec_nvidia import tma_made

        return tma_made.descriptor_load(arch, ctx, op)
    b = ctx.builder
    place = _prepare(arch, ctx, op)
    info = ctx.axis_info_of(op.offsets[-1])
    if info is not None and info.divisibility[0] * place.size % 16 == 0:  # known aligned
        ctx.set(op.result, LTensor(op.result.type, _load_boxes(arch, ctx, op, place)))
        return True
    load_where(arch, ctx, op, place, innermost_aligned(b, place.offsets[-1], place.size))
    return True


def load_where(arch: str, ctx: LoweringContext, op: DescriptorLoadOp, place: _Block,
               condition: ir.Value, before: Any = None) -> None:  # fmt: skip
    """The load through TMA where `condition` (i1, the same in every thread) holds, after
    `before(ctx)` (a made descriptor's map), else the masked load it stands for."""
    b = ctx.builder
    function = b.function
    tma_block = function.append_basic_block("tma.load")
    masked_block = function.append_basic_block("tma.load.masked")
    done = function.append_basic_block("tma.load.done")
    b.cbranch(condition, tma_block, masked_block)
    b.position_at_end(tma_block)
    if before is not None:
        before(ctx)
    through_tma = _load_boxes(arch, ctx, op, place)
    tma_end = b.block
    b.branch(done)
    b.position_at_end(masked_block)
    masked_load(ctx, op)
    masked = ctx.get(op.result).values
    masked_end = b.block
    b.branch(done)
    b.position_at_end(done)
    values = []
    for loaded, fallback in zip(through_tma, masked, strict=True):
        phi = b.phi(loaded.type)
        phi.add_incoming(loaded, tma_end)
        phi.add_incoming(fallback, masked_end)
        values.append(phi)
    ctx.set(op.result, LTensor(op.result.type, values))


def innermost_aligned(b: ir.IRBuilder, inner: ir.Value, size: int) -> ir.Value:
    """i1: whether the innermost coordinate `inner` (i32) of `size`-byte elements is a multiple
    of 16 bytes, as a TMA access's must be (else an illegal instruction: triton#7385, Triton's
    Gluon TMA tutorial)."""
    per_chunk = max(16 // size, 1)
    if per_chunk == 1:
        return ir.Constant(ir.IntType(1), 1)
    return b.icmp_unsigned("==", b.and_(inner, I32(per_chunk - 1)), I32(0))


def _load_boxes(arch: str, ctx: LoweringContext, op: DescriptorLoadOp, place: _Block) -> list:
    """The block through TMA: every box copied into the scratch buffer and waited for, then
    each thread's registers read from it."""
    b, target = ctx.builder, ctx.target
    issuer, barrier, phase = _kernel_state(arch, ctx)
    tma.fence_async_shared(arch, b)  # earlier generic accesses to the scratch, then
    target.barrier(b)  # every thread done with it
    tma.expect_bytes(arch, b, barrier, place.nbytes, issuer)
    for destination, coordinates in place.boxes(b):
        tma.copy_box(arch, b, destination, barrier, place.argument, coordinates, issuer)
    parity = b.load(phase, typ=I32)
    tma.wait(arch, b, barrier, parity)
    b.store(b.xor(parity, I32(1)), phase)

    result_type = op.result.type
    mem = memory_type(element_type(result_type), target)
    vec, addresses = place.accesses(ctx, result_type)
    access = ir.VectorType(mem, vec) if vec > 1 else mem
    values = []
    for address in addresses:
        loaded = b.load(address, typ=access, align=vec * place.size)
        values += [b.extract_element(loaded, I32(k)) for k in range(vec)] if vec > 1 else [loaded]
    target.barrier(b)  # the scratch is free again
    return values


def descriptor_store(arch: str, ctx: LoweringContext, op: DescriptorStoreOp) -> bool:
    """A claimed store: `tilec_nvidia.tma_store` (TMA where it writes exactly what the masked
    store would, else that masked store)."""
    from tilec_nvidia import tma_store  # it builds on this module

    return tma_store.descriptor_store(arch, ctx, op)


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


def _issuer(ctx: LoweringContext) -> ir.Value:
    """Whether this thread is thread 0, which issues the kernel's TMA copies."""
    return ctx._entry("tma.issuer", lambda p: p.icmp_unsigned("==", ctx.thread_id(), I32(0)))


def _kernel_state(arch: str, ctx: LoweringContext) -> tuple[ir.Value, ir.Value, ir.Value]:
    """The kernel's issuing-thread flag, mbarrier (initialized once, in the prologue; in the
    dynamic shared memory above every other use, so counted in `shared_bytes`:
    `LoweringContext.shared_tail`) and phase bit (an i32 slot that LLVM keeps in a register)."""
    issuer = _issuer(ctx)

    def make(p: ir.IRBuilder) -> Any:
        barrier = ctx.shared_tail("tma.barrier", 8, 8)
        tma.init(arch, p, barrier, issuer)
        phase = p.alloca(I32, name="tma.phase")
        p.store(I32(0), phase)
        return (issuer, barrier, phase)

    return ctx._entry("tma.state", make)
