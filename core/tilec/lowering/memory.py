"""`tile.load`, `tile.store` and pointer ops -> LLVM IR, with vector accesses.

A thread's registers come in groups of `ThreadMapping.contiguity` consecutive elements along the
layout's fastest dimension. A group is read or written with one vector access of `vec` elements
when the axis-info analysis says the pointers are contiguous and 16-byte-style aligned that far
(`vec = min(mapping contiguity, pointer contiguity, divisibility / element bytes,
16 bytes / element bytes, mask constancy)`), so a kernel whose pointers are divisible by 16 gets
`ld.global.v4.f32`. A mask constant across the vector costs one predicated access per vector
where the target has them (`TargetInfo.predicated_load`/`predicated_store`: NVIDIA's
`@p ld.global`, as Triton emits; far fewer basic blocks for LLVM), one branch elsewhere;
masked-off loads give `other` (zero without it). Stores are done by owners only where a layout replicates
elements (`LoweringContext.owner_masks`), and by thread 0 alone for a scalar store. An op with
a cache modifier or eviction policy (`tilec.lowering.memory_hints`) makes each access through the
target's `global_load`/`global_store`, which emit them.
"""

from __future__ import annotations

from llvmlite import ir

from tilec.dialects.tile import (
    AddPtrOp,
    DescriptorLoadOp,
    DescriptorStoreOp,
    IntToPtrOp,
    LoadOp,
    PtrToIntOp,
    StoreOp,
)
from tilec.ir.core import Value
from tilec.ir.traits import pointer_pointee
from tilec.ir.types import IntegerType, TensorType, element_type
from tilec.lowering.context import (
    I8,
    I32,
    I64,
    LoweringContext,
    LTensor,
    lowers,
    memory_type,
)
from tilec.lowering.elementwise import map_registers
from tilec.lowering.memory_hints import MemoryHints, hints_of

MAX_VECTOR_BYTES = 16


@lowers(AddPtrOp)
def _addptr(ctx: LoweringContext, op: AddPtrOp) -> None:
    b = ctx.builder
    pointee = memory_type(pointer_pointee(op.ptr.type), ctx.target)
    offset_type = element_type(op.offset.type)
    unsigned = isinstance(offset_type, IntegerType) and offset_type.unsigned

    def emit(ptr: ir.Value, offset: ir.Value) -> ir.Value:
        if unsigned and offset.type.width < 64:
            offset = b.zext(offset, I64)
        return b.gep(ptr, [offset], source_etype=pointee)

    map_registers(ctx, op, emit)


@lowers(IntToPtrOp)
def _int_to_ptr(ctx: LoweringContext, op: IntToPtrOp) -> None:
    ty = ctx.type(op.result.type)
    map_registers(ctx, op, lambda x: ctx.builder.inttoptr(x, ty))


@lowers(PtrToIntOp)
def _ptr_to_int(ctx: LoweringContext, op: PtrToIntOp) -> None:
    ty = ctx.type(op.result.type)
    map_registers(ctx, op, lambda x: ctx.builder.ptrtoint(x, ty))


# Vector widths -----------------------------------------------------------------------------------


def vector_width(ctx: LoweringContext, ptr: Value, mask: Value | None, elem_bytes: int) -> int:
    """How many consecutive registers one access covers (see the module doc)."""
    if not isinstance(ptr.type, TensorType):
        return 1
    mapping = LTensor(ptr.type, []).mapping
    dim = mapping.contiguous_dim
    info = ctx.axis_info_of(ptr)
    if dim is None or info is None:
        return 1
    vec = min(
        mapping.contiguity,
        info.contiguity[dim],
        max(1, info.divisibility[dim] // elem_bytes),
        max(1, MAX_VECTOR_BYTES // elem_bytes),
    )
    if mask is not None:
        mask_info = ctx.axis_info_of(mask)
        vec = min(vec, mask_info.constancy[dim] if mask_info is not None else 1)
    return max(1, _power_of_two_floor(vec))


def _power_of_two_floor(n: int) -> int:
    return 1 << (n.bit_length() - 1) if n > 0 else 1


# Loads and stores --------------------------------------------------------------------------------


def _registers(ctx: LoweringContext, value: Value | None) -> list[ir.Value] | None:
    if value is None:
        return None
    lowered = ctx.get(value)
    return lowered.values if isinstance(lowered, LTensor) else [lowered]


PLAIN_LOAD, PLAIN_STORE = MemoryHints(), MemoryHints(store=True)
"""The hints of an access without any, for the targets' predicated loads and stores."""


def _varies(condition: ir.Value | None) -> bool:
    """Whether `condition` is a mask known only at run time (a constant needs no predicate)."""
    return condition is not None and not isinstance(condition, ir.Constant)


def masked_global_load(
    ctx: LoweringContext,
    address: ir.Value,
    typ: ir.Type,
    align: int,
    hints: MemoryHints | None,
    mask: ir.Value | None,
    other: ir.Value,
) -> ir.Value:
    """`typ` (a scalar or a vector, `align`-aligned) loaded from global `address` where the i1
    `mask` holds (None: always), else `other`: one predicated load where the target has them,
    else a branch around the load."""
    b = ctx.builder
    if _varies(mask):
        loaded = ctx.target.predicated_load(b, address, typ, hints or PLAIN_LOAD, mask, other)
        if loaded is not None:
            return loaded

    def load() -> ir.Value:
        if hints is not None:
            return ctx.target.global_load(b, address, typ, align, hints)
        return b.load(address, typ=typ, align=align)

    return _masked(ctx, mask, load, other)


def _masked(
    ctx: LoweringContext, condition: ir.Value | None, body, fallback: ir.Value | None = None
) -> ir.Value | None:
    """Run `body()` (which emits code and returns a value or None) where `condition` holds; the
    result is `body()`'s value there and `fallback` elsewhere."""
    b = ctx.builder
    if condition is None:
        return body()
    if isinstance(condition, ir.Constant) and condition.constant == 1:
        return body()
    start = b.block
    taken = b.append_basic_block("masked")
    done = b.append_basic_block("masked.end")
    b.cbranch(condition, taken, done)
    b.position_at_end(taken)
    value = body()
    end = b.block
    b.branch(done)
    b.position_at_end(done)
    if value is None:
        return None
    phi = b.phi(value.type)
    phi.add_incoming(value, end)
    phi.add_incoming(fallback, start)
    return phi


@lowers(LoadOp, DescriptorLoadOp)
def _load(ctx: LoweringContext, op: LoadOp | DescriptorLoadOp) -> None:
    """A load, and a descriptor load the target does not lower itself (as the load of its
    pointers, mask and padding)."""
    if isinstance(op, DescriptorLoadOp) and ctx.target.descriptor_load(ctx, op):
        return
    masked_load(ctx, op)


def masked_load(ctx: LoweringContext, op: LoadOp | DescriptorLoadOp) -> None:
    """Every thread loads its registers of `op`'s result from its pointers where its mask
    holds, `other` elsewhere (what a target's `descriptor_load` falls back to where its own
    load cannot take the block: `tilec_nvidia.tma_lowering`)."""
    b = ctx.builder
    ptr, mask, other = op.ptr, op.mask, op.other
    result_type = op.result.type
    scalar = element_type(result_type)
    mem = memory_type(scalar, ctx.target)
    is_bool = isinstance(scalar, IntegerType) and scalar.width == 1
    elem_bytes = byte_size(mem)
    vec = vector_width(ctx, ptr, mask, elem_bytes)
    ptrs = _registers(ctx, ptr)
    masks = _registers(ctx, mask)
    others = _registers(ctx, other)
    values: list[ir.Value] = []
    access_type = ir.VectorType(mem, vec) if vec > 1 else mem
    hints = _prepared_hints(ctx, op, store=False)
    for start in range(0, len(ptrs), vec):
        fallback = ir.Constant(access_type, None)
        if others is not None:
            fallback = pack_access(b, others[start : start + vec], access_type, is_bool)

        mask = None if masks is None else masks[start]
        loaded = masked_global_load(
            ctx, ptrs[start], access_type, vec * elem_bytes, hints, mask, fallback
        )
        for element in unpack_access(b, loaded, vec):
            values.append(
                b.icmp_unsigned("!=", element, ir.Constant(I8, 0)) if is_bool else element
            )
    if isinstance(result_type, TensorType):
        ctx.set(op.result, LTensor(result_type, values))
    else:
        ctx.set(op.result, values[0])


@lowers(StoreOp, DescriptorStoreOp)
def _store(ctx: LoweringContext, op: StoreOp | DescriptorStoreOp) -> None:
    """A store, and a descriptor store the target does not lower itself (as the store of its
    pointers, values and mask)."""
    if isinstance(op, DescriptorStoreOp) and ctx.target.descriptor_store(ctx, op):
        return
    masked_store(ctx, op)


def masked_store(ctx: LoweringContext, op: StoreOp | DescriptorStoreOp) -> None:
    """Every thread stores its registers of `op`'s value at its pointers where its mask holds
    (what a target's `descriptor_store` falls back to where its own store would not honour
    the mask: `tilec_nvidia.tma_store`)."""
    b = ctx.builder
    ptr, value, mask = op.ptr, op.value, op.mask
    scalar = element_type(value.type)
    mem = memory_type(scalar, ctx.target)
    is_bool = isinstance(scalar, IntegerType) and scalar.width == 1
    elem_bytes = byte_size(mem)
    vec = vector_width(ctx, ptr, mask, elem_bytes)
    ptrs = _registers(ctx, ptr)
    values = _registers(ctx, value)
    masks = _registers(ctx, mask)
    owners = _owners(ctx, ptr)
    access_type = ir.VectorType(mem, vec) if vec > 1 else mem
    hints = _prepared_hints(ctx, op, store=True)
    for start in range(0, len(ptrs), vec):
        condition = None if masks is None else masks[start]
        if owners is not None:
            owner = owners[start]
            condition = owner if condition is None else b.and_(condition, owner)
        vector = pack_access(b, values[start : start + vec], access_type, is_bool)

        def store(address: ir.Value = ptrs[start], data: ir.Value = vector) -> None:
            if hints is not None:
                ctx.target.global_store(b, data, address, vec * elem_bytes, hints)
                return
            b.store(data, address, align=vec * elem_bytes)

        if _varies(condition) and ctx.target.predicated_store(
            b, vector, ptrs[start], hints or PLAIN_STORE, condition
        ):
            continue
        _masked(ctx, condition, store)


def _prepared_hints(ctx: LoweringContext, op: LoadOp | StoreOp, store: bool) -> MemoryHints | None:
    """The op's cache modifier and eviction policy, prepared by the target; None without."""
    hints = hints_of(op, store)
    return None if hints is None else ctx.target.prepare_memory_hints(ctx.builder, hints)


def pack_access(
    b: ir.IRBuilder, elements: list[ir.Value], access_type: ir.Type, is_bool: bool
) -> ir.Value:
    """The registers `elements` as one access of `access_type` (a vector, or the scalar)."""
    if is_bool:
        elements = [b.zext(e, I8) for e in elements]
    if not isinstance(access_type, ir.VectorType):
        return elements[0]
    vector = ir.Constant(access_type, None)
    for i, element in enumerate(elements):
        vector = b.insert_element(vector, element, ir.Constant(I32, i))
    return vector


def unpack_access(b: ir.IRBuilder, value: ir.Value, vec: int) -> list[ir.Value]:
    """The `vec` registers of one access (`pack_access`'s inverse, without the i1 part)."""
    if vec == 1:
        return [value]
    return [b.extract_element(value, ir.Constant(I32, i)) for i in range(vec)]


def _owners(ctx: LoweringContext, ptr: Value) -> list[ir.Value] | None:
    if isinstance(ptr.type, TensorType):
        return ctx.owner_masks(LTensor(ptr.type, []).mapping)
    return [ctx.builder.icmp_unsigned("==", ctx.thread_id(), ir.Constant(I32, 0))]


def byte_size(t: ir.Type) -> int:
    """The size in bytes of an LLVM scalar type as memory holds it."""
    if isinstance(t, ir.IntType):
        return max(1, t.width // 8)
    if isinstance(t, ir.PointerType):
        return 8
    return {"half": 2, "bfloat": 2, "float": 4, "double": 8}[str(t)]


__all__ = [
    "byte_size",
    "masked_global_load",
    "masked_load",
    "masked_store",
    "pack_access",
    "unpack_access",
    "vector_width",
]
