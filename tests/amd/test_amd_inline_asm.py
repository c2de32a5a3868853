"""`tl.inline_asm_elementwise` on AMD: the asm text lands in the AMDGCN assembly, which llvm-mc
assembles (llvmlite's LLVM has no AMDGPU assembly parser: its object emission would abort the
process); constraints AMDGPU lacks are located errors."""

from __future__ import annotations

import numpy as np
import pytest

import tilec
import tilec.language as tl
from tilec.lowering import LoweringError
from tilec_amd import assembler
from tilec_amd.codegen import CodegenError, find_lld


def _tools() -> bool:
    try:
        find_lld()
        assembler.find_llvm_mc()
    except (CodegenError, assembler.AssemblerError):
        return False
    return True


needs_tools = pytest.mark.skipif(not _tools(), reason="needs ld.lld and llvm-mc 17 or newer")


@tilec.jit
def shift_kernel(X, Y, C: tl.constexpr, BLOCK: tl.constexpr):
    x = tl.load(X + tl.arange(0, BLOCK))
    y = tl.inline_asm_elementwise("v_lshlrev_b32 $0, 3, $1", C, [x], dtype=tl.int32,
                                  is_pure=True, pack=1)  # fmt: skip
    tl.store(Y + tl.arange(0, BLOCK), y)


@needs_tools
@pytest.mark.parametrize("arch", ["gfx942", "gfx1100"])
def test_inline_asm_is_assembled(private_cache, arch):
    compiled = tilec.compile(shift_kernel, {"X": "*i32", "Y": "*i32"},
                             {"C": "=v,v", "BLOCK": 256}, backend="amd", target=arch)  # fmt: skip
    assert "v_lshlrev_b32 v" in compiled.asm["amdgcn"]
    assert compiled.asm["hsaco"][:4] == b"\x7fELF"


def test_inline_asm_is_found_in_the_llvm_ir():
    assert assembler.has_inline_asm('%".5" = call i32 asm  "v_mov_b32 $0, $1", "=v,v"(i32 %".4")')
    assert assembler.has_inline_asm('call void asm sideeffect "s_nop 0", ""()')
    assert not assembler.has_inline_asm('call i32 @"llvm.amdgcn.workitem.id.x"()')


def test_without_llvm_mc_the_error_says_what_to_install(private_cache, monkeypatch):
    monkeypatch.setattr(assembler.shutil, "which", lambda name: None)
    assembler.find_llvm_mc.cache_clear()
    try:
        with pytest.raises(CodegenError, match=r"inline assembly.*install LLVM's llvm-mc"):
            tilec.compile(shift_kernel, {"X": "*i32", "Y": "*i32"},
                          {"C": "=v,v", "BLOCK": 128}, backend="amd", target="gfx942")  # fmt: skip
    finally:
        assembler.find_llvm_mc.cache_clear()


@pytest.mark.parametrize(
    ("constraints", "message"),
    [("=r,r", "constraint '=r' is not one of this target's \\(gfx942: v, s, a"),
     ("=v,v,v", "name 1 outputs and 2 inputs")],
)  # fmt: skip
def test_constraints_amdgpu_lacks_are_located_errors(private_cache, constraints, message):
    with pytest.raises(LoweringError, match=message) as error:
        tilec.compile(shift_kernel, {"X": "*i32", "Y": "*i32"},
                      {"C": constraints, "BLOCK": 128}, backend="amd", target="gfx942")  # fmt: skip
    assert "test_amd_inline_asm.py" in str(error.value)


@pytest.mark.gpu
def test_inline_asm_on_the_gpu():
    x = np.arange(256, dtype=np.int32) - 100
    y = np.zeros(256, np.int32)
    shift_kernel[(1,)](x, y, C="=v,v", BLOCK=256, backend="amd")
    np.testing.assert_array_equal(y, x << 3)
