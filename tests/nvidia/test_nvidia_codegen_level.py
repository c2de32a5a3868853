"""The NVPTX code generation runs at level 2 at most (`codegen.CODEGEN_LEVEL`), the IR pipeline at
the compile's `opt_level` (issue 24: level 3's two GVN runs after strength reduction cost 10-30%
of the emission of the tensor-core kernels, for the same PTX)."""

from __future__ import annotations

import pytest
from nvidia_kernels import VECTOR_ADD_LLIR

from tilec.lowering import llvm_codegen
from tilec_nvidia import codegen


@pytest.mark.parametrize(("opt_level", "machine_level"), [(3, 2), (2, 2), (1, 1), (0, 0)])
def test_code_generation_level(monkeypatch, opt_level, machine_level):
    machines, pipelines = [], []
    make_machine, optimize = codegen.target_machine, codegen.optimized_module

    def machine(triple, cpu, features, level):
        machines.append(level)
        return make_machine(triple, cpu, features, level)

    def optimized(llvm_ir, target, triple, level):
        pipelines.append(level)
        return optimize(llvm_ir, target, triple, level)

    monkeypatch.setattr(codegen, "target_machine", machine)
    monkeypatch.setattr(codegen, "optimized_module", optimized)
    ptx = codegen.llir_to_ptx(VECTOR_ADD_LLIR, "sm_90a", opt_level=opt_level)
    assert ".entry" in ptx
    assert machines == [machine_level] and pipelines == [opt_level]


def test_the_ir_pipeline_keeps_its_level():
    """The IR pipeline at 3 with the level-2 machine gives the module level 3's machine gives."""
    machine2 = llvm_codegen.target_machine(codegen.TRIPLE, "sm_90a", "+ptx80", 2)
    machine3 = llvm_codegen.target_machine(codegen.TRIPLE, "sm_90a", "+ptx80", 3)
    with llvm_codegen.LLVM_LOCK:
        two = llvm_codegen.optimized_module(VECTOR_ADD_LLIR, machine2, codegen.TRIPLE, 3)
        three = llvm_codegen.optimized_module(VECTOR_ADD_LLIR, machine3, codegen.TRIPLE, 3)
    assert str(two) == str(three)
