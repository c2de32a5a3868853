"""AMDGCN assembly -> object with `llvm-mc`, for kernels with inline assembly.

llvmlite's LLVM has no AMDGPU assembly parser, so it cannot emit an object for a module with
inline asm (`tl.inline_asm_elementwise`): LLVM aborts the process ("Inline asm not supported by
this streamer"). Such a kernel's AMDGCN assembly, which LLVM prints with the asm text in place,
is assembled by `llvm-mc` instead, as Triton assembles its AMDGCN text with LLVM's MC layer.
Kernels without inline asm keep llvmlite's object.
"""

from __future__ import annotations

import functools
import re
import shutil
import tempfile
from pathlib import Path

from tilec.lowering.external_tools import run_tool, tool_version

INLINE_ASM = re.compile(r'\basm\s+(?:sideeffect\s+)?"')
MC_VERSIONS = range(22, 16, -1)
"""The llvm-mc versions looked for, newest first (17 is the oldest that reads LLVM's code object
metadata, as `tilec_amd.codegen`'s ld.lld)."""
MC_TIMEOUT_S = 120
MC_INSTALL_HINT = (
    "install LLVM's llvm-mc, version 17 or newer (Debian/Ubuntu: apt-get install llvm-22; ROCm "
    "ships it in /opt/rocm/llvm/bin)"
)


class AssemblerError(RuntimeError):
    """llvm-mc is missing or rejected the assembly."""


def has_inline_asm(llvm_ir: str) -> bool:
    """Whether `llvm_ir` calls inline assembly."""
    return INLINE_ASM.search(llvm_ir) is not None


@functools.cache
def find_llvm_mc() -> str:
    """The first llvm-mc of version 17 or newer among ROCm's, `llvm-mc-22` ... `llvm-mc-17` and
    `llvm-mc` on PATH (an older one cannot read the code object metadata LLVM writes)."""
    names = ["/opt/rocm/llvm/bin/llvm-mc", *(f"llvm-mc-{v}" for v in MC_VERSIONS), "llvm-mc"]
    too_old = []
    for name in names:
        path = shutil.which(name)
        if not path:
            continue
        version = tool_version(path, r"LLVM version (\d+)\.")
        if version is not None and version >= MC_VERSIONS[-1]:
            return path
        too_old.append(f"{path} (version {version or 'unknown'})")
    found = f"; found only {', '.join(too_old)}" if too_old else ""
    raise AssemblerError(
        f"no llvm-mc of version {MC_VERSIONS[-1]} or newer{found}: {MC_INSTALL_HINT}"
    )


def assemble(assembly: str, triple: str, arch: str, features: str) -> bytes:
    """The relocatable object of `assembly` for `arch`."""
    mc = find_llvm_mc()
    with tempfile.TemporaryDirectory(prefix="tilec-mc-") as folder:
        source, obj = Path(folder) / "kernel.s", Path(folder) / "kernel.o"
        source.write_text(assembly)
        command = [mc, f"-triple={triple}", f"-mcpu={arch}", "-filetype=obj", "-o", str(obj)]
        command += [f"-mattr={features}"] if features else []
        run_tool([*command, str(source)], MC_TIMEOUT_S, AssemblerError,
                 f"llvm-mc ({mc}) rejected the assembly")  # fmt: skip
        return obj.read_bytes()
