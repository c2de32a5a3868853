"""AMD code generation: LLVM IR -> AMDGCN assembly and object (llvmlite's AMDGPU target) ->
hsaco (`ld.lld -shared`, the HSA code object the ROCm runtime loads).

LLVM aborts the whole process on an unknown CPU name, so every arch is looked up in the arch
table (`tilec_amd.arch.ARCHS`) before any LLVM call.
"""

from __future__ import annotations

import functools
import os
import shutil
import tempfile
from pathlib import Path

import llvmlite.binding as llvm

from tilec.lowering import llvm_codegen
from tilec.lowering.external_tools import run_tool, tool_version
from tilec.lowering.llvm_codegen import (
    LLVM_LOCK,
    InvalidLLVMIR,
    check_opt_level,
    optimized_module,
    target_machine,
)
from tilec_amd import assembler
from tilec_amd.arch import ARCHS
from tilec_amd.backend import LLD

TRIPLE = "amdgcn-amd-amdhsa"

LLD_ENV = LLD.name
LLD_MIN_VERSION = 17
LLD_VERSIONS = range(22, LLD_MIN_VERSION - 1, -1)
LLD_INSTALL_HINT = (
    "install LLVM's linker (Debian/Ubuntu: apt-get install lld-22; ROCm ships it in "
    "/opt/rocm/llvm/bin) or set TILEC_LLD to an ld.lld of version 17 or newer"
)
LLD_TIMEOUT_S = 120


class CodegenError(RuntimeError):
    """LLVM or ld.lld rejected a kernel; the message names the kernel and the tool's diagnostic."""


def features(arch: str) -> str:
    """The LLVM feature string: the wavefront size of `arch`."""
    return ARCHS.check(arch).llvm_features


def kernel_names(llvm_ir: str) -> list[str]:
    """The `amdgpu_kernel` functions that `llvm_ir` defines."""
    return llvm_codegen.kernel_names(llvm_ir, "amdgpu_kernel")


def _describe(llvm_ir: str) -> str:
    return llvm_codegen.describe_kernels(llvm_ir, "amdgpu_kernel")


def _optimized(llvm_ir: str, arch: str, opt_level: int) -> tuple[llvm.TargetMachine, object]:
    machine = target_machine(TRIPLE, arch, features(arch), check_opt_level(opt_level))
    try:
        module = optimized_module(llvm_ir, machine, TRIPLE, opt_level)
    except InvalidLLVMIR as error:
        raise CodegenError(f"invalid LLVM IR for {_describe(llvm_ir)}:\n{error}") from None
    return machine, module


def llir_to_amdgcn(llvm_ir: str, arch: str, *, opt_level: int = 3) -> str:
    """Optimize `llvm_ir` and emit AMDGCN assembly for `arch` (`gfx942`, ...)."""
    return compile_llir(llvm_ir, arch, opt_level=opt_level)[0]


def compile_llir(llvm_ir: str, arch: str, *, opt_level: int = 3) -> tuple[str, bytes]:
    """Optimize `llvm_ir` once and emit both AMDGCN assembly and a relocatable AMDGPU ELF
    object for `arch` (each from its own copy: code generation changes the module)."""
    inline_asm = assembler.has_inline_asm(llvm_ir)  # llvm-mc assembles it (`assembler`)
    with LLVM_LOCK:  # llvmlite's global state (targets, contexts) is not thread-safe
        machine, module = _optimized(llvm_ir, arch, opt_level)
        try:
            assembly = machine.emit_assembly(module.clone())
            obj = None if inline_asm else machine.emit_object(module)
        except RuntimeError as error:
            raise CodegenError(
                f"LLVM could not generate code for {_describe(llvm_ir)} ({arch}): {error}"
            ) from None
    if obj is None:
        try:
            obj = assembler.assemble(assembly, TRIPLE, arch, features(arch))
        except assembler.AssemblerError as error:
            raise CodegenError(
                f"{_describe(llvm_ir)} has inline assembly, which the amd backend assembles "
                f"with llvm-mc: {error}"
            ) from None
    return assembly, obj


# ld.lld ------------------------------------------------------------------------------------------


def lld_candidates() -> list[str]:
    """Where ld.lld is looked for, in order: TILEC_LLD, ROCm's, `ld.lld` on PATH, then
    `ld.lld-22` ... `ld.lld-17` on PATH."""
    configured = LLD.get()
    if configured:
        return [configured]
    names = ["/opt/rocm/llvm/bin/ld.lld", "ld.lld", *(f"ld.lld-{v}" for v in LLD_VERSIONS)]
    found = []
    for name in names:
        path = name if os.path.isabs(name) else shutil.which(name)
        if path and os.access(path, os.X_OK):
            found.append(path)
    return found


def lld_version(path: str) -> int | None:
    """The major version `path --version` reports (`LLD 22.1.8`), or None."""
    return tool_version(path, r"LLD (\d+)\.")


@functools.cache
def find_lld() -> str:
    """The first ld.lld of `lld_candidates` that is version 17 or newer.

    Raises CodegenError saying what to install when there is none.
    """
    configured = LLD.get()
    if configured and not os.access(configured, os.X_OK):
        raise CodegenError(f"{LLD_ENV}={configured} is not an executable ld.lld")
    too_old = []
    for path in lld_candidates():
        version = lld_version(path)
        if version is not None and version >= LLD_MIN_VERSION:
            return path
        too_old.append(f"{path} (version {version or 'unknown'})")
    if too_old:
        raise CodegenError(
            f"the amd backend links code objects with ld.lld {LLD_MIN_VERSION} or newer; found "
            f"only {', '.join(too_old)}: {LLD_INSTALL_HINT}"
        )
    raise CodegenError(f"the amd backend needs ld.lld to link code objects: {LLD_INSTALL_HINT}")


def link_hsaco(obj: bytes, name: str = "kernel") -> bytes:
    """Link an AMDGPU object into the shared-object HSA code object (`ld.lld -shared`)."""
    lld = find_lld()
    with tempfile.TemporaryDirectory(prefix="tilec-lld-") as folder:
        source, binary = Path(folder) / "kernel.o", Path(folder) / "kernel.hsaco"
        source.write_bytes(obj)
        command = [lld, "-shared", str(source), "-o", str(binary)]
        run_tool(
            command, LLD_TIMEOUT_S, CodegenError, f"ld.lld ({lld}) could not link kernel {name}"
        )
        return binary.read_bytes()


def llir_to_hsaco(llvm_ir: str, arch: str, *, opt_level: int = 3) -> bytes:
    """The hsaco of `llvm_ir` for `arch`: object from LLVM, linked by ld.lld."""
    name = ", ".join(kernel_names(llvm_ir)) or "kernel"
    return link_hsaco(compile_llir(llvm_ir, arch, opt_level=opt_level)[1], name)
