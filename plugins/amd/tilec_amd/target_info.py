"""`AmdTargetInfo`: the AMDGPU side of the core LLVM lowering (ids, barriers, shuffles, math).

Intrinsic names are those LLVM 22 (llvmlite 0.50) selects for `amdgcn-amd-amdhsa`:
`llvm.amdgcn.workitem.id.x`, `llvm.amdgcn.workgroup.id.{x,y,z}`, the HSA dispatch packet
(`llvm.amdgcn.dispatch.ptr`) for the grid size, `llvm.amdgcn.s.barrier` between workgroup-scope
release and acquire fences (what makes LDS writes visible across the barrier), and
`llvm.amdgcn.ds.bpermute` for every cross-lane exchange (its address is the source lane * 4; it
wraps within the wavefront, 64 lanes on CDNA, 32 on RDNA).

The code object version (5 by default: `amdhsa_code_object_version` = 500) is a module flag.
Kernel facts are string function attributes: `"amdgpu-flat-work-group-size"="1,N"` (N =
num_warps * lanes: the hsaco's `.max_flat_workgroup_size`) and, where asked,
`"amdgpu-waves-per-eu"`. llvmlite's `FunctionAttributes` accepts only enum attributes, so
`StringFunctionAttributes` extends it to print `"key"="value"` pairs.

Device-side printf needs ROCm's device libraries (hostcall buffers, `__ockl_printf_*`), which a
compile without ROCm cannot link: `printf` emits nothing and warns once per kernel (assertions
still trap).
"""

from __future__ import annotations

import math
import re
import warnings
from collections.abc import Sequence
from typing import Any

from llvmlite import ir

from tilec.lowering.context import F32, F64, I32, call_intrinsic
from tilec.lowering.math_ops import FLOAT_TYPES, NATIVE_INTRINSICS, native_intrinsic
from tilec.lowering.target import TargetInfo
from tilec_amd import matrix_lowering  # noqa: F401  (registers the matrix-core lowerings)

TRIPLE = "amdgcn-amd-amdhsa"
DATA_LAYOUT = (
    "e-m:e-p:64:64-p1:64:64-p2:32:32-p3:32:32-p4:64:64-p5:32:32-p6:32:32-p7:160:256:256:32-"
    "p8:128:128:128:48-p9:192:256:256:32-i64:64-v16:16-v24:32-v32:32-v48:64-v96:128-v192:256-"
    "v256:256-v512:512-v1024:1024-v2048:2048-n32:64-S32-A5-G1-ni:7:8:9"
)
"""LLVM 22's AMDGPU data layout (`TargetMachine.target_data`, the same for every gfx arch)."""

CONSTANT_ADDRESS_SPACE = 4
LOG2E = math.log2(math.e)
LN2 = math.log(2.0)

CACHE_FLAGS = {
    ("load", ""): (False, False),
    ("load", ".ca"): (False, False),
    ("load", ".cg"): (False, True),
    ("load", ".cs"): (False, True),
    ("load", ".cv"): (True, True),
    ("store", ""): (False, False),
    ("store", ".wb"): (False, False),
    ("store", ".cg"): (False, False),
    ("store", ".cs"): (False, True),
    ("store", ".wt"): (True, True),
}
"""(volatile, nontemporal) of a global load or store per cache modifier, Triton 3.6's table
(`getCacheModifierFlagsForPredicatedCall`): LLVM sets the arch's bits for them (gfx942:
`nt` for nontemporal, `sc0 sc1` for volatile; gfx90a: `glc slc`, `glc`). Eviction policies
have no AMD counterpart and, as in Triton, no effect."""

DISPATCH_WORKGROUP_SIZE_X = 4
"""Byte offset of `workgroup_size_x` (u16) in the HSA kernel dispatch packet."""
DISPATCH_GRID_SIZE = 12
"""Byte offset of `grid_size_x` (u32; then y, z), in work-items, in the dispatch packet."""

_F32_INTRINSICS = {
    "exp2": "llvm.exp2",
    "log2": "llvm.log2",
    "sqrt": "llvm.sqrt",
    "rsqrt": "llvm.amdgcn.rsq",
    "sin": "llvm.sin",
    "cos": "llvm.cos",
}
"""f32 math AMDGPU selects to one instruction (with LLVM's denormal and range scaling)."""
_STRING_ATTRIBUTE = re.compile(r'"[\w.-]+"(="[^"\\]*")?')


class StringFunctionAttributes(ir.values.FunctionAttributes):
    """llvmlite's function attributes plus LLVM string attributes (`"key"="value"`)."""

    def add(self, name: str) -> None:
        if _STRING_ATTRIBUTE.fullmatch(name):
            set.add(self, name)
            return
        super().add(name)


def string_attribute(key: str, value: str) -> str:
    """The LLVM spelling of a string function attribute."""
    return f'"{key}"="{value}"'


class AmdTargetInfo(TargetInfo):
    """`llvm.amdgcn.*` intrinsics and the `amdgpu_kernel` ABI for `amdgcn-amd-amdhsa`."""

    triple = TRIPLE
    data_layout = DATA_LAYOUT
    global_address_space = 1
    shared_address_space = 3
    sync_scopes = {"cta": "workgroup", "gpu": "agent", "sys": None}
    inline_asm_constraints = "vsaIJABCDni"  # AMDGPU's register classes, inline constants
    cache_flags = CACHE_FLAGS  # Triton's cache modifiers as LLVM's volatile and nontemporal
    # the plain scratch buffer, as before the swizzled one (6fb8468): the attention example's
    # 128x64, 8-warp config (tests/autotune) sits at the VGPR limit on gfx942, 254 of 256 with
    # the plain buffer; with the swizzled one it needed 256 and spilled 6 (fewer ds_read and
    # ds_write, 27 v_xor against 13); whether the swizzle pays on AMD is not measured
    swizzled_scratch = False

    def __init__(
        self,
        arch: str = "gfx942",
        threads_per_warp: int = 64,
        *,
        waves_per_eu: int = 0,
        code_object_version: int = 5,
    ):
        super().__init__(arch, threads_per_warp)
        self.waves_per_eu = waves_per_eu
        self.code_object_version = code_object_version
        self._warned_printf = False

    # Kernel definition -----------------------------------------------------------------------

    def define_kernel(self, module: ir.Module, name: str, fn_type: ir.FunctionType) -> ir.Function:
        module.triple = self.triple
        module.data_layout = self.data_layout
        fn = ir.Function(module, fn_type, name)
        fn.calling_convention = "amdgpu_kernel"
        fn.attributes = StringFunctionAttributes()
        return fn

    def finalize_kernel(
        self, module: ir.Module, fn: ir.Function, num_threads: int, shared_bytes: int
    ) -> None:
        fn.attributes.add(string_attribute("amdgpu-flat-work-group-size", f"1,{num_threads}"))
        if self.waves_per_eu:
            fn.attributes.add(string_attribute("amdgpu-waves-per-eu", str(self.waves_per_eu)))
        version = ir.Constant(I32, self.code_object_version * 100)
        flag = [I32(1), ir.MetaDataString(module, "amdhsa_code_object_version"), version]
        module.add_named_metadata("llvm.module.flags", flag)

    # Ids ---------------------------------------------------------------------------------------

    def thread_id(self, builder: ir.IRBuilder) -> ir.Value:
        return call_intrinsic(builder, "llvm.amdgcn.workitem.id.x", I32, [])

    def block_id(self, builder: ir.IRBuilder, axis: int) -> ir.Value:
        return call_intrinsic(builder, f"llvm.amdgcn.workgroup.id.{'xyz'[axis]}", I32, [])

    def num_blocks(self, builder: ir.IRBuilder, axis: int) -> ir.Value:
        """The grid in work-groups: the dispatch packet's grid size (in work-items) divided by
        the work-group size (blocks are one-dimensional: y and z are work-groups already)."""
        packet_type = ir.PointerType(addrspace=CONSTANT_ADDRESS_SPACE)
        packet = call_intrinsic(builder, "llvm.amdgcn.dispatch.ptr", packet_type, [])
        i8 = ir.IntType(8)
        offset = DISPATCH_GRID_SIZE + 4 * axis
        grid_ptr = builder.gep(packet, [I32(offset)], inbounds=True, source_etype=i8)
        grid = builder.load(grid_ptr, typ=I32, align=4)
        if axis != 0:
            return grid
        size_ptr = builder.gep(packet, [I32(DISPATCH_WORKGROUP_SIZE_X)], True, source_etype=i8)
        size = builder.zext(builder.load(size_ptr, typ=ir.IntType(16), align=4), I32)
        return builder.udiv(grid, size)

    # Synchronization and cross-lane exchange ---------------------------------------------------

    def barrier(self, builder: ir.IRBuilder) -> None:
        builder.fence("release", "workgroup")
        call_intrinsic(builder, "llvm.amdgcn.s.barrier", ir.VoidType(), [])
        builder.fence("acquire", "workgroup")

    def lane_id(self, builder: ir.IRBuilder) -> ir.Value:
        """The lane within the wavefront (`mbcnt` of all lanes below this one)."""
        low = call_intrinsic(builder, "llvm.amdgcn.mbcnt.lo", I32, [I32(-1), I32(0)])
        if self.threads_per_warp == 32:
            return low
        return call_intrinsic(builder, "llvm.amdgcn.mbcnt.hi", I32, [I32(-1), low])

    def _bpermute(self, builder: ir.IRBuilder, value: ir.Value, lane: ir.Value) -> ir.Value:
        if value.type not in (F32, I32):
            raise TypeError(f"shuffles take i32 or f32 values, got {value.type}")
        data = builder.bitcast(value, I32) if value.type == F32 else value
        address = builder.shl(lane, I32(2))
        result = call_intrinsic(builder, "llvm.amdgcn.ds.bpermute", I32, [address, data])
        return builder.bitcast(result, F32) if value.type == F32 else result

    def shuffle_xor(self, builder: ir.IRBuilder, value: ir.Value, lane_mask: int) -> ir.Value:
        source = builder.xor(self.lane_id(builder), I32(lane_mask))
        return self._bpermute(builder, value, source)

    def shuffle_up(self, builder: ir.IRBuilder, value: ir.Value, delta: int) -> ir.Value:
        lane = self.lane_id(builder)
        below = builder.icmp_unsigned("<", lane, I32(delta))
        source = builder.select(below, lane, builder.sub(lane, I32(delta)))
        return self._bpermute(builder, value, source)

    def shuffle_idx(self, builder: ir.IRBuilder, value: ir.Value, lane: ir.Value) -> ir.Value:
        return self._bpermute(builder, value, lane)

    # Math and printing -------------------------------------------------------------------------

    def math(
        self, builder: ir.IRBuilder, name: str, args: Sequence[ir.Value], dtype: str
    ) -> ir.Value | None:
        if dtype == "bf16" or dtype not in FLOAT_TYPES:
            return None  # bf16: the core computes it in f32
        if name in NATIVE_INTRINSICS:
            return native_intrinsic(builder, name, args, dtype)
        if dtype == "f64":
            if name == "sqrt":
                return call_intrinsic(builder, "llvm.sqrt.f64", F64, args)
            if name == "rsqrt":
                return builder.fdiv(F64(1.0), call_intrinsic(builder, "llvm.sqrt.f64", F64, args))
            return None
        if dtype == "f16":
            return None  # the core computes it in f32
        return self._f32(builder, name, args)

    def _f32(self, builder: ir.IRBuilder, name: str, args: Sequence[ir.Value]) -> ir.Value | None:
        (x, *_) = args
        intrinsic = _F32_INTRINSICS.get(name)
        if intrinsic is not None:
            return call_intrinsic(builder, f"{intrinsic}.f32", F32, [x])
        if name == "exp":
            return call_intrinsic(builder, "llvm.exp2.f32", F32, [builder.fmul(x, F32(LOG2E))])
        if name == "log":
            return builder.fmul(call_intrinsic(builder, "llvm.log2.f32", F32, [x]), F32(LN2))
        return None

    def printf(
        self, builder: ir.IRBuilder, module: ir.Module, fmt: str, args: Sequence[ir.Value]
    ) -> None:
        """Nothing: AMD's device printf needs ROCm's device libraries (see the module doc)."""
        if self._warned_printf:
            return
        self._warned_printf = True
        warnings.warn(
            f"kernel {module.name}: the amd backend does not print from the device (printf "
            "needs ROCm's device libraries, which tilec does not link); tl.device_print output "
            "and assertion messages are dropped (failed assertions still abort the kernel). "
            "Run on the interp backend to see them.",
            RuntimeWarning,
            stacklevel=2,
        )

    # Matrix cores ------------------------------------------------------------------------------

    def mma(
        self,
        builder: ir.IRBuilder,
        instruction: Any,
        a: Sequence[ir.Value],
        b: Sequence[ir.Value],
        c: Sequence[ir.Value],
    ) -> list[ir.Value]:
        """One MFMA / WMMA (`tilec_amd.matrix_cores`, checked against the arch's table): `a`
        and `b` are the lane's `kWidth` operand elements (not packed registers), `c` its
        accumulator elements."""
        from tilec_amd.matrix_cores import emit  # deferred: only dots on matrix cores need it

        return emit(builder, self.arch, instruction, a, b, c)


__all__ = ["DATA_LAYOUT", "TRIPLE", "AmdTargetInfo", "StringFunctionAttributes"]
