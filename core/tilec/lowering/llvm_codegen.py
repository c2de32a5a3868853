"""What every GPU backend's code generation does with LLVM IR text before emitting its own
format: initialize LLVM once, make a target machine, parse, verify and optimize the module.

llvmlite's global state (targets, contexts) is not thread-safe: hold `LLVM_LOCK` around these
calls and the emission that follows. Callers validate the CPU and feature names against their
allow-lists first: LLVM aborts the whole process on unknown ones.
"""

from __future__ import annotations

import functools
import re
import threading

import llvmlite.binding as llvm

LLVM_LOCK = threading.Lock()


class InvalidLLVMIR(ValueError):
    """LLVM rejected the module (parse or verify); the message is LLVM's."""


@functools.cache
def initialize_llvm() -> None:
    llvm.initialize_all_targets()
    llvm.initialize_all_asmprinters()


def check_opt_level(opt_level: int) -> int:
    if opt_level not in (0, 1, 2, 3):
        raise ValueError(f"opt_level must be 0, 1, 2 or 3; got {opt_level!r}")
    return opt_level


@functools.cache
def target_machine(triple: str, cpu: str, features: str, opt_level: int) -> llvm.TargetMachine:
    """A (cached) target machine; `cpu` and `features` must already be validated."""
    check_opt_level(opt_level)
    initialize_llvm()
    target = llvm.Target.from_triple(triple)
    return target.create_target_machine(cpu=cpu, features=features, opt=opt_level)


def optimized_module(
    llvm_ir: str, machine: llvm.TargetMachine, triple: str, opt_level: int
) -> llvm.ModuleRef:
    """Parse and verify `llvm_ir`, set the target, and run LLVM's pipeline at `opt_level`
    (0: none). Raises ValueError for a bad level, InvalidLLVMIR when LLVM rejects the module."""
    check_opt_level(opt_level)
    try:
        module = llvm.parse_assembly(llvm_ir)
        module.verify()
    except RuntimeError as error:
        raise InvalidLLVMIR(str(error)) from None
    module.triple = triple
    module.data_layout = str(machine.target_data)
    if opt_level > 0:
        tuning = llvm.create_pipeline_tuning_options(speed_level=opt_level)
        builder = llvm.create_pass_builder(machine, tuning)
        builder.getModulePassManager().run(module, builder)
    return module


def kernel_names(llvm_ir: str, calling_convention: str) -> list[str]:
    """The kernels (functions of `calling_convention`: `ptx_kernel`, `amdgpu_kernel`) that
    `llvm_ir` defines, for error messages and loading."""
    pattern = rf"define\s+(?:[\w.]+\s+)*?{calling_convention}\s+void\s+@\"?([\w.$]+)"
    return re.findall(pattern, llvm_ir)


def describe_kernels(llvm_ir: str, calling_convention: str) -> str:
    """`kernel NAME, ...` of `llvm_ir`, for error messages."""
    names = kernel_names(llvm_ir, calling_convention)
    if not names:
        return f"module (no {calling_convention} function found)"
    return f"kernel {', '.join(names)}"
