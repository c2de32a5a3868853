"""Code generation of the host CPU vendor: LLVM IR -> x86-64 assembly and an ELF object.

The machine is fixed, never the host's: baseline x86-64 (SSE2 floats, 128-bit vectors, no FMA
instruction), so the same kernel gives the same code and the same results on every x86-64
machine. Without an FMA instruction LLVM cannot contract a multiply and an add, whatever
`enable_fp_fusion` says: every operation rounds once, as in the interpreter; `tl.fma` is one
rounding through libm's `fma`/`fmaf`.

The kernel's shared memory (`@global_smem`) is renamed to the runtime's buffer
(`RUNTIME_SHARED_MEMORY`). The object uses the large code model, so the JIT (`tilec_hostcpu.driver`) can place it anywhere
and link it to the runtime's symbols and the C library's (`fmaf`, `floorf`, `memcpy`).
"""

from __future__ import annotations

import functools

import llvmlite.binding as llvm

from tilec.lowering.llvm_codegen import (
    LLVM_LOCK,
    InvalidLLVMIR,
    check_opt_level,
    initialize_llvm,
    optimized_module,
)

TRIPLE = "x86_64-unknown-linux-gnu"
CPU = "x86-64"
FEATURES = "+sse2,-sse3,-ssse3,-sse4.1,-sse4.2,-avx,-avx2,-avx512f,-fma,-fma4,-f16c"
"""Baseline x86-64: no host feature (AVX, FMA, F16C) reaches the code or the results."""


SHARED_MEMORY = "global_smem"
"""The kernel ABI's name of the block's shared memory (an external global the lowering uses)."""
RUNTIME_SHARED_MEMORY = "tilec_hostcpu_shared"
"""Its name in the object: the runtime's buffer (a name of this vendor's own, so that no other
JIT in the process resolves it to its buffer)."""


class CodegenError(RuntimeError):
    """LLVM rejected a kernel; the message names it and gives LLVM's diagnostic."""


CODEGEN_LEVEL = 0
"""LLVM's code generation level, whatever `opt_level` (which the IR pipeline runs at): fast
instruction selection and register allocation. Kernels are long blocks of straight-line code
(every element of a block, unrolled) in which the greedy register allocator and the DAG
instruction selector took two thirds of a compile; after the IR pipeline they had little left
to gain (the fused-attention tutorial's configs: code generation 5-6x faster, launches 12%
slower)."""


@functools.cache
def target_machine() -> llvm.TargetMachine:
    """The fixed machine (`CPU`, `FEATURES`) that compiles kernels to objects (cached)."""
    return _machine(CODEGEN_LEVEL, "large")


def jit_target_machine() -> llvm.TargetMachine:
    """A new machine for an execution engine: the engine owns it and deletes it with itself,
    so every engine gets its own."""
    llvm.initialize_native_target()  # the JIT's own code generator (MCJIT)
    llvm.initialize_native_asmprinter()
    llvm.initialize_native_asmparser()  # the runtime's switch is assembly (`tilec_hostcpu.fibers`)
    return _machine(2, "jitdefault")


def _machine(opt_level: int, codemodel: str) -> llvm.TargetMachine:
    initialize_llvm()
    target = llvm.Target.from_triple(TRIPLE)
    return target.create_target_machine(
        cpu=CPU,
        features=FEATURES,
        opt=check_opt_level(opt_level),
        reloc="static",
        codemodel=codemodel,
    )


def compile_llir(llvm_ir: str, name: str, opt_level: int = 1) -> tuple[str, bytes]:
    """Optimize `llvm_ir` (kernel `name`) and generate its code once: its assembly, and its ELF
    object assembled from that assembly (LLVM's integrated assembler takes a tenth of the time
    a second code generation for the object would)."""
    with LLVM_LOCK:  # llvmlite's global state is not thread-safe
        machine = target_machine()
        try:
            module = optimized_module(llvm_ir, machine, TRIPLE, opt_level)
            shared = module.get_global_variable(SHARED_MEMORY) if SHARED_MEMORY in llvm_ir else None
            if shared is not None:
                shared.name = RUNTIME_SHARED_MEMORY
            assembly = machine.emit_assembly(module)
            return assembly, machine.emit_object(assembly_module(assembly))
        except (InvalidLLVMIR, RuntimeError) as error:
            raise CodegenError(f"LLVM could not compile kernel {name}: {error}") from None


def assembly_module(assembly: str) -> llvm.ModuleRef:
    """An LLVM module of nothing but `assembly` (module-level assembly): the object a machine
    emits from it is that assembly, assembled."""
    llvm.initialize_native_asmparser()
    lines = "".join(f"module asm {_quoted(line)}\n" for line in assembly.splitlines())
    return llvm.parse_assembly(f'target triple = "{TRIPLE}"\n{lines}')


def _quoted(line: str) -> str:
    """`line` as an LLVM IR string (quotes, backslashes and unprintable characters escaped)."""
    escaped = (c if c.isprintable() and c not in '"\\' else f"\\{ord(c):02X}" for c in line)
    return '"' + "".join(escaped) + '"'
