"""`TargetInfo`: what the core LLVM lowering asks of a GPU backend.

The core lowering (gir -> LLVM IR with `llvmlite.ir`) is target-neutral; every place where NVIDIA
and AMD differ goes through one of these methods. A backend plugin subclasses `TargetInfo` (NVIDIA:
NVVM intrinsics and `ptx_kernel`; AMD: `llvm.amdgcn.*` and `amdgpu_kernel`), and the differences
stay data and a few short methods, as in tinygrad's renderers.

All methods that emit code take the `llvmlite.ir.IRBuilder` positioned where the code goes.
Thread ids are i32 values.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, ClassVar

from llvmlite import ir

from tilec.lowering.memory_hints import MemoryHints, nontemporal, volatile_load, volatile_store


class TargetInfo:
    """Target hooks of the core lowering. Subclasses set the class attributes and methods."""

    triple: ClassVar[str] = ""
    data_layout: ClassVar[str] = ""
    global_address_space: ClassVar[int] = 1
    shared_address_space: ClassVar[int] = 3
    sync_scopes: ClassVar[dict[str, str | None]] = {"cta": "block", "gpu": "device", "sys": None}
    """LLVM `syncscope` names of the atomic scopes `cta`, `gpu`, `sys` (None: LLVM's default,
    the system scope). These are NVPTX's; AMDGPU calls them `workgroup` and `agent`."""

    inline_asm_constraints: ClassVar[str | None] = None
    """The letters of LLVM inline-asm constraints the target has (`r`, `l`, `h`, `f` on NVPTX;
    `v`, `s` on AMDGPU): `tl.inline_asm_elementwise` constraints with another letter are refused
    with a located error, where LLVM would abort the process (None: not checked)."""

    cache_flags: ClassVar[dict[tuple[str, str], tuple[bool, bool]]] = {}
    """(volatile, nontemporal): the LLVM flags the default `global_load` and `global_store` give
    an access per (`"load"` or `"store"`, Triton cache modifier: `""`, `".cg"`, `".cv"`, ...),
    where the target's LLVM backend turns them into its cache bits (AMDGPU does); a modifier
    not in it gets a plain access."""

    swizzled_scratch: ClassVar[bool] = True
    """Whether a conversion through shared memory uses the swizzled row-major tile
    (`tilec.lowering.swizzle.SwizzledTile`: no bank conflicts for an accumulator's writer) where
    the shapes allow it; False keeps the plain row-major buffer."""

    fp_fusion: bool = False
    """Whether floating-point multiplies, adds and subtracts are marked `contract` (LLVM may fuse
    them into FMAs): the compile's `enable_fp_fusion` (`tilec.pipeline.stages.make_llir`)."""

    def __init__(self, arch: str, threads_per_warp: int):
        self.arch = arch
        self.threads_per_warp = threads_per_warp

    def missing(self, method: str) -> NotImplementedError:
        """The error for a required method that the subclass does not implement."""
        return NotImplementedError(
            f"{type(self).__qualname__} (target {self.arch}) does not implement "
            f"TargetInfo.{method}(), which the core lowering needs: define it in the subclass "
            "(docs/backend-guide.md lists every required method)"
        )

    # Kernel definition -----------------------------------------------------------------------

    def define_kernel(self, module: ir.Module, name: str, fn_type: ir.FunctionType) -> ir.Function:
        """Declare the kernel entry point (calling convention, linkage) in `module`."""
        raise self.missing("define_kernel")

    def finalize_kernel(
        self, module: ir.Module, fn: ir.Function, num_threads: int, shared_bytes: int
    ) -> None:
        """Attach the kernel's launch facts (block size, ...) as attributes or metadata."""
        raise self.missing("finalize_kernel")

    def added_parameters(self, func: Any) -> list[tuple[Any, ir.Type]]:
        """Parameters the target adds after the kernel's own, as `(key, LLVM type)` pairs, for
        the gir kernel `func`: the lowering gives each key's argument in
        `LoweringContext.added_args`, and `added_metadata` says what the launch passes for
        them. None by default (NVIDIA: a tensor map a `tile.descriptor_load` it lowers)."""
        return []

    def added_metadata(self, keys: Sequence[Any]) -> dict[str, Any]:
        """The launch metadata (JSON values) of the parameters `added_parameters` gave, in
        their order; merged into the kernel's metadata. None by default."""
        return {}

    def descriptor_load(self, ctx: Any, op: Any) -> bool:
        """Lower a `tile.descriptor_load` itself (its result set in `ctx`); whether it did.
        False (the default): the core lowers it as the masked `tile.load` of its first three
        operands."""
        return False

    def descriptor_store(self, ctx: Any, op: Any) -> bool:
        """Lower a `tile.descriptor_store` itself; whether it did. False (the default): the
        core lowers it as the masked `tile.store` of its first three operands."""
        return False

    # Ids ---------------------------------------------------------------------------------------

    def thread_id(self, builder: ir.IRBuilder) -> ir.Value:
        """The thread's index within the block (x dimension; blocks are one-dimensional)."""
        raise self.missing("thread_id")

    def block_id(self, builder: ir.IRBuilder, axis: int) -> ir.Value:
        """The block's (program's) index along `axis` (0, 1, 2)."""
        raise self.missing("block_id")

    def num_blocks(self, builder: ir.IRBuilder, axis: int) -> ir.Value:
        """The grid's extent along `axis`."""
        raise self.missing("num_blocks")

    # Synchronization and cross-lane exchange ---------------------------------------------------

    def barrier(self, builder: ir.IRBuilder) -> None:
        """Block-wide barrier that also orders shared-memory accesses (of the `barrier_threads`
        first threads where that is set)."""
        raise self.missing("barrier")

    barrier_threads: int | None = None
    """While a warp-specialized kernel (`gpu.producer_warps`) is lowered: its consumers' threads,
    the block's first, which `barrier` waits for (the producer warps never meet them there)."""

    def named_barrier(self, builder: ir.IRBuilder, index: int, threads: int, arrive: bool) -> None:
        """Barrier `index` (not 0, `barrier`'s) for `threads` threads: wait there, or only
        arrive (`arrive`, ordering this thread's earlier memory accesses before the waiters'
        later ones). Warp-specialized kernels only (`tilec.lowering.warp_specialize`)."""
        raise self.missing("named_barrier")

    def specialized_registers(
        self, consumers: int, producers: int, shared_bytes: int
    ) -> tuple[int, int] | None:
        """The registers a thread a warp-specialized kernel's producer and consumer warps take
        (`set_registers`) where the block has `consumers` + `producers` threads and
        `shared_bytes` of shared memory, or None to let them keep the kernel's allocation."""
        return None

    def set_registers(self, builder: ir.IRBuilder, count: int, increase: bool) -> None:
        """This warp group's threads have `count` registers from here on (`specialized_registers`)."""
        raise self.missing("set_registers")

    def shuffle_xor(self, builder: ir.IRBuilder, value: ir.Value, lane_mask: int) -> ir.Value:
        """The `value` (an i32 or f32) of lane `lane ^ lane_mask` in the same warp."""
        raise self.missing("shuffle_xor")

    def shuffle_up(self, builder: ir.IRBuilder, value: ir.Value, delta: int) -> ir.Value:
        """The `value` (i32 or f32) of lane `lane - delta` (lanes below `delta` get their own)."""
        raise self.missing("shuffle_up")

    def shuffle_idx(self, builder: ir.IRBuilder, value: ir.Value, lane: ir.Value) -> ir.Value:
        """The `value` (i32 or f32) of lane `lane` (an i32 value) in the same warp."""
        raise self.missing("shuffle_idx")

    # Global memory -----------------------------------------------------------------------------

    def prepare_memory_hints(self, builder: ir.IRBuilder, hints: MemoryHints) -> MemoryHints:
        """What one load or store with `hints` needs computed once, before its accesses (which
        may be in masked branches): returned in `hints.prepared`. None by default."""
        return hints

    def global_load(
        self, builder: ir.IRBuilder, address: ir.Value, typ: ir.Type, align: int, hints: MemoryHints
    ) -> ir.Value:
        """Load `typ` (a scalar or a vector) from global `address` (aligned to `align`) with the
        cache modifier and eviction policy of `hints` (`tilec.lowering.memory_hints`). They
        change speed, not results: the default is a load with the LLVM flags `cache_flags`
        gives the cache modifier (a plain load without), `load volatile` for a volatile one."""
        volatile, non_temporal = self.cache_flags.get(("load", hints.cache), (False, False))
        if volatile or hints.volatile:
            instr = volatile_load(builder, address, typ, align)
        else:
            instr = builder.load(address, typ=typ, align=align)
        return nontemporal(instr, builder.module) if non_temporal else instr

    def global_store(
        self,
        builder: ir.IRBuilder,
        value: ir.Value,
        address: ir.Value,
        align: int,
        hints: MemoryHints,
    ) -> None:
        """Store `value` to global `address` with `hints` (as `global_load`)."""
        volatile, non_temporal = self.cache_flags.get(("store", hints.cache), (False, False))
        if volatile:
            instr = volatile_store(builder, value, address, align)
        else:
            instr = builder.store(value, address, align=align)
        if non_temporal:
            nontemporal(instr, builder.module)

    def predicated_load(
        self,
        builder: ir.IRBuilder,
        address: ir.Value,
        typ: ir.Type,
        hints: MemoryHints,
        predicate: ir.Value,
        other: ir.Value,
    ) -> ir.Value | None:
        """`typ` loaded from global `address` where the i1 `predicate` holds, else `other`, without
        a branch (NVIDIA: `@p ld.global`); None (the default) where the target has no such load:
        the core then branches around `global_load` or a plain load."""
        return None

    def predicated_store(
        self,
        builder: ir.IRBuilder,
        value: ir.Value,
        address: ir.Value,
        hints: MemoryHints,
        predicate: ir.Value,
    ) -> bool:
        """Store `value` to global `address` where the i1 `predicate` holds, without a branch;
        False (the default) where the target has no such store: the core branches around it."""
        return False

    # Math and printing -------------------------------------------------------------------------

    def math(
        self, builder: ir.IRBuilder, name: str, args: Sequence[ir.Value], dtype: str
    ) -> ir.Value | None:
        """A target instruction or intrinsic for math op `name` (`exp2`, `log2`, `sqrt`, `rsqrt`,
        `sin`, `cos`, `exp`, `log`, `erf`, `tanh`, `fma`, `floor`, `ceil`, `absf`) on scalar
        arguments of `dtype` (`f16`, `bf16`, `f32`, `f64`); None when the target has none and the
        core's generic expansion (in terms of other ops) should be used. `fast_sqrt` (f32 only):
        Triton's `tl.sqrt`, where the target has a faster root than `sqrt` (None: `sqrt`)."""
        return None

    def fast_division(
        self, builder: ir.IRBuilder, x: ir.Value, y: ir.Value, dtype: str
    ) -> ir.Value | None:
        """`x / y` of scalar `dtype` values as Triton's `/` divides on this target, where that is
        faster than the correctly rounded `fdiv` (NVIDIA's `div.full.f32`, within 2 ulp); None
        (the default): `fdiv`. Ops marked `ieee` (`tl.div_rn`) never come here."""
        return None

    def float8_convert(
        self, builder: ir.IRBuilder, value: ir.Value, source: str, target: str
    ) -> ir.Value | None:
        """A target instruction for `tile.fp_to_fp` of the scalar `value` from IR type `source`
        to `target` (one of them an 8-bit float such as `f8E4M3FN`, held as its i8 code) that
        gives the interpreter's result (`tilec.ir.float8`); None for the core's integer
        expansion (`tilec.lowering.float8`)."""
        return None

    def unsupported_conversion(self, dtype: str) -> str | None:
        """Where the target has no instructions to convert to or from the float type `dtype`
        (`bf16`), what to do instead, which the located error of such a conversion ends with
        (`compile for <a newer target>, or use f16/f32`); None where it has them (the
        default)."""
        return None

    # Atomics ------------------------------------------------------------------------------------

    def atomic_rmw(
        self, builder: ir.IRBuilder, kind: str, ptr: ir.Value, value: ir.Value, sem: str, scope: str
    ) -> ir.Value | None:
        """The target's own instruction for one atomic read-modify-write of `value` at the global
        `ptr`, returning the value memory held before: `kind` is an integer kind of
        `tilec.lowering.atomics` (`add`, `max`, `min`, `umax`, `umin`, `and`, `or`, `xor`,
        `xchg`) or, on floats, `add` or `xchg` (float max/min arrive as integer ones), `sem` the
        memory order (`relaxed`, `acquire`, `release`, `acq_rel`) and `scope` its scope (`cta`,
        `gpu`, `sys`), both to honour. None (the default): the core's LLVM `atomicrmw`."""
        return None

    def atomic_cas(
        self,
        builder: ir.IRBuilder,
        ptr: ir.Value,
        compare: ir.Value,
        value: ir.Value,
        sem: str,
        scope: str,
    ) -> ir.Value | None:
        """The target's own compare-and-swap of the integers `compare` and `value` (16, 32 or
        64 bits) at the global `ptr`, returning the old value; `sem` and `scope` as
        `atomic_rmw`'s. None (the default): the core's LLVM `cmpxchg`."""
        return None

    def printf(
        self, builder: ir.IRBuilder, module: ir.Module, fmt: str, args: Sequence[ir.Value]
    ) -> None:
        """Device-side printf of `fmt` (C format) with scalar `args` (i32, i64, f64, ptr)."""
        raise self.missing("printf")

    def trap(self, builder: ir.IRBuilder) -> None:
        """Abort the kernel (a failed device-side assert): LLVM's `llvm.trap` by default, which
        LLVM's GPU targets lower to their trap instruction."""
        module = builder.module
        trap = module.globals.get("llvm.trap") or ir.Function(
            module, ir.FunctionType(ir.VoidType(), []), "llvm.trap"
        )
        builder.call(trap, [])

    # Matrix units and asynchronous copies ---------------------------------------------------------

    def mma(
        self,
        builder: ir.IRBuilder,
        instruction: Any,
        a: Sequence[ir.Value],
        b: Sequence[ir.Value],
        c: Sequence[ir.Value],
    ) -> list[ir.Value]:
        """One tensor-core `instruction` (a `tilec.layout.rules.MmaInstruction` the target's
        layout rules offered) on this lane's fragments, in `#gpu.dot_op` / `#gpu.mma` register
        order: `a` and `b` are i32 registers, each packing `kWidth` operand elements (the lowest
        K first), `c` the accumulator elements; returns the result elements (D). A backend whose
        own matrix-unit lowering calls it (`tilec.lowering.matrix_units`) defines what `a`, `b`
        and `c` hold there (AMD's: the lane's `kWidth` operand elements themselves)."""
        raise NotImplementedError(f"target {self.arch} has no tensor-core instructions")

    def store_matrix_fragments(self, ctx: Any, source: Any, tile: Any, base: ir.Value) -> bool:
        """Write the register tensor `source` (a `tilec.lowering.context.LTensor`) into the
        scratch buffer of a conversion, the row-major swizzled `tile` (a
        `tilec.lowering.swizzle.SwizzledTile`) at shared pointer `base`, with the target's
        matrix stores where its layout fits them (a tensor-core accumulator's 8x8 fragments);
        whether it did. False (the default): the core stores each thread's registers itself.
        The core emits the barriers around the stores (the one before them where an earlier
        access may still read those bytes: `tilec.lowering.scratch`)."""
        return False

    def async_copy(
        self,
        builder: ir.IRBuilder,
        dst: ir.Value,
        src: ir.Value,
        src_size: ir.Value | None,
        nbytes: int = 16,
        hints: MemoryHints | None = None,
    ) -> None:
        """Start copying `nbytes` (4, 8 or 16) from global `src` to shared `dst` (both aligned
        to `nbytes`), of which only the first `src_size` (an i32; None: all) are read, the rest
        written as zeros (`gpu.async_copy_global_to_local`), with the pipelined load's `hints`
        (prepared by `prepare_memory_hints`) where the copy instruction can carry them."""
        raise NotImplementedError(f"target {self.arch} has no asynchronous copies")

    def fence_async_shared(self, builder: ir.IRBuilder) -> None:
        """Make this thread's earlier stores to shared memory visible to the instructions that
        read a backend-laid-out buffer in place through another path than loads (NVIDIA's
        async proxy: wgmma, TMA), ahead of the barrier that orders them before those reads.
        Nothing by default: ordinary reads need only the barrier."""

    def async_commit(self, builder: ir.IRBuilder) -> None:
        """Close the asynchronous copies issued since the last commit into a group."""
        raise NotImplementedError(f"target {self.arch} has no asynchronous copies")

    def async_wait(self, builder: ir.IRBuilder, pending: int) -> None:
        """Wait until at most `pending` committed groups of this thread are in flight."""
        raise NotImplementedError(f"target {self.arch} has no asynchronous copies")
