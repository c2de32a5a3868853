"""The struct of registers an inline-asm wgmma, fence or wait returns is a named type of the kernel's
LLVM module (issue 24): a literal `{float, float, ...}` was written out in full by each of the
hundreds of `extractvalue`s reading it (1 MB of LLVM IR for a matmul 128x256x64)."""

from __future__ import annotations

import re

from llvmlite import ir
from test_lower_pipeline import compiled, tutorial_kernel

from tilec_nvidia.wgmma import registers_type

DECLARATION = re.compile(r"^(\S+) = type \{(.*)\}$", re.MULTILINE)


def test_wgmma_results_are_one_named_type():
    llir = compiled(tutorial_kernel, 3, (64, 64, 32), 4, target="sm_90a").asm["llir"]
    assert "wgmma.mma_async" in llir
    declared = DECLARATION.findall(llir)
    assert declared == [('%"wgmma.f32x32"', ", ".join(["float"] * 32))]
    assert "{float, float" not in DECLARATION.sub("", llir)
    reads = re.findall(r"extractvalue (\S+) ", llir)
    assert reads and set(reads) == {'%"wgmma.f32x32"'}


def test_each_module_declares_its_own():
    """Named in the module's own context: a module without wgmma declares none of them."""
    first, second = ir.Module("a", context=ir.Context()), ir.Module("b", context=ir.Context())
    function = ir.Function(first, ir.FunctionType(ir.VoidType(), []), "f")
    builder = ir.IRBuilder(function.append_basic_block())
    named = registers_type(builder, ir.FloatType(), 4)
    assert registers_type(builder, ir.FloatType(), 4) is named
    assert str(named) == '%"wgmma.f32x4"' and "wgmma" in str(first)
    assert "wgmma" not in str(second)
    assert "wgmma" not in compiled(tutorial_kernel, 1, (64, 64, 32), 4, target="sm_80").asm["llir"]
