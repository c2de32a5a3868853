"""`HostCpuTargetInfo`: what the core LLVM lowering asks of the host CPU vendor.

Every method emits LLVM IR with the `llvmlite.ir.IRBuilder` it is given. Ids are loads of the
runtime's variables and barriers calls into the runtime (`tilec_hostcpu.fibers`); shuffles go
through memory: every thread writes its value into its slot of this round's
`tilec_hostcpu_slots`, the block meets at a barrier, and each reads the slot of its source lane
(the runtime gives the next round the other buffer of slots, so no second barrier is needed
before they are written again). Math is the core's (the `TargetInfo.math` default: LLVM intrinsics
and the core's expansions, the same results on every machine) but for f32 `rsqrt`; global loads and stores are the
defaults (plain loads and stores: cache hints change speed, not results).

The kernel's ABI on this vendor: `finalize_kernel` adds an entry point `<kernel>.entry(params)`
that takes the launch's `void *params[]` (one 8-byte slot a parameter, `tilec.runtime.packing.
Packer`'s layout, the same as CUDA's kernelParams), reads each parameter from its slot and calls
the kernel. The driver calls that entry on every thread.
"""

from __future__ import annotations

from collections.abc import Sequence

from llvmlite import ir

from tilec.lowering.context import F32, F64, I32, call_intrinsic
from tilec.lowering.target import TargetInfo
from tilec_hostcpu import codegen

PTR = ir.PointerType()
I8 = ir.IntType(8)
ENTRY_SUFFIX = ".entry"
"""The kernel `k`'s entry point is `k.entry`."""


class HostCpuTargetInfo(TargetInfo):
    """Ids, barriers and shuffles on the runtime's fibers; printf is the C library's."""

    triple = codegen.TRIPLE
    data_layout = ""  # the code generation sets the fixed machine's
    sync_scopes = {"cta": None, "gpu": None, "sys": None}  # x86 has one scope: the system
    inline_asm_constraints = "rqQabcdSDmin"  # x86's general registers, memory, immediates

    # Kernel definition -----------------------------------------------------------------------

    def define_kernel(self, module: ir.Module, name: str, fn_type: ir.FunctionType) -> ir.Function:
        module.triple = self.triple
        return ir.Function(module, fn_type, name)

    def finalize_kernel(
        self, module: ir.Module, fn: ir.Function, num_threads: int, shared_bytes: int
    ) -> None:
        """Add the entry point `<kernel>.entry(void **params)` (see the module doc)."""
        entry = ir.Function(module, ir.FunctionType(ir.VoidType(), [PTR]), fn.name + ENTRY_SUFFIX)
        b = ir.IRBuilder(entry.append_basic_block())
        (params,) = entry.args
        values = []
        for index, arg in enumerate(fn.args):
            slot = b.load(b.gep(params, [I32(index)], source_etype=PTR), typ=PTR)
            if arg.type == ir.IntType(1):  # an i1 travels as one byte
                values.append(b.trunc(b.load(slot, typ=I8), arg.type))
            else:
                values.append(b.load(slot, typ=arg.type))
        b.call(fn, values)
        b.ret_void()

    # Ids ---------------------------------------------------------------------------------------

    def thread_id(self, builder: ir.IRBuilder) -> ir.Value:
        return builder.load(_variable(builder.module, "tilec_hostcpu_thread", I32), typ=I32)

    def block_id(self, builder: ir.IRBuilder, axis: int) -> ir.Value:
        return _read_xyz(builder, "tilec_hostcpu_block", axis)

    def num_blocks(self, builder: ir.IRBuilder, axis: int) -> ir.Value:
        return _read_xyz(builder, "tilec_hostcpu_grid", axis)

    # Synchronization and cross-lane exchange ---------------------------------------------------

    def barrier(self, builder: ir.IRBuilder) -> None:
        call_intrinsic(builder, "tilec_hostcpu_barrier", ir.VoidType(), [])

    def shuffle_xor(self, builder: ir.IRBuilder, value: ir.Value, lane_mask: int) -> ir.Value:
        return self._exchange(builder, value, lambda lane: builder.xor(lane, I32(lane_mask)))

    def shuffle_up(self, builder: ir.IRBuilder, value: ir.Value, delta: int) -> ir.Value:
        def source(lane: ir.Value) -> ir.Value:
            below = builder.icmp_unsigned("<", lane, I32(delta))
            return builder.select(below, lane, builder.sub(lane, I32(delta)))

        return self._exchange(builder, value, source)

    def shuffle_idx(self, builder: ir.IRBuilder, value: ir.Value, lane: ir.Value) -> ir.Value:
        return self._exchange(builder, value, lambda _: lane)

    def _exchange(self, builder: ir.IRBuilder, value: ir.Value, source) -> ir.Value:
        """`value` of the lane `source(lane)` of this thread's warp, through the slots."""
        if value.type not in (I32, F32):
            raise TypeError(f"shuffles take i32 or f32 values, got {value.type}")
        b = builder
        slots = b.load(_variable(b.module, "tilec_hostcpu_slots", PTR), typ=PTR)
        tid = self.thread_id(b)
        lanes = I32(self.threads_per_warp)
        lane = b.urem(tid, lanes)
        bits = b.bitcast(value, I32) if value.type == F32 else value
        b.store(bits, b.gep(slots, [tid], source_etype=I32))
        self.barrier(b)
        src = b.add(b.sub(tid, lane), b.urem(source(lane), lanes))
        result = b.load(b.gep(slots, [src], source_etype=I32), typ=I32)
        return b.bitcast(result, F32) if value.type == F32 else result

    # Math --------------------------------------------------------------------------------------

    def math(
        self, builder: ir.IRBuilder, name: str, args: Sequence[ir.Value], dtype: str
    ) -> ir.Value | None:
        """f32 `rsqrt` in f64, rounded once (within an ulp, where 1 / sqrt(x) in f32 rounds
        twice); everything else the core's (None)."""
        if name != "rsqrt" or dtype != "f32":
            return None
        wide = builder.fpext(args[0], F64)
        root = call_intrinsic(builder, "llvm.sqrt.f64", F64, [wide])
        return builder.fptrunc(builder.fdiv(F64(1.0), root), F32)

    # Printing and traps ------------------------------------------------------------------------

    def printf(
        self, builder: ir.IRBuilder, module: ir.Module, fmt: str, args: Sequence[ir.Value]
    ) -> None:
        """The C library's printf (the driver flushes C's stdout after each launch)."""
        printf = module.globals.get("printf") or ir.Function(
            module, ir.FunctionType(I32, [PTR], var_arg=True), "printf"
        )
        data = bytearray(fmt.encode() + b"\0")
        text = ir.GlobalVariable(module, ir.ArrayType(I8, len(data)), module.get_unique_name("fmt"))
        text.initializer = ir.Constant(ir.ArrayType(I8, len(data)), data)
        text.global_constant = True
        text.linkage = "internal"
        builder.call(printf, [text, *args])

    def trap(self, builder: ir.IRBuilder) -> None:
        """Stop the launch (the driver raises an error naming the thread)."""
        call_intrinsic(builder, "tilec_hostcpu_trap", ir.VoidType(), [])


def _variable(module: ir.Module, name: str, ty: ir.Type) -> ir.GlobalVariable:
    """The runtime's variable `name`, declared in `module` on first use."""
    gv = module.globals.get(name)
    if gv is None:
        gv = ir.GlobalVariable(module, ty, name)
        gv.linkage = "external"
    return gv


def _read_xyz(builder: ir.IRBuilder, name: str, axis: int) -> ir.Value:
    xyz = _variable(builder.module, name, ir.ArrayType(I32, 3))
    return builder.load(builder.gep(xyz, [I32(0), I32(axis)]), typ=I32)
