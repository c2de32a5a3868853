"""The "device runtime" of the host CPU vendor: the threads of a block as fibers.

A block's threads must be able to meet at barriers and exchange values (shuffles). Here each
thread of a block is a fiber (its own stack and saved stack pointer) and one OS thread runs
them all, in turns: a fiber runs until it reaches a barrier (or ends), then the next one runs;
when every fiber has had its turn, all of them stand at the same barrier and the next round
resumes them. This is deterministic (threads always run in the same order, whatever the
machine) and cheap: a switch (`SWITCH`, a dozen x86-64 instructions) saves the callee-saved
registers on the running stack and loads the other stack's, with no OS thread and no system
call (glibc's `swapcontext` also saves the signal mask with a system call; it made the switches
two thirds of a launch's time).

The runtime is LLVM IR built with llvmlite and JIT-compiled once per process (`runtime()`); its
symbols are published with `llvm.add_symbol`, so the kernels' object files, which reference
them as external symbols, link against them when they are loaded:

- `tilec_hostcpu_thread` (i32), `tilec_hostcpu_block` and `tilec_hostcpu_grid` ([3 x i32]):
  the running thread's id, its block's ids and the grid, read by the kernels
  (`HostCpuTargetInfo.thread_id`, ...);
- `tilec_hostcpu_slots` (ptr): the slots ([MAX_THREADS x i32]) through which shuffles exchange
  values in this round; the runtime flips it between two buffers after every round, so a
  shuffle needs one barrier (a buffer is written again two rounds later, when every thread has
  read it); `tilec_hostcpu_shared`: the block's shared memory (the kernels' `@global_smem`,
  renamed by `tilec_hostcpu.codegen`);
- `tilec_hostcpu_barrier()`: the current fiber's turn ends (back to the scheduler);
- `tilec_hostcpu_trap()`: the launch stops (a failed `tl.device_assert`);
- `tilec_hostcpu_run(entry, params, gx, gy, gz, threads, contexts, stacks, stack_bytes,
  done)`: runs `entry(params)` on every thread of every block; 0, or 1 after a trap.
  `contexts` holds each fiber's saved stack pointer.

The switch is x86-64 System V code (the driver runs only there: `is_available`).
"""

from __future__ import annotations

import ctypes
import ctypes.util
import functools
import mmap
import threading

import llvmlite.binding as llvm
from llvmlite import ir

from tilec.lowering.context import BF16, F32, F64
from tilec_hostcpu import codegen

_LIBC = ctypes.CDLL(None, use_errno=True)
MAX_THREADS = 1024
"""The most threads a block may have (32 warps of 32 lanes)."""
SWITCH = """
.text
.p2align 4
.globl tilec_hostcpu_switch
.type tilec_hostcpu_switch,@function
tilec_hostcpu_switch:
  pushq %rbp
  pushq %rbx
  pushq %r12
  pushq %r13
  pushq %r14
  pushq %r15
  movq %rsp, (%rdi)
  movq %rsi, %rsp
  popq %r15
  popq %r14
  popq %r13
  popq %r12
  popq %rbx
  popq %rbp
  retq
.size tilec_hostcpu_switch, .-tilec_hostcpu_switch
"""
"""`void tilec_hostcpu_switch(void **save, void *load)`: push the callee-saved registers, store
the stack pointer at `save`, continue on the stack `load` (popping what its own switch pushed).
The caller saves the other registers (an ordinary call); MXCSR and the x87 control word, also
callee-saved, are never changed by kernels."""
SAVED_REGISTERS = 6
"""What `SWITCH` pushes below the return address."""
SHARED_BYTES = 64 * 1024
"""The block's shared memory: as much as the largest target has (`tilec_hostcpu.backend.ARCHS`)."""
STACK_BYTES = 1 << 20
"""The stack of one fiber (mapped lazily: only the pages a kernel touches take memory)."""

I8 = ir.IntType(8)
I32 = ir.IntType(32)
I64 = ir.IntType(64)
PTR = ir.PointerType()
VOID = ir.VoidType()
RUN = ctypes.CFUNCTYPE(
    ctypes.c_int32, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int32, ctypes.c_int32,
    ctypes.c_int32, ctypes.c_int32, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int64,
    ctypes.c_void_p,
)  # fmt: skip


def build_runtime() -> ir.Module:
    """The runtime module (see the module doc)."""
    module = ir.Module(name="tilec_hostcpu_runtime")
    module.triple = codegen.TRIPLE

    def variable(name: str, ty: ir.Type) -> ir.GlobalVariable:
        gv = ir.GlobalVariable(module, ty, name)
        gv.initializer = ir.Constant(ty, None)
        gv.align = 4096 if name == "tilec_hostcpu_shared" else 16
        return gv

    for name, ty in VARIABLES.items():
        variable(name, ty)
    g = module.globals
    switch = _declare(module, "tilec_hostcpu_switch", VOID, [PTR, PTR])

    def end_turn(b: ir.IRBuilder) -> None:
        scheduler = b.load(g["tilec_hostcpu_scheduler"], typ=PTR)
        b.call(switch, [b.load(g["tilec_hostcpu_current"], typ=PTR), scheduler])

    b = ir.IRBuilder(_declare(module, "tilec_hostcpu_barrier", VOID, []).append_basic_block())
    end_turn(b)
    b.ret_void()

    b = ir.IRBuilder(_declare(module, "tilec_hostcpu_trap", VOID, []).append_basic_block())
    b.store(I32(1), g["tilec_hostcpu_status"])
    end_turn(b)  # never resumed
    b.unreachable()

    # a fiber: the kernel's entry, then the thread is done and hands back for good
    fiber = _declare(module, "tilec_hostcpu_fiber", VOID, [])
    b = ir.IRBuilder(fiber.append_basic_block())
    entry_type = ir.PointerType(ir.FunctionType(VOID, [PTR]))  # llvmlite calls through it
    entry = b.load(g["tilec_hostcpu_entry"], typ=entry_type)
    b.call(entry, [b.load(g["tilec_hostcpu_params"], typ=PTR)])
    done = b.load(g["tilec_hostcpu_done"], typ=PTR)
    b.store(I8(1), b.gep(done, [b.load(g["tilec_hostcpu_thread"], typ=I32)], source_etype=I8))
    end_turn(b)
    b.unreachable()

    _build_run(module, fiber)
    _build_bf16_conversions(module)
    return module


CONVERSIONS = ("__truncsfbf2", "__truncdfbf2")
"""The bf16 roundings LLVM's x86 code calls (compiler-rt's; the GNU C library and libgcc have
none): defined here, round to nearest even, NaN stays a quiet NaN."""


def _build_bf16_conversions(module: ir.Module) -> None:
    """`__truncsfbf2(float)` and `__truncdfbf2(double)` (see `CONVERSIONS`)."""

    def round_f32_bits(b: ir.IRBuilder, bits: ir.Value) -> ir.Value:
        magnitude = b.and_(bits, I32(0x7FFFFFFF))
        nan = b.icmp_unsigned(">", magnitude, I32(0x7F800000))
        quiet = b.or_(b.lshr(bits, I32(16)), I32(0x40))
        even = b.and_(b.lshr(bits, I32(16)), I32(1))
        rounded = b.lshr(b.add(b.add(bits, I32(0x7FFF)), even), I32(16))
        return b.bitcast(b.trunc(b.select(nan, quiet, rounded), ir.IntType(16)), BF16)

    from_f32 = _declare(module, "__truncsfbf2", BF16, [F32])
    b = ir.IRBuilder(from_f32.append_basic_block())
    b.ret(round_f32_bits(b, b.bitcast(from_f32.args[0], I32)))

    # f64 -> f32 rounded to odd, then f32 -> bf16 to nearest even: one correct rounding
    from_f64 = _declare(module, "__truncdfbf2", BF16, [F64])
    b = ir.IRBuilder(from_f64.append_basic_block())
    (d,) = from_f64.args
    f = b.fptrunc(d, F32)
    back = b.fpext(f, F64)
    exact = b.fcmp_unordered("==", back, d)  # NaN counts as exact: it stays NaN
    fabs = ir.Function(module, ir.FunctionType(F64, [F64]), "llvm.fabs.f64")
    overshoot = b.fcmp_ordered(">", b.call(fabs, [back]), b.call(fabs, [d]))
    bits = b.bitcast(f, I32)
    toward_zero = b.select(overshoot, b.sub(bits, I32(1)), bits)
    odd = b.select(exact, bits, b.or_(toward_zero, I32(1)))
    b.ret(round_f32_bits(b, odd))


VARIABLES = {
    "tilec_hostcpu_thread": I32,
    "tilec_hostcpu_block": ir.ArrayType(I32, 3),
    "tilec_hostcpu_grid": ir.ArrayType(I32, 3),
    "tilec_hostcpu_exchange": ir.ArrayType(I32, 2 * MAX_THREADS),
    "tilec_hostcpu_slots": PTR,
    "tilec_hostcpu_scheduler": PTR,
    "tilec_hostcpu_current": PTR,
    "tilec_hostcpu_status": I32,
    "tilec_hostcpu_entry": PTR,
    "tilec_hostcpu_params": PTR,
    "tilec_hostcpu_done": PTR,
    "tilec_hostcpu_shared": ir.ArrayType(I8, SHARED_BYTES),
}
"""The runtime's variables (see the module doc for the ones kernels read)."""


def _declare(module: ir.Module, name: str, ret: ir.Type, args: list[ir.Type]) -> ir.Function:
    return ir.Function(module, ir.FunctionType(ret, args), name)


def _build_run(module: ir.Module, fiber: ir.Function) -> None:
    """`i32 tilec_hostcpu_run(...)`: every block of the grid, x fastest; in each, a fresh
    fiber a thread, then rounds of turns until every thread is done (see the module doc)."""
    g = module.globals
    switch = module.globals["tilec_hostcpu_switch"]
    args = [PTR, PTR, I32, I32, I32, I32, PTR, PTR, I64, PTR]
    run = _declare(module, "tilec_hostcpu_run", I32, args)
    entry, params, gx, gy, gz, threads, contexts, stacks, stack_bytes, done = run.args
    b = ir.IRBuilder(run.append_basic_block("start"))
    live = b.alloca(I8)
    for name, value in (("entry", entry), ("params", params), ("done", done)):
        b.store(value, g[f"tilec_hostcpu_{name}"])
    b.store(I32(0), g["tilec_hostcpu_status"])
    for axis, size in enumerate((gx, gy, gz)):
        b.store(size, b.gep(g["tilec_hostcpu_grid"], [I32(0), I32(axis)]))
    slots = (
        b.gep(g["tilec_hostcpu_exchange"], [I32(0), I32(0)]),
        b.gep(g["tilec_hostcpu_exchange"], [I32(0), I32(MAX_THREADS)]),
    )
    b.store(slots[0], g["tilec_hostcpu_slots"])

    def saved_sp(t: ir.Value) -> ir.Value:
        return b.gep(contexts, [b.zext(t, I64)], source_etype=PTR)

    with _counted_loop(b, b.mul(b.mul(gx, gy), gz), "block") as index:
        ids = (b.urem(index, gx), b.urem(b.udiv(index, gx), gy), b.udiv(index, b.mul(gx, gy)))
        for axis, value in enumerate(ids):
            b.store(value, b.gep(g["tilec_hostcpu_block"], [I32(0), I32(axis)]))
        with _counted_loop(b, threads, "make") as t:
            # a fresh stack whose first switch "returns" into the fiber, as if it were called
            # (the stack 16-byte aligned before the return address) with zeroed registers
            top = b.gep(
                stacks, [b.mul(b.add(b.zext(t, I64), I64(1)), stack_bytes)], source_etype=I8
            )
            b.store(ir.Constant(PTR, None), b.gep(top, [I64(-1)], source_etype=PTR))
            b.store(fiber, b.gep(top, [I64(-2)], source_etype=PTR))
            for register in range(SAVED_REGISTERS):
                b.store(I64(0), b.gep(top, [I64(-3 - register)], source_etype=I64))
            b.store(b.gep(top, [I64(-2 - SAVED_REGISTERS)], source_etype=PTR), saved_sp(t))
            b.store(I8(0), b.gep(done, [t], source_etype=I8))
        rounds = b.append_basic_block("round")
        finished = b.append_basic_block("block_finished")
        b.branch(rounds)
        b.position_at_end(rounds)
        b.store(I8(0), live)
        with _counted_loop(b, threads, "turn") as t:
            waiting = b.icmp_unsigned(
                "==", b.load(b.gep(done, [t], source_etype=I8), typ=I8), I8(0)
            )
            with b.if_then(waiting):
                b.store(t, g["tilec_hostcpu_thread"])
                b.store(saved_sp(t), g["tilec_hostcpu_current"])
                b.call(switch, [g["tilec_hostcpu_scheduler"], b.load(saved_sp(t), typ=PTR)])
                status = b.load(g["tilec_hostcpu_status"], typ=I32)
                with b.if_then(b.icmp_unsigned("!=", status, I32(0)), likely=False):
                    b.ret(I32(1))
                still = b.xor(b.load(b.gep(done, [t], source_etype=I8), typ=I8), I8(1))
                b.store(b.or_(b.load(live, typ=I8), still), live)
        # the round is over: the next one's shuffles write the other buffer of slots
        first = b.icmp_unsigned("==", b.load(g["tilec_hostcpu_slots"], typ=PTR), slots[0])
        b.store(b.select(first, slots[1], slots[0]), g["tilec_hostcpu_slots"])
        b.cbranch(b.icmp_unsigned("!=", b.load(live, typ=I8), I8(0)), rounds, finished)
        b.position_at_end(finished)
    b.ret(I32(0))


class _counted_loop:
    """`with _counted_loop(builder, count, name) as i:` emits `for i in range(count)` (i32)."""

    def __init__(self, builder: ir.IRBuilder, count: ir.Value, name: str):
        self.b, self.count, self.name = builder, count, name

    def __enter__(self) -> ir.Value:
        b = self.b
        before = b.block
        self.head = b.append_basic_block(f"{self.name}_head")
        body = b.append_basic_block(f"{self.name}_body")
        self.exit = b.append_basic_block(f"{self.name}_exit")
        b.branch(self.head)
        b.position_at_end(self.head)
        self.index = b.phi(I32)
        self.index.add_incoming(I32(0), before)
        b.cbranch(b.icmp_unsigned("<", self.index, self.count), body, self.exit)
        b.position_at_end(body)
        return self.index

    def __exit__(self, *exc: object) -> None:
        b = self.b
        self.index.add_incoming(b.add(self.index, I32(1)), b.block)
        b.branch(self.head)
        b.position_at_end(self.exit)


class Runtime:
    """The compiled runtime of this process: `run` launches a grid (one launch at a time)."""

    def __init__(self) -> None:
        module = llvm.parse_assembly(str(build_runtime()))
        module.link_in(codegen.assembly_module(SWITCH))
        module.verify()
        self.engine = llvm.create_mcjit_compiler(module, codegen.jit_target_machine())
        self.engine.finalize_object()
        for name in (*VARIABLES, "tilec_hostcpu_barrier", "tilec_hostcpu_trap", *CONVERSIONS):
            llvm.add_symbol(name, self.engine.get_global_value_address(name))
        # f16 conversions (`__extendhfsf2`, `__truncsfhf2`, ...): libgcc's, exact IEEE roundings
        llvm.load_library_permanently(ctypes.util.find_library("gcc_s"))
        self._run = RUN(self.engine.get_function_address("tilec_hostcpu_run"))
        self.lock = threading.Lock()
        """Held by a launch: the runtime's variables are the running launch's."""
        self._threads = 0
        self._memory: list[object] = []
        self._addresses = (0, 0, 0)

    def variable(self, name: str, ctype: type) -> object:
        """The runtime variable `name` as a ctypes object of `ctype` (read after a launch)."""
        return ctype.from_address(self.engine.get_global_value_address(name))

    def _buffers(self, threads: int) -> tuple[int, int, int]:
        """Contexts, stacks and done flags for `threads` fibers (kept for later launches).
        The lowest page of each stack is made inaccessible: a fiber that overflows its stack
        faults there rather than writing into its neighbour's."""
        if threads > self._threads:
            stacks = mmap.mmap(-1, threads * STACK_BYTES)
            base = ctypes.addressof(ctypes.c_char.from_buffer(stacks))  # type: ignore[arg-type]
            for t in range(threads):
                if _LIBC.mprotect(ctypes.c_void_p(base + t * STACK_BYTES), mmap.PAGESIZE, 0):
                    raise OSError(ctypes.get_errno(), "mprotect of a fiber's guard page failed")
            contexts = (ctypes.c_void_p * threads)()
            done = (ctypes.c_uint8 * threads)()
            self._memory = [stacks, contexts, done]
            self._addresses = (ctypes.addressof(contexts), base, ctypes.addressof(done))
            self._threads = threads
        return self._addresses

    def run(self, entry: int, params: int, grid: tuple[int, int, int], threads: int) -> bool:
        """Run the kernel entry at `entry` with its packed `params` on every thread of `grid`;
        False where a thread trapped (the launch stopped there). Call with `lock` held."""
        contexts, stacks, done = self._buffers(threads)
        status = self._run(entry, params, *grid, threads, contexts, stacks, STACK_BYTES, done)
        return status == 0


@functools.cache
def runtime() -> Runtime:
    """The process's runtime, compiled on first use."""
    return Runtime()
