"""Descriptors made in the kernel from values it computes, through TMA (docs/tma.md, step 4).

A `tl.make_tensor_descriptor` whose base, sizes or strides the kernel computes (a base offset by
the program id, a size minus a parameter, a descriptor made in a loop) reaches the backend as a
`tile.descriptor_load` / `tile.descriptor_store` marked `made`, its parts operands
(`tilec.frontend.descriptors._made`); so does one made of parameters and constants whose
alignments the specialization does not prove (`claims`). Where the block is one TMA copies
(`tma_lowering.block_claims`) on an arch with `tensormap.replace` (sm_90a), the kernel builds
the descriptor's 128-byte `CUtensorMap`, as Triton 3.6 does (TMAToLLVM.cpp's tensormap
create): once where the descriptor is made when its parts are computed in the kernel's
top-level code (its accesses, in loops too, share the map: `map_key`), in the prologue for
parameters and constants, else at each access (a descriptor made in a loop, each iteration):

    bar.sync                          the shared scratch's earlier readers are done
    st.shared.b32 0                   warp 0 zeroes the 128-byte template, bar.warp.sync
    tensormap.replace.tile.<field>    thread 0, one a field (`fields`)
    tensormap.cp_fenceproxy ...       warp 0 copies it into the program's global slot
    fence.proxy.tensormap::generic.acquire.gpu   warp 0, then bar.sync

then reads or writes the block exactly as a host descriptor's access does
(`tma_lowering.load_where`, `tma_store.store_where`) on that map. The slots are global scratch:
`SCRATCH_BYTES` a map and program, one allocation a launch of `grid` times the kernel's
`global_scratch_size` (`metadata`, Triton's names) from `tilec.set_allocator`'s allocator
(`tma_launch`), passed as the last parameter; program (x, y, z) uses the slots at its linear
index `x + nx * (y + ny * z)`.

TMA's rules that a host `TensorDescriptor` checks at construction are tested at run time,
once for the block (every value is the program's own, the same in every thread: the branch is
uniform), and where one fails the access is the masked one it stands for, which honours every
case: the base 16-byte aligned, each size 1 to 2**31 - 1, each outer stride positive, of a
multiple of 16 bytes below 2**40, each offset an i32, and for a load the innermost offset a
multiple of 16 bytes (`usable`; stores add `tma_store.exact`). So results never differ from
the masked path's. A map's fields are written from the same values the masked access reads
(`fields`, modelled in test_tma_computed.py against `tensor_map.request`); L2 promotion stays
the template's none, as Triton's.
"""

from __future__ import annotations

import functools
import math
import re
import subprocess
from collections.abc import Sequence
from typing import Any

from llvmlite import ir

from tilec.dialects.tile import DescriptorLoadOp, DescriptorStoreOp
from tilec.ir.core import BlockArgument
from tilec.lowering.context import I8, I32, I64, LoweringContext
from tilec_nvidia import tensor_map, tma_lowering
from tilec_nvidia.cache_hints import require_ptx_version
from tilec_nvidia.capabilities import has, require

SCRATCH = "tma.global_scratch"
"""The first item of the global scratch parameter's key (`tma_lowering.added_parameters`)."""
SCRATCH_BYTES = tensor_map.MAP_BYTES
"""A map's slot in global scratch (128 bytes, 128-byte aligned: the allocation is)."""
SCRATCH_ALIGN = 128
TENSORMAP_PTX_VERSION = 83
"""tensormap.replace, tensormap.cp_fenceproxy, fence.proxy.tensormap: PTX ISA 8.3."""
STRIDE_WORKAROUND_RELEASE = (12, 6)
"""Up to this CUDA release ptxas takes `global_stride` in units of 16 bytes (Triton's
TMAToLLVM.cpp: "Workaround for a ptxas bug", the stride shifted right by 4 where its PTX
version, that of its ptxas, is 8.5 or older: CUDA 12.6 and older). Later ones take bytes and
shift themselves, whatever the PTX's `.version` (ptxas 13.0 assembles an immediate 0x123450 to
0x12345, the same cubin for `.version` 8.3 to 8.7: test_tma_computed)."""

INSTRUCTIONS = {
    "replace": "tensormap.replace.tile.{field}.shared::cta.b1024.{type}",
    "copy": "tensormap.cp_fenceproxy.global.shared::cta.tensormap::generic.release.gpu"
    ".sync.aligned",
    "acquire": "fence.proxy.tensormap::generic.acquire.gpu",
}
"""The PTX of building a map; each needs the `tensormap` feature and PTX 8.3."""

PTX_ELEMTYPES = {0: 0, 1: 1, 2: 2, 3: 3, 4: 4, 5: 5, 6: 6, 7: 7, 8: 9, 9: 10}
"""`tensormap.replace`'s `elemtype` by `CUtensorMapDataType` (`tensor_map.DATA_TYPES`): the PTX
ISA's encoding has `.f32.ftz` at 8, so f64 is 9 and bf16 10 (Triton 3.6 writes 0xa for bf16)."""

MAX_SIZE = 2**31 - 1
"""The largest size taken (`global_dim` is a b32 field; a larger one is the masked access)."""


def claims(arch: str, op: Any) -> bool:
    """Whether the descriptor access `op` may go through a map the kernel builds: one `made`
    of computed values, or one made of parameters and constants (`in_kernel`) whose
    alignments the specialization does not prove (`tma_lowering.proven_aligned`: a row stride
    of 72 halves, not known divisible by 16, is 144 bytes), tested at run time instead."""
    if not isinstance(op, DescriptorLoadOp | DescriptorStoreOp) or not has(arch, "tensormap"):
        return False
    if "made" not in op.attributes and "in_kernel" not in op.attributes:
        return False  # a host descriptor: its map is the launch's
    if not tma_lowering.block_claims(arch, op):
        return False
    return "made" in op.attributes or (not tma_lowering.proven_aligned(op) and _possible(op))


def _possible(op: Any) -> bool:
    """Whether the constants of a descriptor of parameters and constants keep TMA's rules (a
    constant stride of 20 halves never does: the masked access, no map)."""
    size = tma_lowering._element_bytes(op)
    strides = tma_lowering.parts(op.stride_params)[:-1]
    sizes = tma_lowering.parts(op.shape_params)
    return all(
        -p * size % 16 == 0 and -p * size < tensor_map.MAX_STRIDE
        for p in strides if isinstance(p, int) and p < 0
    ) and all(-p <= MAX_SIZE for p in sizes if isinstance(p, int) and p < 0)  # fmt: skip


def map_key(op: Any) -> tuple:
    """Which map the made access `op` uses. Accesses of one descriptor (the same part values,
    element, block, swizzle and padding) whose parts are all defined in the kernel's top-level
    block, not all parameters, share one, built once after the last of them is computed, where
    Triton builds a made descriptor's map (`tl.make_tensor_descriptor`): `("made", parts,
    ...)`. Accesses of one descriptor of parameters and constants share one built in the
    kernel's prologue (`("params", ...)`; in a warp-specialized kernel, whose prologue all
    warps run, at each access). Any other access builds its own where it stands (a
    descriptor made in a loop, each iteration): `("access", op)`."""
    block, swizzle, _box = tma_lowering.layout(op)
    what = (tma_lowering._element(op), block, swizzle, op.padding.value)
    if "made" not in op.attributes:  # parameters and constants: built once, in the prologue
        return ("params", _parameters_key(op), *what)
    func = tma_lowering.enclosing_function(op)
    parts = tuple(op.made_parts)
    top = func is not None and all(v.parent_block is func.entry_block for v in parts)
    if top and not all(isinstance(v, BlockArgument) for v in parts):
        return ("made", parts, *what)
    return ("access", op)


def slots(arch: str, func: Any) -> list[tuple]:
    """The maps `func` builds (`map_key`s, in order): map i has slot i."""
    keys: list[tuple] = []
    for op in func.walk():
        if claims(arch, op) and map_key(op) not in keys:
            keys.append(map_key(op))
    return keys


def scratch_key(arch: str, func: Any) -> tuple | None:
    """The global scratch parameter's key, `(SCRATCH, bytes a program)`, or None."""
    count = len(slots(arch, func))
    return (SCRATCH, count * SCRATCH_BYTES) if count else None


def scratch_metadata(key: tuple) -> dict[str, int]:
    """The launch metadata of the global scratch (Triton's names)."""
    return {"global_scratch_size": key[1], "global_scratch_align": SCRATCH_ALIGN}


# The map's fields --------------------------------------------------------------------------


def fields(element: str, block: Sequence[int], swizzle: int, padding: str) -> list[tuple]:
    """The `tensormap.replace` sequence of a map (Triton's order): `(field, ordinal or None,
    source)`, the source `("const", c)`, `("base",)`, `("size", i)` or `("stride", i)` (the
    descriptor's size or outer stride i, outermost first); ordinals count dimensions innermost
    first, as the map's fields (and `tensor_map.request`) do."""
    rank = len(block)
    size = tensor_map._element_bytes(element)
    box = tensor_map.box_shape(block, size, swizzle)
    out: list[tuple] = [("global_address", None, ("base",)), ("rank", None, ("const", rank - 1))]
    out += [("box_dim", d, ("const", box[rank - 1 - d])) for d in range(rank)]
    out += [("global_dim", d, ("size", rank - 1 - d)) for d in range(rank)]
    out += [("global_stride", d, ("stride", rank - 2 - d)) for d in range(rank - 1)]
    out += [("element_stride", d, ("const", 1)) for d in range(rank)]
    out += [
        ("elemtype", None, ("const", PTX_ELEMTYPES[tensor_map.DATA_TYPES[element]])),
        ("interleave_layout", None, ("const", tensor_map.INTERLEAVE_NONE)),
        ("swizzle_mode", None, ("const", tensor_map.SWIZZLES[swizzle])),
        ("fill_mode", None, ("const", tensor_map.OOB_FILLS[padding])),
    ]
    return out


def stride_shift() -> int:
    """How far `global_stride`'s bytes are shifted right: 4 for the ptxas that assembles the
    kernel where it is CUDA 12.6 or older (`STRIDE_WORKAROUND_RELEASE`), else 0 (also without
    a ptxas, where the driver compiles the PTX: a driver of CUDA 12.7 or later assumed)."""
    release = ptxas_release()
    return 4 if release is not None and release <= STRIDE_WORKAROUND_RELEASE else 0


@functools.cache
def ptxas_release() -> tuple[int, int] | None:
    """The CUDA release of the ptxas that assembles kernels (`codegen.find_ptxas`), None
    without one or where `--version` does not say."""
    from tilec_nvidia import codegen

    codegen._wait_for_lookup()
    ptxas = codegen.find_ptxas()
    if ptxas is None:
        return None
    try:
        out = subprocess.run([ptxas, "--version"], capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.SubprocessError):
        return None
    found = re.search(r"release (\d+)\.(\d+)", out.stdout)
    return (int(found.group(1)), int(found.group(2))) if found else None


# Run-time rules ----------------------------------------------------------------------------


def usable(b: ir.IRBuilder, base: ir.Value, sizes: Sequence[ir.Value],
           strides: Sequence[ir.Value], offsets: Sequence[ir.Value],
           size: int) -> ir.Value:  # fmt: skip
    """i1: whether TMA takes the descriptor of `base`, `sizes` and outer `strides` (i64,
    elements) of `size`-byte elements at block `offsets` (i64) (module doc)."""
    ok = b.icmp_unsigned("==", b.and_(b.ptrtoint(base, I64), I64(15)), I64(0))

    def within(value: ir.Value, low: int, high: int) -> None:
        nonlocal ok
        ok = b.and_(ok, b.icmp_signed(">=", value, I64(low)))
        ok = b.and_(ok, b.icmp_signed("<=", value, I64(high)))

    for extent in sizes:
        within(extent, 1, MAX_SIZE)
    chunk = 16 // math.gcd(size, 16)  # elements a stride is a multiple of
    for stride in strides:
        within(stride, 1, (tensor_map.MAX_STRIDE - 1) // size)
        if chunk > 1:
            ok = b.and_(ok, b.icmp_unsigned("==", b.and_(stride, I64(chunk - 1)), I64(0)))
    for offset in offsets:
        within(offset, -(2**31), 2**31 - 1)
    return ok


# The map's construction --------------------------------------------------------------------


def _check(arch: str, builder: ir.IRBuilder, step: str) -> str:
    require(arch, "tensormap", INSTRUCTIONS[step].format(field="<field>", type="b32"))
    require_ptx_version(builder.module, TENSORMAP_PTX_VERSION)
    return INSTRUCTIONS[step]


def _asm(b: ir.IRBuilder, text: str, constraints: str, operands: Sequence[ir.Value]) -> None:
    fn_type = ir.FunctionType(ir.VoidType(), [o.type for o in operands])
    b.call(ir.InlineAsm(fn_type, text, constraints, side_effect=True), operands)


def _slot(arch: str, ctx: LoweringContext, op: Any, b: ir.IRBuilder) -> ir.Value:
    """The address of `op`'s map slot in this program's part of the global scratch."""
    func = tma_lowering.enclosing_function(op)
    index = slots(arch, func).index(map_key(op))
    key = next(k for k in ctx.added_args if isinstance(k, tuple) and k and k[0] == SCRATCH)
    scratch = ctx.added_args[key]

    def program_base(p: ir.IRBuilder) -> ir.Value:
        target = ctx.target
        x, y, z = (p.zext(target.block_id(p, axis), I64) for axis in range(3))
        nx, ny = (p.zext(target.num_blocks(p, axis), I64) for axis in range(2))
        linear = p.add(x, p.mul(nx, p.add(y, p.mul(ny, z))))
        return p.gep(scratch, [p.mul(linear, I64(key[1]))], source_etype=I8)

    base = ctx._entry(("tma.made.program", key), program_base)
    return b.gep(base, [I64(index * SCRATCH_BYTES)], source_etype=I8)


def build_map(arch: str, ctx: LoweringContext, op: Any, smem: ir.Value, slot: ir.Value,
              base: ir.Value, sizes: Sequence[ir.Value], strides: Sequence[ir.Value],
              b: ir.IRBuilder | None = None, valid: ir.Value | None = None) -> None:  # fmt: skip
    """Write the map of `op`'s descriptor into `slot` (global), built in `smem` (shared,
    128-byte aligned, 128 bytes free), visible to every thread's TMA accesses (module doc);
    at `b` (the context's builder by default), the fields written only where `valid`."""
    b = b if b is not None else ctx.builder
    target = ctx.target
    replace = _check(arch, b, "replace")
    copy, acquire = _check(arch, b, "copy"), _check(arch, b, "acquire")
    issuer = tma_lowering._issuer(ctx)
    if valid is not None:
        issuer = b.and_(issuer, valid)
    tid = ctx.thread_id()
    first_warp = ctx._entry("tma.made.warp0", lambda p: p.icmp_unsigned("<", tid, I32(32)))
    target.barrier(b)  # the scratch's earlier readers are done with it
    word = b.gep(smem, [b.mul(b.and_(tid, I32(31)), I32(4))], source_etype=I8)
    _asm(b, "@$1 st.shared.b32 [$0], 0;", "l,b", [word, first_warp])
    _asm(b, "bar.warp.sync -1;", "", [])
    size = tma_lowering._element_bytes(op)
    shift = stride_shift()
    block, swizzle, _box = tma_lowering.layout(op)
    element = tma_lowering._element(op)
    for field, ordinal, source in fields(element, block, swizzle, op.padding.value):
        at = "" if ordinal is None else f"{ordinal}, "
        kind = source[0]
        if kind == "const":
            text = replace.format(field=field, type="b32")
            _asm(b, f"@$1 {text} [$0], {at}{source[1]};", "l,b", [smem, issuer])
            continue
        if kind == "base":
            value, width = base, 64
        elif kind == "size":
            value, width = b.trunc(sizes[source[1]], I32), 32
        else:
            value = b.mul(strides[source[1]], I64(size))
            value, width = (b.ashr(value, I64(shift)) if shift else value), 64
        text = replace.format(field=field, type=f"b{width}")
        constraint = "l" if width == 64 else "r"
        _asm(b, f"@$2 {text} [$0], {at}$1;", f"l,{constraint},b", [smem, value, issuer])
    _asm(b, f"@$2 {copy} [$0], [$1], {SCRATCH_BYTES};", "l,l,b", [slot, smem, first_warp])
    _asm(b, f"@$1 {acquire} [$0], {SCRATCH_BYTES};", "l,b", [slot, first_warp])
    target.barrier(b)  # the map is in place for every thread


class _Access:
    """A claimed made access: its block in the scratch buffer (room for the map's 128 bytes
    too) on the map in its slot (built already where the map is shared: `_shared_map`), the
    descriptor's values, `usable` of them, and `build`, which writes an access's own map."""

    def __init__(self, arch: str, ctx: LoweringContext, op: Any):
        b = ctx.builder
        block, _swizzle, _box = tma_lowering.layout(op)
        nbytes = math.prod(block) * tma_lowering._element_bytes(op)
        ctx.shared_scratch(max(nbytes, SCRATCH_BYTES) + tma_lowering.ALIGN)
        self.base, self.sizes, self.strides = _parts(ctx, op)
        self.arch, self.op = arch, op
        shared = _shared_map(arch, ctx, op, self.base, self.sizes, self.strides)
        self.built = shared is not None
        self.slot = shared if shared is not None else _slot(arch, ctx, op, b)
        self.place = tma_lowering._prepare(arch, ctx, op, argument=self.slot)
        offsets = [ctx.get(v) for v in op.offsets]
        size = self.place.size
        self.usable = usable(b, self.base, self.sizes, self.strides, offsets, size)

    def build(self, ctx: LoweringContext) -> None:
        if not self.built:
            build_map(self.arch, ctx, self.op, self.place.buffer, self.slot, self.base,
                      self.sizes, self.strides)  # fmt: skip


def _shared_map(arch: str, ctx: LoweringContext, op: Any, base: ir.Value,
                sizes: Sequence[ir.Value], strides: Sequence[ir.Value]) -> ir.Value | None:  # fmt: skip
    """The slot of `op`'s map where accesses share it (`map_key`), built the first time: right
    after the last of its parts' instructions in the kernel's top-level code (which every
    later access follows), in a shared buffer of its own above every other (the scratch
    buffer there may be another op's: `_map_buffer`), its fields written where the parts are `usable`; None where the map is
    the access's own, or the place cannot be had (the access then builds it)."""
    key = map_key(op)
    if key[0] == "params":
        if ctx.target.barrier_threads is not None:  # the producer warps run the prologue too
            return None

        def prologue(p: ir.IRBuilder) -> ir.Value:
            slot = _slot(arch, ctx, op, p)
            valid = usable(p, base, sizes, strides, [], tma_lowering._element_bytes(op))
            build_map(arch, ctx, op, _map_buffer(ctx), slot, base, sizes, strides, p, valid)
            return slot

        return ctx._entry(("tma.made.map", key), prologue)
    if key[0] != "made":
        return None
    maps = ctx.__dict__.setdefault("tma_made_maps", {})
    if key in maps:
        return maps[key]
    maps[key] = None
    after = _last_part(ctx, op)
    main = ctx.builder
    if after is None or main._anchor != len(main.block.instructions):
        return None
    b = ir.IRBuilder(after.parent)
    b.position_after(after)
    slot = _slot(arch, ctx, op, b)
    valid = usable(b, base, sizes, strides, [], tma_lowering._element_bytes(op))
    build_map(arch, ctx, op, _map_buffer(ctx), slot, base, sizes, strides, b, valid)
    if main.block is b.block:  # instructions went in before the main builder's place
        main.position_at_end(main.block)
    maps[key] = slot
    return slot


def _parameters_key(op: Any) -> tuple:
    return (op.base_param.value, tma_lowering.parts(op.shape_params),
            tma_lowering.parts(op.stride_params))  # fmt: skip


def _parts(ctx: LoweringContext, op: Any) -> tuple[ir.Value, list, list]:
    """The descriptor's base, sizes and outer strides (i64): a made one's operands, else its
    parameters and constants, computed in the prologue (a product in its own width)."""
    if "made" in op.attributes:
        rank = len(op.offsets)
        base, *rest = (ctx.get(v) for v in op.made_parts)
        return base, rest[:rank], rest[rank:]
    args = ctx.fn.args

    def compute(p: ir.IRBuilder) -> tuple:
        def value(part: Any) -> ir.Value:
            if isinstance(part, int):
                found = I64(-part) if part < 0 else args[part]
            else:
                found = tma_lowering.product(p, args, part)
            return p.sext(found, I64) if found.type.width < 64 else found

        sizes = [value(part) for part in tma_lowering.parts(op.shape_params)]
        strides = [value(part) for part in tma_lowering.parts(op.stride_params)[:-1]]
        return args[op.base_param.value], sizes, strides

    return ctx._entry(("tma.made.parameters", _parameters_key(op)), compute)


def _last_part(ctx: LoweringContext, op: Any) -> ir.Instruction | None:
    """The last instruction of the kernel's body (after the prologue) that computes a part of
    `op`'s descriptor, the phis after it included; None where none does."""
    func = tma_lowering.enclosing_function(op)
    order = func.entry_block.index_map()
    prologue = ctx.fn.entry_basic_block
    found = []  # (the defining op's place in the top-level block, the instruction)
    for value in op.made_parts:
        lowered = ctx.get(value)
        if isinstance(value, BlockArgument) or not isinstance(lowered, ir.Instruction):
            continue
        if lowered.parent is not prologue:
            found.append((order[value.owner], lowered))
    if not found:
        return None
    last = max(found, key=lambda item: item[0])[1]
    instructions = last.parent.instructions
    # an instruction the lowering reused may stand later in the block than the last op's
    index = max(instructions.index(i) for _at, i in found if i.parent is last.parent)
    while index + 1 < len(instructions) and isinstance(instructions[index + 1], ir.PhiInstr):
        index += 1
    return instructions[index]


def _map_buffer(ctx: LoweringContext) -> ir.Value:
    """The kernel's 128 bytes of shared memory (128-byte aligned) for shared maps: above
    every other use of its dynamic shared memory (`LoweringContext.shared_tail`), so counted
    in `shared_bytes` (the launch's allocation, the arch's limit)."""
    return ctx.shared_tail("tma.made.map", SCRATCH_BYTES, SCRATCH_ALIGN)


def descriptor_load(arch: str, ctx: LoweringContext, op: Any) -> bool:
    """A made descriptor's load: through TMA on the map it builds where `usable` and the
    innermost offset allow, else the masked load; False where `op` is not claimed."""
    if not claims(arch, op):
        return False
    b = ctx.builder
    access = _Access(arch, ctx, op)
    place = access.place
    aligned = tma_lowering.innermost_aligned(b, place.offsets[-1], place.size)
    tma_lowering.load_where(arch, ctx, op, place, b.and_(access.usable, aligned), access.build)
    return True


def descriptor_store(arch: str, ctx: LoweringContext, op: Any) -> bool:
    """A made descriptor's store: through TMA on the map it builds where `usable` and
    `tma_store.exact` allow, else the masked store; False where `op` is not claimed."""
    from tilec_nvidia import tma_store

    if not claims(arch, op):
        return False
    b = ctx.builder
    access = _Access(arch, ctx, op)
    place = access.place
    limit = I64(MAX_SIZE)
    sizes = [b.trunc(b.select(b.icmp_signed(">", s, limit), limit, s), I32) for s in access.sizes]
    exact = tma_store.exact(b, place.offsets, sizes, place.block, place.size)
    tma_store.store_where(arch, ctx, op, place, sizes, b.and_(access.usable, exact), access.build)
    return True


__all__ = ["INSTRUCTIONS", "SCRATCH", "build_map", "claims", "descriptor_load",
           "descriptor_store", "fields", "map_key", "ptxas_release", "scratch_key",
           "scratch_metadata", "slots", "stride_shift", "usable"]  # fmt: skip
