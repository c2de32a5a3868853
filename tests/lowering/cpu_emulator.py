"""Run lowered kernels on the CPU: a test `TargetInfo` whose ids, barriers and shuffles are calls
into Python, and a launcher that runs every thread of a block as an OS thread.

The kernel's LLVM IR is compiled with llvmlite's MCJIT for a fixed baseline x86-64 machine (no
FMA, whatever the host has: `target_machine`); `@global_smem` is a NumPy
buffer, and address spaces 1 and 3 are ordinary host memory. A block's threads run at once
(`threading.Barrier` for `barrier`), so kernels that go through shared memory or exchange values
across lanes run as they would on a GPU, slowly. Only for tests of the lowering's index math.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import functools
import threading
from collections.abc import Sequence

import llvmlite.binding as llvm
import numpy as np
import pytest
from llvmlite import ir

from tilec.lowering.context import F32, I32
from tilec.lowering.target import TargetInfo
from tilec_interp.dtypes import bf16_round, bf16_to_bits

SHARED_BYTES = 1 << 18
"""The emulated shared memory: as much as a Hopper block may have (227 KiB) and more, aligned to
its own size so that the low 18 bits of an address are its offset (what wgmma descriptors keep)."""

_I32_FN = ctypes.CFUNCTYPE(ctypes.c_int32)
_I32_I32_FN = ctypes.CFUNCTYPE(ctypes.c_int32, ctypes.c_int32)
_VOID_FN = ctypes.CFUNCTYPE(None)
_SHUFFLE_FN = ctypes.CFUNCTYPE(ctypes.c_int32, ctypes.c_int32, ctypes.c_int32, ctypes.c_int32)
_F32_F32_FN = ctypes.CFUNCTYPE(ctypes.c_float, ctypes.c_float)
_F32_F64_FN = ctypes.CFUNCTYPE(ctypes.c_float, ctypes.c_double)


def _bf16_in_xmm(value: float) -> float:
    """`value` rounded to bf16 (nearest even), as the x86 ABI returns a bf16: its bits in the
    low half of a float register."""
    bits = int(bf16_to_bits(bf16_round(np.array([value], np.float64)))[0])
    return float(np.array([bits], np.uint32).view(np.float32)[0])


def _extern(builder: ir.IRBuilder, name: str, ret: ir.Type, args: Sequence[ir.Value]) -> ir.Value:
    module = builder.module
    fn = module.globals.get(name) or ir.Function(
        module, ir.FunctionType(ret, [a.type for a in args]), name
    )
    return builder.call(fn, list(args))


def entry_alloca(builder: ir.IRBuilder, ty: ir.Type) -> ir.Value:
    """A stack slot of `ty` in the function's entry block (before its terminator, once it has
    one), so that a call inside a loop reuses it rather than growing the stack."""
    entry = builder.function.entry_basic_block
    at = ir.IRBuilder(entry)
    if entry.is_terminated:
        at.position_before(entry.terminator)
    return at.alloca(ty)


class HostTargetInfo(TargetInfo):
    """Ids, barriers and shuffles as calls to `tilec_emu_*` functions (see the module doc)."""

    triple = ""
    data_layout = ""

    def __init__(self, threads_per_warp: int = 32):
        super().__init__("host", threads_per_warp)

    def define_kernel(self, module: ir.Module, name: str, fn_type: ir.FunctionType) -> ir.Function:
        return ir.Function(module, fn_type, name)

    def finalize_kernel(self, module, fn, num_threads, shared_bytes) -> None:
        pass

    def thread_id(self, builder: ir.IRBuilder) -> ir.Value:
        return _extern(builder, "tilec_emu_tid", I32, [])

    def block_id(self, builder: ir.IRBuilder, axis: int) -> ir.Value:
        return _extern(builder, "tilec_emu_ctaid", I32, [I32(axis)])

    def num_blocks(self, builder: ir.IRBuilder, axis: int) -> ir.Value:
        return _extern(builder, "tilec_emu_nctaid", I32, [I32(axis)])

    def barrier(self, builder: ir.IRBuilder) -> None:
        _extern(builder, "tilec_emu_barrier", ir.VoidType(), [])

    def _shuffle(self, builder: ir.IRBuilder, kind: int, value: ir.Value, arg: ir.Value):
        bits = builder.bitcast(value, I32) if value.type == F32 else value
        result = _extern(builder, "tilec_emu_shuffle", I32, [I32(kind), bits, arg])
        return builder.bitcast(result, F32) if value.type == F32 else result

    def shuffle_xor(self, builder, value, lane_mask):
        return self._shuffle(builder, 0, value, I32(lane_mask))

    def shuffle_up(self, builder, value, delta):
        return self._shuffle(builder, 1, value, I32(delta))

    def shuffle_idx(self, builder, value, lane):
        return self._shuffle(builder, 2, value, lane)

    def printf(self, builder, module, fmt, args) -> None:
        raise NotImplementedError("printf is not emulated")

    def trap(self, builder: ir.IRBuilder) -> None:
        _extern(builder, "llvm.trap", ir.VoidType(), [])


class _Block:
    """The state the callbacks of one running block read."""

    def __init__(self, num_threads: int, lanes: int):
        self.barrier = threading.Barrier(num_threads)
        self.slots = [0] * num_threads
        self.lanes = lanes
        self.local = threading.local()
        self.ctaid = (0, 0, 0)
        self.nctaid = (1, 1, 1)

    def shuffle(self, kind: int, value: int, arg: int) -> int:
        tid = self.local.tid
        self.slots[tid] = value
        self.barrier.wait()
        lane, base = tid % self.lanes, tid - tid % self.lanes
        source = (lane ^ arg, lane - arg if lane >= arg else lane, arg % self.lanes)[kind]
        result = self.slots[base + source]
        self.barrier.wait()
        return result


_state: list[_Block] = []


def _callbacks() -> dict[str, object]:
    def current() -> _Block:
        return _state[-1]

    return {
        "tilec_emu_tid": _I32_FN(lambda: current().local.tid),
        "tilec_emu_ctaid": _I32_I32_FN(lambda axis: current().ctaid[axis]),
        "tilec_emu_nctaid": _I32_I32_FN(lambda axis: current().nctaid[axis]),
        "tilec_emu_barrier": _VOID_FN(lambda: current().barrier.wait()),
        "tilec_emu_shuffle": _SHUFFLE_FN(lambda k, v, a: current().shuffle(k, v, a)),
        # LLVM's x86 code calls these compiler-rt routines for bf16; libgcc has none.
        "__truncsfbf2": _F32_F32_FN(_bf16_in_xmm),
        "__truncdfbf2": _F32_F64_FN(_bf16_in_xmm),
    }


@functools.cache
def _engine_setup() -> tuple[dict[str, object], np.ndarray]:
    llvm.initialize_native_target()
    llvm.initialize_native_asmprinter()
    llvm.load_library_permanently(ctypes.util.find_library("gcc_s"))  # f16 conversions
    callbacks = _callbacks()
    for name, fn in callbacks.items():
        llvm.add_symbol(name, ctypes.cast(fn, ctypes.c_void_p).value)
    backing = np.zeros(2 * SHARED_BYTES, np.uint8)
    skip = -backing.ctypes.data % SHARED_BYTES
    shared = backing[skip : skip + SHARED_BYTES]
    llvm.add_symbol("global_smem", shared.ctypes.data)
    return callbacks, shared


_engines: list[object] = []

CPU = "x86-64"
FEATURES = "+sse2,-sse4.1,-avx,-avx2,-avx512f,-fma,-fma4,-f16c"
"""The machine the emulator compiles for, whatever the host: baseline x86-64 (SSE2 floats, no
FMA, 128-bit vectors), so that no host feature reaches the results. Without an FMA
instruction LLVM cannot contract a `contract`-marked multiply and add (the lowering marks none
unless the test's `TargetInfo` sets `fp_fusion`): each operation rounds, as in the
interpreter; `llvm.fma` (`tl.fma`) stays one rounding, through libm's `fmaf`/`fma`."""


def target_machine(cpu: str = CPU, features: str = FEATURES) -> llvm.TargetMachine:
    """The emulator's LLVM target machine: `cpu` and `features`, never the host's (tests pass
    others to show what they would change)."""
    _engine_setup()  # LLVM's native target registered
    triple = llvm.get_process_triple()
    if not triple.startswith("x86_64"):
        pytest.skip(f"the CPU emulator runs on x86-64 hosts (this one is {triple})")
    return llvm.Target.from_triple(triple).create_target_machine(cpu=cpu, features=features)


def compile_kernel(llvm_ir: str, name: str, machine: llvm.TargetMachine | None = None) -> int:
    """JIT-compile `llvm_ir` for the emulator's fixed machine (`target_machine()`); the address
    of kernel `name`."""
    _engine_setup()
    module = llvm.parse_assembly(llvm_ir)
    module.verify()
    engine = llvm.create_mcjit_compiler(module, machine or target_machine())
    engine.finalize_object()
    _engines.append((engine, module))
    return engine.get_function_address(name)


def launch(
    address: int,
    params: Sequence[str],
    args: Sequence[object],
    grid: tuple[int, ...],
    num_threads: int,
    threads_per_warp: int = 32,
) -> None:
    """Run the kernel at `address` over `grid` blocks of `num_threads` threads; NumPy arrays
    are passed by address and written in place."""
    ctypes_args = [_ctype(p) for p in params]
    fn = ctypes.CFUNCTYPE(None, *ctypes_args)(address)
    values = [
        a.ctypes.data if isinstance(a, np.ndarray) else a
        for a in args  # type: ignore[union-attr]
    ]
    grid3 = tuple(grid) + (1,) * (3 - len(grid))
    for z in range(grid3[2]):
        for y in range(grid3[1]):
            for x in range(grid3[0]):
                _run_block(fn, values, (x, y, z), grid3, num_threads, threads_per_warp)


def _run_block(fn, values, ctaid, nctaid, num_threads, lanes) -> None:
    block = _Block(num_threads, lanes)
    block.ctaid, block.nctaid = ctaid, nctaid
    _state.append(block)
    errors: list[BaseException] = []

    def thread(tid: int) -> None:
        block.local.tid = tid
        try:
            fn(*values)
        except BaseException as error:
            errors.append(error)

    try:
        threads = [threading.Thread(target=thread, args=(t,)) for t in range(num_threads)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    finally:
        _state.pop()
    if errors:
        raise errors[0]


def _ctype(param: str):
    if param.startswith("*"):
        return ctypes.c_void_p
    return {
        "i1": ctypes.c_bool, "i8": ctypes.c_int8, "i16": ctypes.c_int16, "i32": ctypes.c_int32,
        "i64": ctypes.c_int64, "u8": ctypes.c_uint8, "u16": ctypes.c_uint16,
        "u32": ctypes.c_uint32, "u64": ctypes.c_uint64, "fp32": ctypes.c_float,
        "fp64": ctypes.c_double,
    }[param]  # fmt: skip
