"""`NvidiaTargetInfo`: the NVVM side of the core LLVM lowering (ids, barriers, shuffles, math).

Intrinsic names are those LLVM 22 (llvmlite 0.50) accepts and selects to PTX:
`llvm.nvvm.read.ptx.sreg.*`, `llvm.nvvm.barrier.cta.sync.aligned.all` (`bar.sync 0`),
`llvm.nvvm.shfl.sync.{bfly,up,idx}.{i32,f32}` and the `.approx` math of the PTX ISA, the same
approximations Triton uses for `exp`, `log`, `sin`, `cos`, `rsqrt` on f32, and Triton's f32 `/`,
`div.full.f32` (`tl.div_rn` is `div.rn`), and Triton's f32 `tl.sqrt`, `sqrt.approx.f32` (`.ftz`
under `enable_reflect_ftz`, as libdevice's `sqrtf` there); `tl.sqrt_rn` is the IEEE `sqrt.rn`.
The block size is given as the `nvvm.annotations` entry `reqntidx`, which LLVM upgrades to the
`"nvvm.reqntid"` function attribute (llvmlite cannot spell string attributes): PTX's `.reqntid`,
as Triton's, since every launch has exactly `num_warps * 32` threads. Knowing the block size
rather than a bound (`.maxntid`), ptxas allocates registers for the occupancy it allows (the
sweep's attention forward, d64 64x64 on 4 warps, causal: 131 -> 128 registers, 3 -> 4 CTAs an
SM, Triton's 4).
"""

from __future__ import annotations

import functools
import math
from collections.abc import Sequence
from typing import Any

import llvmlite.binding as llvm
from llvmlite import ir

from tilec.lowering.context import BF16, F16, F32, F64, I8, I16, I32, call_intrinsic
from tilec.lowering.math_ops import FLOAT_TYPES, NATIVE_INTRINSICS, native_intrinsic
from tilec.lowering.memory_hints import MemoryHints
from tilec.lowering.target import TargetInfo
from tilec_nvidia import (
    atomics,
    cache_hints,
    capabilities,
    dot_operand,
    matrix_store,
    mma_sync,
    nvmma_tile,
    tensor_cores,
    tma_lowering,
    tma_ring,
    wgmma_lowering,
)
from tilec_nvidia import wgmma as warpgroup  # the class below defines methods named wgmma
from tilec_nvidia.arch import ARCHS

REGISTER_FILE = 65536
"""32-bit registers an SM gives one block (sm_90)."""
PRODUCER_REGISTERS = 40
"""A warp-specialized kernel's producer threads' registers (Triton 3.6's on Hopper)."""

TENSOR_CORE_LOWERINGS = (dot_operand, mma_sync, nvmma_tile, wgmma_lowering)
"""The modules whose tensor-core lowerings register themselves with the core
(`tilec.lowering.matrix_units`, `tilec.lowering.context.lowers`): imported with the target, so
that a compile for it finds them."""
TMA_LOWERINGS = (tma_ring,)
"""Likewise, the lowering of the bulk copies into a pipelined loop's ring
(`tilec.dialects.gpu_bulk`)."""

TRIPLE = "nvptx64-nvidia-cuda"
DATA_LAYOUT = "e-p6:32:32-i64:64-i128:128-i256:256-v16:16-v32:32-n16:32:64"
"""LLVM 22's NVPTX data layout for the 64-bit triple (`TargetMachine.target_data`)."""

FULL_MASK = ir.Constant(I32, -1)
LOG2E = math.log2(math.e)
LN2 = math.log(2.0)

_APPROX_F32 = {
    "exp2": "llvm.nvvm.ex2.approx.ftz.f",
    "log2": "llvm.nvvm.lg2.approx.f",
    "rsqrt": "llvm.nvvm.rsqrt.approx.f",
    "sin": "llvm.nvvm.sin.approx.f",
    "cos": "llvm.nvvm.cos.approx.f",
}
"""The f32 approximations, as Triton 3.6 emits them: `tl.exp2` is `ex2.approx.ftz.f32` (libdevice's
`__nv_exp2f` under ftz: a subnormal input or result is 0), which ptxas makes one MUFU.EX2; without
`.ftz` it adds a compare-and-scale pair around each for subnormal results, which cost attention
kernels 10-30% (benchmarks/RESULTS.md)."""
_EX2_FULL_RANGE = "llvm.nvvm.ex2.approx.f"
"""`ex2.approx.f32` with subnormal results, for `tl.exp`: exp(x) for x in (-103, -87) is subnormal,
and Triton's `tl.exp` keeps it."""
_F64_GENERIC = {"sqrt": "llvm.sqrt"}
_FP8_PTX = {"f8E4M3FN": "e4m3", "f8E5M2": "e5m2"}
"""The 8-bit formats with `cvt` instructions (feature `fp8_cvt`), by PTX name."""
_F16X2 = ir.VectorType(F16, 2)


@functools.cache
def _llvm_major() -> int:
    return llvm.llvm_version_info[0]


class NvidiaTargetInfo(TargetInfo):
    """NVVM intrinsics and the `ptx_kernel` ABI for `nvptx64-nvidia-cuda`."""

    triple = TRIPLE
    data_layout = DATA_LAYOUT
    global_address_space = 1
    shared_address_space = 3
    inline_asm_constraints = "bchlqrfdni"  # NVPTX's register classes, immediates

    def __init__(
        self,
        arch: str = "sm_90",
        threads_per_warp: int = 32,
        maxnreg: int | None = None,
        reflect_ftz: bool = True,
    ):
        super().__init__(arch, threads_per_warp)
        self.maxnreg = maxnreg
        self.kernel_maxnreg: int | None = None
        """`.maxnreg` of a warp-specialized kernel whose warps set their registers
        (`specialized_registers`), where the options give none."""
        self.reflect_ftz = reflect_ftz  # Triton's enable_reflect_ftz: tl.exp2 flushes subnormals

    @property
    def capability(self) -> int:
        """The compute capability as a number: 90 for `sm_90` and `sm_90a`."""
        major, minor = ARCHS.check(self.arch).capability
        return 10 * major + minor

    # Kernel definition -----------------------------------------------------------------------

    def define_kernel(self, module: ir.Module, name: str, fn_type: ir.FunctionType) -> ir.Function:
        module.triple = self.triple
        module.data_layout = self.data_layout
        fn = ir.Function(module, fn_type, name)
        if _llvm_major() >= 20:  # older LLVMs mark kernels in `nvvm.annotations` instead
            fn.calling_convention = "ptx_kernel"
        return fn

    def added_parameters(self, func: Any) -> list[tuple[Any, ir.Type]]:
        """A tensor map a descriptor that a `tile.descriptor_load` reads through TMA."""
        return tma_lowering.added_parameters(self.arch, func)

    def added_metadata(self, keys: Sequence[Any]) -> dict[str, Any]:
        return tma_lowering.added_metadata(list(keys))

    def descriptor_load(self, ctx: Any, op: Any) -> bool:
        return tma_lowering.descriptor_load(self.arch, ctx, op)

    def descriptor_store(self, ctx: Any, op: Any) -> bool:
        return tma_lowering.descriptor_store(self.arch, ctx, op)

    def finalize_kernel(
        self, module: ir.Module, fn: ir.Function, num_threads: int, shared_bytes: int
    ) -> None:
        annotations = module.add_named_metadata("nvvm.annotations")
        facts = [("reqntidx", num_threads)]
        maxnreg = self.maxnreg if self.maxnreg is not None else self.kernel_maxnreg
        if maxnreg is not None:
            facts.append(("maxnreg", maxnreg))
        if fn.calling_convention != "ptx_kernel":
            facts.append(("kernel", 1))
        for key, value in facts:
            node = [fn, ir.MetaDataString(module, key), ir.Constant(I32, value)]
            annotations.add(module.add_metadata(node))

    # Ids ---------------------------------------------------------------------------------------

    def thread_id(self, builder: ir.IRBuilder) -> ir.Value:
        return call_intrinsic(builder, "llvm.nvvm.read.ptx.sreg.tid.x", I32, [])

    def block_id(self, builder: ir.IRBuilder, axis: int) -> ir.Value:
        return call_intrinsic(builder, f"llvm.nvvm.read.ptx.sreg.ctaid.{'xyz'[axis]}", I32, [])

    def num_blocks(self, builder: ir.IRBuilder, axis: int) -> ir.Value:
        return call_intrinsic(builder, f"llvm.nvvm.read.ptx.sreg.nctaid.{'xyz'[axis]}", I32, [])

    # Synchronization and cross-lane exchange ---------------------------------------------------

    def barrier(self, builder: ir.IRBuilder) -> None:
        if self.barrier_threads is not None:  # a warp-specialized kernel's consumers
            self.named_barrier(builder, 0, self.barrier_threads, arrive=False)
            return
        if _llvm_major() < 21:  # older LLVMs (llvmlite < 0.50) know only `barrier0`
            call_intrinsic(builder, "llvm.nvvm.barrier0", ir.VoidType(), [])
            return
        call_intrinsic(builder, "llvm.nvvm.barrier.cta.sync.aligned.all", ir.VoidType(), [I32(0)])

    def named_barrier(self, builder: ir.IRBuilder, index: int, threads: int, arrive: bool) -> None:
        """`bar.sync index, threads` or `bar.arrive index, threads` (inline PTX, a memory
        clobber: LLVM moves no memory access across it)."""
        text = f"{'bar.arrive' if arrive else 'bar.sync'} {index}, {threads};"
        fn_type = ir.FunctionType(ir.VoidType(), [])
        builder.call(ir.InlineAsm(fn_type, text, "~{memory}", side_effect=True), [])

    def specialized_registers(
        self, consumers: int, producers: int, shared_bytes: int
    ) -> tuple[int, int] | None:
        """The registers of a warp-specialized block (docs/tma.md step 5): the producer Triton's
        40, the consumers what the rest of the block's share of the register file leaves them (a
        multiple of 8, at most 256), the kernel's `.maxnreg` that share over its threads. The
        share is the whole file (Triton's 168 / 40 / 232 at 8 + 4 warps), or half of it for a
        block of 256 threads (4 + 4 warps) whose shared memory lets two run on an SM (128 / 40 /
        216: without it the producer's warps would take the consumers' registers and halve the
        blocks an SM). None where the options set `maxnreg`, or for one block of 256 threads
        (every thread may have 255 anyway)."""
        threads = consumers + producers
        if self.maxnreg is not None or not capabilities.has(self.arch, "wgmma"):
            return None
        sm = ARCHS.check(self.arch).sm
        two = threads <= 256 and sm is not None and sm.blocks(threads // 32, shared_bytes) >= 2
        if threads <= 256 and not two:
            return None
        share = REGISTER_FILE // 2 if two else REGISTER_FILE
        consumer = min((share - producers * PRODUCER_REGISTERS) // consumers // 8 * 8, 256)
        self.kernel_maxnreg = share // threads // 8 * 8
        return PRODUCER_REGISTERS, consumer

    def set_registers(self, builder: ir.IRBuilder, count: int, increase: bool) -> None:
        """`setmaxnreg.inc` / `.dec` (sm_90a, as wgmma; PTX 8.0): every warp of the warp group
        runs it."""
        capabilities.require(self.arch, "wgmma", "setmaxnreg")
        cache_hints.require_ptx_version(builder.module, 80)
        text = f"setmaxnreg.{'inc' if increase else 'dec'}.sync.aligned.u32 {count};"
        fn_type = ir.FunctionType(ir.VoidType(), [])
        builder.call(ir.InlineAsm(fn_type, text, "~{memory}", side_effect=True), [])

    def _shuffle(
        self, builder: ir.IRBuilder, kind: str, value: ir.Value, lane: ir.Value, clamp: int
    ) -> ir.Value:
        suffix = "f32" if value.type == F32 else "i32"
        if value.type not in (F32, I32):
            raise TypeError(f"shuffles take i32 or f32 values, got {value.type}")
        name = f"llvm.nvvm.shfl.sync.{kind}.{suffix}"
        return call_intrinsic(builder, name, value.type, [FULL_MASK, value, lane, I32(clamp)])

    def shuffle_xor(self, builder: ir.IRBuilder, value: ir.Value, lane_mask: int) -> ir.Value:
        return self._shuffle(builder, "bfly", value, I32(lane_mask), self.threads_per_warp - 1)

    def shuffle_up(self, builder: ir.IRBuilder, value: ir.Value, delta: int) -> ir.Value:
        return self._shuffle(builder, "up", value, I32(delta), 0)

    def shuffle_idx(self, builder: ir.IRBuilder, value: ir.Value, lane: ir.Value) -> ir.Value:
        return self._shuffle(builder, "idx", value, lane, self.threads_per_warp - 1)

    # Global memory (cache modifiers and eviction policies: tilec_nvidia.cache_hints) -----------

    def prepare_memory_hints(self, builder: ir.IRBuilder, hints: MemoryHints) -> MemoryHints:
        return cache_hints.prepare(builder, self.capability, hints)

    def global_load(
        self, builder: ir.IRBuilder, address: ir.Value, typ: ir.Type, align: int, hints: MemoryHints
    ) -> ir.Value:
        return cache_hints.load(builder, self.capability, address, typ, hints)

    def global_store(
        self,
        builder: ir.IRBuilder,
        value: ir.Value,
        address: ir.Value,
        align: int,
        hints: MemoryHints,
    ) -> None:
        cache_hints.store(builder, self.capability, value, address, hints)

    def predicated_load(
        self,
        builder: ir.IRBuilder,
        address: ir.Value,
        typ: ir.Type,
        hints: MemoryHints,
        predicate: ir.Value,
        other: ir.Value,
    ) -> ir.Value:
        return cache_hints.load(builder, self.capability, address, typ, hints, predicate, other)

    def predicated_store(
        self,
        builder: ir.IRBuilder,
        value: ir.Value,
        address: ir.Value,
        hints: MemoryHints,
        predicate: ir.Value,
    ) -> bool:
        cache_hints.store(builder, self.capability, value, address, hints, predicate)
        return True

    # Atomics: Triton's `atom` spellings (tilec_nvidia.atomics) ---------------------------------

    atomic_rmw = atomics.atomic_rmw
    atomic_cas = atomics.atomic_cas

    # Math and printing -------------------------------------------------------------------------

    def unsupported_conversion(self, dtype: str) -> str | None:
        if dtype == "bf16" and self.capability < 80:
            return "compile for sm_80 or newer, or use f16/f32"
        return None

    def math(
        self, builder: ir.IRBuilder, name: str, args: Sequence[ir.Value], dtype: str
    ) -> ir.Value | None:
        if dtype not in FLOAT_TYPES:
            return None
        if name in NATIVE_INTRINSICS:
            if dtype == "bf16" and self.capability < 80:
                return None  # the core computes it in f32
            return native_intrinsic(builder, name, args, dtype)
        if dtype == "f64" and name == "rsqrt":  # 1 / sqrt.rn: within an ulp, unlike .approx.d
            root = call_intrinsic(builder, "llvm.sqrt.f64", F64, args)
            return builder.fdiv(F64(1.0), root)
        if dtype == "f32" and name == "sqrt":
            return call_intrinsic(builder, "llvm.sqrt.f32", F32, args)
        if dtype == "f32" and name == "fast_sqrt":  # Triton's tl.sqrt: libdevice's sqrtf
            approx = (
                "llvm.nvvm.sqrt.approx.ftz.f" if self.reflect_ftz else "llvm.nvvm.sqrt.approx.f"
            )
            return call_intrinsic(builder, approx, F32, args)
        if dtype == "f64":
            if name not in _F64_GENERIC:
                return None
            intrinsic = _F64_GENERIC[name]
            full = intrinsic if intrinsic.startswith("llvm.nvvm") else f"{intrinsic}.f64"
            return call_intrinsic(builder, full, F64, args)
        if dtype in ("f16", "bf16"):
            return None  # the core computes it in f32
        return self._f32(builder, name, args)

    def _f32(self, builder: ir.IRBuilder, name: str, args: Sequence[ir.Value]) -> ir.Value | None:
        (x, *_) = args
        if name == "exp2" and not self.reflect_ftz:  # Triton's enable_reflect_ftz=False
            return call_intrinsic(builder, _EX2_FULL_RANGE, F32, [x])
        if name in _APPROX_F32:
            return call_intrinsic(builder, _APPROX_F32[name], F32, [x])
        if name == "exp":
            scaled = builder.fmul(x, F32(LOG2E))
            return call_intrinsic(builder, _EX2_FULL_RANGE, F32, [scaled])
        if name == "log":
            log2 = call_intrinsic(builder, _APPROX_F32["log2"], F32, [x])
            return builder.fmul(log2, F32(LN2))
        return None

    def fast_division(
        self, builder: ir.IRBuilder, x: ir.Value, y: ir.Value, dtype: str
    ) -> ir.Value | None:
        """Triton's float32 `/`: `div.full.f32` (within 2 ulp over the full range; ptxas computes
        one reciprocal for the divisions by one value, where `div.rn.f32` refines each)."""
        if dtype != "f32":
            return None
        return call_intrinsic(builder, "llvm.nvvm.div.full", F32, [x, y])

    def float8_convert(
        self, builder: ir.IRBuilder, value: ir.Value, source: str, target: str
    ) -> ir.Value | None:
        """`cvt` for e4m3 (`f8E4M3FN`) and e5m2 on sm_90 and later (feature `fp8_cvt`): from f32 (bf16 through f32,
        exactly) and f16 with `.rn.satfinite`, to f16 (then f32, f64, bf16: exact); one lane
        of each x2 instruction. f64 and the other 8-bit formats: the core's expansion."""
        if not capabilities.has(self.arch, "fp8_cvt"):
            return None
        if target in _FP8_PTX and source in ("f16", "bf16", "f32"):
            kind = _FP8_PTX[target]
            if source == "f16":
                pair = builder.insert_element(ir.Constant(_F16X2, None), value, I32(0))
                packed = call_intrinsic(builder, f"llvm.nvvm.f16x2.to.{kind}x2.rn", I16, [pair])
            else:
                value = builder.fpext(value, F32) if source == "bf16" else value
                name = f"llvm.nvvm.ff.to.{kind}x2.rn"  # cvt.rn.satfinite: a high, b low
                packed = call_intrinsic(builder, name, I16, [F32(0.0), value])
            return builder.trunc(packed, I8)
        if source in _FP8_PTX and target in FLOAT_TYPES:
            name = f"llvm.nvvm.{_FP8_PTX[source]}x2.to.f16x2.rn"
            pair = call_intrinsic(builder, name, _F16X2, [builder.zext(value, I16)])
            half = builder.extract_element(pair, I32(0))
            if target == "f16":
                return half
            wide = builder.fpext(half, F64 if target == "f64" else F32)
            return builder.fptrunc(wide, BF16) if target == "bf16" else wide
        return None

    def printf(
        self, builder: ir.IRBuilder, module: ir.Module, fmt: str, args: Sequence[ir.Value]
    ) -> None:
        data = bytearray(fmt.encode() + b"\0")
        text_type = ir.ArrayType(ir.IntType(8), len(data))
        index = sum(1 for g in module.global_values if g.name.startswith("printf_fmt"))
        text = ir.GlobalVariable(module, text_type, f"printf_fmt.{index}")
        text.global_constant = True
        text.linkage = "internal"
        text.initializer = ir.Constant(text_type, data)
        generic = ir.PointerType()
        fmt_ptr = builder.bitcast(text, generic)
        if args:
            buffer_type = ir.LiteralStructType([a.type for a in args])
            buffer = _alloca_in_entry(builder, buffer_type)
            for i, arg in enumerate(args):
                builder.store(arg, builder.gep(buffer, [I32(0), I32(i)], inbounds=True))
            args_ptr = builder.bitcast(buffer, generic)
        else:
            args_ptr = ir.Constant(generic, None)
        vprintf = module.globals.get("vprintf") or ir.Function(
            module, ir.FunctionType(I32, [generic, generic]), "vprintf"
        )
        builder.call(vprintf, [fmt_ptr, args_ptr])

    # Tensor cores: tilec_nvidia.tensor_cores' and (sm_90a) tilec_nvidia.wgmma's forms, each
    # checked against the arch ------------------------------------------------------------------

    mma = tensor_cores.mma
    ldmatrix = tensor_cores.ldmatrix
    stmatrix = matrix_store.stmatrix
    async_copy = tensor_cores.async_copy
    async_commit = tensor_cores.async_commit
    async_wait = tensor_cores.async_wait

    def store_matrix_fragments(self, ctx, source, tile, base) -> bool:
        """`TargetInfo.store_matrix_fragments` with `stmatrix` where the arch has it
        (`tilec_nvidia.matrix_store`)."""
        if not capabilities.has(self.arch, "stmatrix"):
            return False
        return matrix_store.store_fragments(self, ctx, source, tile, base)

    wgmma = warpgroup.wgmma
    wgmma_fence = warpgroup.wgmma_fence
    wgmma_commit = warpgroup.wgmma_commit
    wgmma_wait = warpgroup.wgmma_wait
    fence_async_shared = warpgroup.fence_async_shared


def _alloca_in_entry(builder: ir.IRBuilder, ty: ir.Type) -> ir.Value:
    # Appended to the entry block (the core lowering's prologue), never inserted at its front:
    # a builder appending there keeps its place (llvmlite builders remember an index).
    entry = builder.function.entry_basic_block
    at = ir.IRBuilder(entry)
    if entry.is_terminated:
        at.position_before(entry.terminator)
    return at.alloca(ty)


__all__ = ["DATA_LAYOUT", "TRIPLE", "NvidiaTargetInfo"]
