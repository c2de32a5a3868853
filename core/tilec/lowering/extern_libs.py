"""Link Triton's `extern_libs` (`tilec.extern_libraries`) into a kernel's LLVM IR, as Triton's
`link_extern_libs` does: only where the kernel declares functions a library defines. The
library's functions become internal (the kernel stays the module's only entry), so that LLVM's
optimization keeps only what the kernel calls; the library takes the module's triple and data
layout (libdevice's are `nvptx64-nvidia-gpulibs`).
"""

from __future__ import annotations

from collections.abc import Sequence

import llvmlite.binding as llvm

from tilec.lowering.llvm_codegen import LLVM_LOCK

INTRINSIC_PREFIX = "llvm."


class ExternLibraryError(ValueError):
    """A library of `extern_libs` could not be read, parsed or linked; the message names it."""


def link_extern_libs(llvm_ir: str, libraries: Sequence[tuple[str, str, str]]) -> str:
    """`llvm_ir` with the `libraries` ((name, path, digest) triples) that define functions it
    declares linked in; unchanged where it declares none of theirs."""
    if not libraries:
        return llvm_ir
    with LLVM_LOCK:
        module = llvm.parse_assembly(llvm_ir)
        needed = _declared(module)
        if not needed:
            return llvm_ir
        own = {f.name for f in module.functions if not f.is_declaration}
        own_globals = {g.name for g in module.global_variables}
        linked = False
        for name, path, _ in libraries:
            library = _parse(name, path)
            defined = {f.name for f in library.functions if not f.is_declaration}
            if not needed & defined:
                continue
            library.triple = module.triple
            library.data_layout = module.data_layout
            try:
                module.link_in(library)
            except RuntimeError as error:
                raise ExternLibraryError(
                    f"extern_libs: library '{name}' ({path}) could not be linked: {error}"
                ) from None
            linked = True
            needed = _declared(module)
        if not linked:
            return llvm_ir
        for function in module.functions:
            if not function.is_declaration and function.name not in own:
                function.linkage = llvm.Linkage.internal
        for variable in module.global_variables:
            if variable.name not in own_globals:
                variable.linkage = llvm.Linkage.internal
        return str(module)


def _declared(module: llvm.ModuleRef) -> set[str]:
    return {
        f.name
        for f in module.functions
        if f.is_declaration and not f.name.startswith(INTRINSIC_PREFIX)
    }


def _parse(name: str, path: str) -> llvm.ModuleRef:
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError as error:
        raise ExternLibraryError(
            f"extern_libs: library '{name}' at {path!r} cannot be read ({error.strerror})"
        ) from None
    try:
        return llvm.parse_bitcode(data)
    except RuntimeError as error:
        raise ExternLibraryError(
            f"extern_libs: library '{name}' at {path!r} is not valid LLVM bitcode: {error}"
        ) from None


__all__ = ["ExternLibraryError", "link_extern_libs"]
