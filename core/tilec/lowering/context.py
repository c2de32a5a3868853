"""The state of lowering one gir function to LLVM IR, and the op-lowering registry.

Representation of lowered values:

- a scalar SSA value (i32, f32, `!tile.ptr<f32>`, ...) becomes one `llvmlite.ir.Value`;
- a tensor value with a layout becomes an `LTensor`: the elements this thread holds, one
  `ir.Value` per register, in the register order of `tilec.layout.mapping.thread_mapping`
  (the one place that decides which thread holds what).

Op lowerings are functions `lower(ctx, op) -> None` registered per op class with `@lowers(...)`;
they read operands with `ctx.get(value)` and bind results with `ctx.set(result, lowered)`.
Modules of `tilec.lowering` register theirs when imported.

Shared memory: one block-wide scratch buffer. A user writes, waits at a barrier and reads back:
`ctx.scratch(op, nbytes)` gives the base of its bytes (an `i8` pointer in the target's shared
address space) and emits the barrier before the writes where an earlier access may still read
them (`tilec.lowering.scratch`); the user emits the barrier between its writes and reads.
`ctx.shared_scratch(nbytes)` is the older form whose users bracket the use with both barriers
themselves (`barrier; write; barrier; read`). `ctx.shared_tail(key, nbytes)` gives bytes of
a user's own above every other use, placed when the body is lowered (`place_tail`). The largest
extent becomes the kernel's dynamic shared memory size (`ctx.shared_bytes`).
"""

from __future__ import annotations

import struct
from collections.abc import Callable, Sequence
from typing import Any

import attrs
from llvmlite import ir

from tilec.dialects.gpu import layout_of
from tilec.ir.core import Operation, Region, Value
from tilec.ir.traits import IsTerminator
from tilec.ir.types import Float8Type, FloatType, IntegerType, PointerType, TensorType, Type
from tilec.layout.mapping import ThreadMapping, thread_mapping
from tilec.lowering.not_lowered import NOT_LOWERED
from tilec.lowering.scratch import ScratchPlan, aligned
from tilec.lowering.target import TargetInfo


class LoweringError(Exception):
    """An op the lowering cannot handle, with the op's source location in the message."""


class _BFloat16(ir.Type):
    """LLVM's `bfloat` (llvmlite has no class for it)."""

    null = "0.0"
    intrinsic_name = "bf16"

    def _to_string(self) -> str:
        return "bfloat"

    def format_constant(self, value: float) -> str:
        # LLVM spells bfloat constants by their bits (`0xR3F80` is 1.0).
        bits = struct.unpack("<I", struct.pack("<f", value))[0]
        return f"0xR{bits >> 16:04X}"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _BFloat16)

    def __hash__(self) -> int:
        return hash("bfloat")


BF16 = _BFloat16()
I1, I8, I16, I32, I64 = (ir.IntType(w) for w in (1, 8, 16, 32, 64))
F16, F32, F64 = ir.HalfType(), ir.FloatType(), ir.DoubleType()


@attrs.define(eq=False)
class LTensor:
    """A tensor as this thread holds it: `values[i]` is the element of register i."""

    type: TensorType
    values: list[ir.Value]

    @property
    def mapping(self) -> ThreadMapping:
        return thread_mapping(self.type.encoding, self.type.shape)


Lowering = Callable[["LoweringContext", Any], None]
"""`lower(ctx, op)`: the op is an instance of one of the classes it is registered for."""
LOWERINGS: dict[type[Operation], Lowering] = {}


def lowers(*op_classes: type[Operation]) -> Callable[[Lowering], Lowering]:
    """Register a lowering function for the ops of `op_classes` (exact classes, not subclasses)."""

    def register(fn: Lowering) -> Lowering:
        for op_class in op_classes:
            if op_class in LOWERINGS:
                raise ValueError(f"two lowerings registered for '{op_class.name}'")
            LOWERINGS[op_class] = fn
        return fn

    return register


def llvm_type(t: Type, target: TargetInfo | None = None) -> ir.Type:
    """The LLVM type of a scalar tile type (tensors are lowered element by element)."""
    if isinstance(t, IntegerType):
        return ir.IntType(t.width)
    if isinstance(t, FloatType):
        return {"f16": F16, "bf16": BF16, "f32": F32, "f64": F64}[t.name]
    if isinstance(t, Float8Type):  # its code: only `tile.fp_to_fp` reads it as a number
        return I8
    if isinstance(t, PointerType):
        space = target.global_address_space if target is not None else t.address_space
        return ir.PointerType(addrspace=space)
    raise TypeError(f"no LLVM type for {t}")


def memory_type(t: Type, target: TargetInfo | None = None) -> ir.Type:
    """The type a scalar has in memory: as `llvm_type`, except that i1 is stored as i8."""
    if isinstance(t, IntegerType) and t.width == 1:
        return I8
    return llvm_type(t, target)


class LoweringContext:
    """Lowering state of one kernel function (see the module doc)."""

    def __init__(
        self,
        module: ir.Module,
        fn: ir.Function,
        builder: ir.IRBuilder,
        target: TargetInfo,
        num_warps: int,
    ):
        self.module = module
        self.fn = fn
        self.builder = builder
        self.target = target
        self.num_warps = num_warps
        self.threads_per_warp = target.threads_per_warp
        self.values: dict[Value, Any] = {}
        self.shared_bytes = 0
        self.shared_reserved = 0
        """Bytes at the start of shared memory held by live `gpu.local_alloc` buffers; the
        scratch buffer lies above them (`tilec.lowering.shared_memory`)."""
        self._shared: ir.GlobalVariable | None = None
        self.scratch_plan = ScratchPlan()
        """Where the next `scratch` use goes and whether it barriers first; `lower_module`
        starts it at the kernel's body."""
        self._entry_values: dict[Any, ir.Value] = {}
        self._tail: list[tuple[ir.Constant, int, int]] = []
        """`shared_tail`'s uses: (their offset, set by `place_tail`; bytes; alignment)."""
        self.axis_info: Any = None
        """The kernel's axis-info analysis (contiguity, divisibility, constancy), set by
        `lower_module`; memory lowerings use it to choose vector widths."""
        self.prologue = ir.IRBuilder(fn.entry_basic_block)
        """Appends to the entry block, which holds the values computed once (thread ids)."""
        self.added_args: dict[Any, ir.Argument] = {}
        """The parameters the target added after the kernel's own, by its key
        (`TargetInfo.added_parameters`)."""
        self.deferred: list[Callable[[Operation], bool]] = []
        """Code put off until a later op needs it (`defer`)."""

    # Values ----------------------------------------------------------------------------------

    def axis_info_of(self, value: Value) -> Any:
        """The axis info (contiguity, divisibility, constancy) of `value`, or None where the
        lowering runs without the analysis."""
        return None if self.axis_info is None else self.axis_info.get(value)

    def get(self, value: Value) -> Any:
        try:
            return self.values[value]
        except KeyError:
            raise LoweringError(f"value {value} used before it was lowered") from None

    def set(self, value: Value, lowered: Any) -> None:
        self.values[value] = lowered

    def type(self, t: Type) -> ir.Type:
        return llvm_type(element_type(t), self.target)

    # Thread ids (computed once, in the entry block) -----------------------------------------

    def _entry(self, key: Any, make: Callable[[ir.IRBuilder], ir.Value]) -> ir.Value:
        # One builder appends to the prologue (the entry block, which `lower_module` leaves
        # unterminated until the end): llvmlite builders insert at a remembered index, so two
        # builders inserting into one block would put instructions before their operands.
        if key not in self._entry_values:
            self._entry_values[key] = make(self.prologue)
        return self._entry_values[key]

    def thread_id(self) -> ir.Value:
        return self._entry("tid", self.target.thread_id)

    def lane_id(self) -> ir.Value:
        lanes = self.threads_per_warp
        return self._entry("lane", lambda b: b.urem(self.thread_id(), ir.Constant(I32, lanes)))

    def warp_id(self) -> ir.Value:
        lanes = self.threads_per_warp
        return self._entry("warp", lambda b: b.udiv(self.thread_id(), ir.Constant(I32, lanes)))

    def uniform_warp_id(self) -> ir.Value:
        """`warp_id()` read back from lane 0 (`TargetInfo.shuffle_idx`), once in the prologue:
        the same value, which the target's compiler then knows is the same in every lane (NVIDIA's
        ptxas keeps what is computed from it, such as wgmma's descriptors, in uniform registers,
        as it does Triton's warp id, read the same way)."""
        return self._entry(
            "uniform warp",
            lambda b: self.target.shuffle_idx(b, self.warp_id(), ir.Constant(I32, 0)),
        )

    def thread_offsets(self, mapping: ThreadMapping) -> list[ir.Value]:
        """Per dimension, this thread's unwrapped offset (see `tilec.layout.mapping`)."""
        return [self._dim_offset(d) for d in mapping.dims]

    def _dim_offset(self, d: Any) -> ir.Value:
        def make(b: ir.IRBuilder) -> ir.Value:
            lane_id, warp_id = self.lane_id(), self.warp_id()
            lane = offset_part(b, lane_id, d.lane_div, d.lane_count, d.lane_scale)
            warp = offset_part(b, warp_id, d.warp_div, d.warp_count, d.warp_scale)
            if lane is None or warp is None:
                total = warp if lane is None else lane
                return ir.Constant(I32, 0) if total is None else total
            return b.add(lane, warp)

        return self._entry(("dim", d), make)

    def element_coords(self, mapping: ThreadMapping) -> list[list[ir.Value]]:
        """Per register, per dimension, the (wrapped) coordinate of the element it holds.

        Each (dimension, register offset) is computed once, and wrapped (`urem`) only where the
        offset plus the largest thread offset can reach the dimension's size."""
        base = self.thread_offsets(mapping)
        b = self.builder
        computed: dict[tuple[int, int], ir.Value] = {}

        def coordinate(dim: int, offset: int) -> ir.Value:
            start, size, d = base[dim], mapping.shape[dim], mapping.dims[dim]
            if isinstance(start, ir.Constant):
                return ir.Constant(I32, (start.constant + offset) % size)
            value = b.add(start, ir.Constant(I32, offset)) if offset else start
            largest = d.lane_scale * (d.lane_count - 1) + d.warp_scale * (d.warp_count - 1)
            if offset + largest < size:
                return value
            return b.urem(value, ir.Constant(I32, size))  # sizes are powers of two

        coords = []
        for reg in mapping.registers:
            row = []
            for dim, offset in enumerate(reg):
                if (dim, offset) not in computed:
                    computed[dim, offset] = coordinate(dim, offset)
                row.append(computed[dim, offset])
            coords.append(row)
        return coords

    def owner_masks(self, mapping: ThreadMapping) -> list[ir.Value] | None:
        """Per register, an i1 that is true when this thread owns the element (not a replica);
        None when no element is replicated (every thread owns all it holds)."""
        b = self.builder
        base = self.thread_offsets(mapping)
        hidden = [self._dim_offset(h) for h in mapping.hidden]
        replicated = bool(hidden) or any(
            reg_offset + d.lane_scale * (d.lane_count - 1) + d.warp_scale * (d.warp_count - 1)
            >= d.size
            for reg in mapping.registers
            for reg_offset, d in zip(reg, mapping.dims, strict=True)
        )
        if not replicated:
            return None
        hidden_ok = ir.Constant(I1, 1)
        for h in hidden:
            hidden_ok = b.and_(hidden_ok, b.icmp_unsigned("==", h, ir.Constant(I32, 0)))
        masks = []
        for reg in mapping.registers:
            ok = hidden_ok
            for offset, start, size in zip(reg, base, mapping.shape, strict=True):
                value = b.add(start, ir.Constant(I32, offset)) if offset else start
                ok = b.and_(ok, b.icmp_unsigned("<", value, ir.Constant(I32, size)))
            masks.append(ok)
        return masks

    # Shared memory -------------------------------------------------------------------------

    def scratch(self, op: Operation, nbytes: int) -> ir.Value:
        """The base (`ptr addrspace(shared)`, 16-byte aligned) of `nbytes` of the scratch
        buffer, above the live `gpu.local_alloc` buffers, for one use by `op`: the caller
        writes, emits `self.target.barrier`, then reads. The barrier before the writes is
        emitted here unless `tilec.lowering.scratch.ScratchPlan` finds it not needed."""
        # above the live buffers, rounded up to 16 bytes: an extent may end at 8 (a TMA ring's
        # mbarriers); ldmatrix and vector accesses need 16 (an H200's misaligned address)
        reserved = aligned(self.shared_reserved)
        offset, barrier = self.scratch_plan.place(op, reserved, nbytes, self.shared_bytes)
        if barrier:
            self.target.barrier(self.builder)
        self.shared_bytes = max(self.shared_bytes, offset + aligned(nbytes))
        base = self._global_smem()
        self.scratch_plan.used(op, reserved, offset, nbytes)
        if not offset:
            return base
        return self.builder.gep(base, [ir.Constant(I32, offset)], source_etype=I8)

    def shared_scratch(self, nbytes: int) -> ir.Value:
        """The base (`ptr addrspace(shared)`, 16-byte aligned) of the block's scratch buffer,
        at least `nbytes` long, above the live `gpu.local_alloc` buffers. Bracket every use
        with `self.target.barrier` (module doc)."""
        self.scratch_plan.forget()
        reserved = aligned(self.shared_reserved)  # as `scratch`'s
        self.shared_bytes = max(self.shared_bytes, reserved + aligned(nbytes))
        base = self._global_smem()
        if not reserved:
            return base
        return self.builder.gep(base, [ir.Constant(I32, reserved)], source_etype=I8)

    def shared_tail(self, key: Any, nbytes: int, align: int = 16) -> ir.Value:
        """The base (in the prologue, `align`-byte aligned) of `nbytes` of shared memory that
        only its user touches, the same for one `key`: above every buffer and scratch use of
        the kernel, placed by `place_tail` once the body is lowered (so counted in
        `shared_bytes`, which the launch allocates and the arch's limit checks)."""

        def place(p: ir.IRBuilder) -> ir.Value:
            offset = ir.Constant(I32, 0)  # set by `place_tail`
            self._tail.append((offset, nbytes, align))
            return p.gep(self._global_smem(align), [offset], source_etype=I8)

        return self._entry(("shared_tail", key), place)

    def place_tail(self) -> None:
        """Place `shared_tail`'s uses above `shared_bytes` and count them in it."""
        for offset, nbytes, align in self._tail:
            offset.constant = -(-self.shared_bytes // align) * align
            self.shared_bytes = offset.constant + nbytes
        self._tail.clear()

    def shared_base(self, align: int = 16) -> ir.Value:
        """The start of the block's dynamic shared memory (`global_smem`), aligned to at least
        `align` bytes (wgmma's swizzled tiles need 1024). The caller accesses shared memory
        outside `scratch`'s plan, which the next `scratch` use then barriers after."""
        self.scratch_plan.forget()
        return self._global_smem(align)

    def _global_smem(self, align: int = 16) -> ir.Value:
        if self._shared is not None:
            self._shared.align = max(self._shared.align, align)
        if self._shared is None:
            space = self.target.shared_address_space
            gv = ir.GlobalVariable(self.module, ir.ArrayType(I8, 0), "global_smem", space)
            gv.linkage = "external"
            gv.align = max(16, align)
            # An opaque pointer type, so that loads and stores of any type may use it
            # (llvmlite's `bitcast` between pointer types is a no-op that keeps the typed one).
            gv.type = ir.PointerType(addrspace=space)
            self._shared = gv
        return self._shared

    def _shared_space(self) -> int:
        return self.target.shared_address_space

    # Regions --------------------------------------------------------------------------------

    def defer(self, flush: Callable[[Operation], bool]) -> None:
        """Put code off: before each op lowered from now on, `flush(op)` may emit it at the
        builder (before `op`'s own code) and returns whether it did; it is not asked again."""
        self.deferred.append(flush)

    def lower_op(self, op: Operation) -> None:
        if self.deferred:
            self.deferred = [flush for flush in self.deferred if not flush(op)]
        lowering = LOWERINGS.get(type(op))
        if lowering is None:
            reason = NOT_LOWERED.get(type(op))
            if reason is not None:
                raise LoweringError(f"{_where(op)}'{op.name}' is not lowered on its own: {reason}")
            raise LoweringError(f"{_where(op)}no LLVM lowering for '{op.name}' yet")
        lowering(self, op)

    def inline_region(self, region: Region, args: Sequence[ir.Value]) -> list[ir.Value]:
        """Lower the single block of `region` (a reduce/scan combiner) at the builder, on scalar
        `args` for its block arguments; return the lowered operands of its terminator."""
        block = region.block
        for arg, value in zip(block.args, args, strict=True):
            self.set(arg, value)
        terminator = None
        for op in block.ops:
            if op.has_trait(IsTerminator):
                terminator = op
                break
            self.lower_op(op)
        if terminator is None:
            raise LoweringError(f"{_where(region.parent)}combiner region has no terminator")
        return [self.get(v) for v in terminator.operands]


def call_intrinsic(
    builder: ir.IRBuilder, name: str, ret: ir.Type, args: Sequence[ir.Value]
) -> ir.Value:
    """Call the intrinsic (or function) `name` returning `ret`, declaring it on first use."""
    module = builder.module
    fn = module.globals.get(name)
    if fn is None:
        fn = ir.Function(module, ir.FunctionType(ret, [a.type for a in args]), name)
    return builder.call(fn, list(args))


def element_type(t: Type) -> Type:
    return t.element_type if isinstance(t, TensorType) else t


def location_prefix(op: Operation | None) -> str:
    """`file:line:col: ` of `op`'s source location, or nothing when it has none: the start of
    a located `LoweringError` about `op` (`f"{location_prefix(op)}what is wrong; the fix"`)."""
    loc = getattr(op, "location", None)
    short = getattr(loc, "short", None)
    if short is not None:
        return f"{short()}: "
    return f"{loc}: " if loc is not None and "unknown" not in str(loc) else ""


_where = location_prefix  # the core lowering's short name for it


def offset_part(
    b: ir.IRBuilder, ident: ir.Value, div: int, count: int, scale: int
) -> ir.Value | None:
    """`(ident / div) % count * scale`, a lane's or a warp's part of a thread offset; None where
    `count` is 1 (no part). No division by 1 or product by 1: LLVM would fold them, but only
    after parsing and combining them for every thread offset of the kernel."""
    if count == 1:
        return None
    coord = ident if div == 1 else b.udiv(ident, ir.Constant(I32, div))
    coord = b.urem(coord, ir.Constant(I32, count))
    return coord if scale == 1 else b.mul(coord, ir.Constant(I32, scale))


__all__ = [
    "BF16",
    "F16",
    "F32",
    "F64",
    "I1",
    "I8",
    "I16",
    "I32",
    "I64",
    "LOWERINGS",
    "LTensor",
    "LoweringContext",
    "LoweringError",
    "call_intrinsic",
    "layout_of",
    "llvm_type",
    "location_prefix",
    "lowers",
    "memory_type",
    "offset_part",
]
