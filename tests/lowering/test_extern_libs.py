"""Triton's `extern_libs`: a named LLVM bitcode library is linked into the kernel's LLVM IR where
the kernel declares functions it defines (`tilec.lowering.extern_libs`), its functions internal
so that optimization keeps only what is called; a kernel that declares none of them (every
kernel of `tl` functions: tilec computes libdevice's itself) is left as it was."""

from __future__ import annotations

import re

import llvmlite.binding as llvm
import numpy as np
import pytest

import tilec
import tilec.language as tl
from tilec.extern_libraries import extern_libs
from tilec.lowering.extern_libs import ExternLibraryError, link_extern_libs
from tilec_nvidia.codegen import llir_to_ptx

KERNEL = """
target triple = "nvptx64-nvidia-cuda"

declare float @lib_twice(float)

define ptx_kernel void @k(ptr addrspace(1) %p) {
  %x = load float, ptr addrspace(1) %p
  %y = call float @lib_twice(float %x)
  store float %y, ptr addrspace(1) %p
  ret void
}
"""

LIBRARY = """
target triple = "nvptx64-nvidia-gpulibs"

@lib_table = constant [2 x float] [float 1.0, float 2.0]

define float @lib_twice(float %x) {
  %t = load float, ptr getelementptr ([2 x float], ptr @lib_table, i32 0, i32 1)
  %y = fmul float %x, %t
  ret float %y
}

define float @lib_unused(float %x) {
  ret float %x
}
"""


@pytest.fixture
def library(tmp_path):
    path = tmp_path / "lib.bc"
    path.write_bytes(llvm.parse_assembly(LIBRARY).as_bitcode())
    return path


def test_a_declared_function_is_linked_and_internal(library):
    linked = link_extern_libs(KERNEL, extern_libs({"mylib": library}))
    assert re.search(r"define internal float @lib_twice\(float", linked)
    assert re.search(r"@lib_table = internal constant", linked)
    assert re.search(r"define ptx_kernel void @k\(", linked)
    ptx = llir_to_ptx(linked, "sm_80")
    assert "lib_twice" not in ptx and "lib_unused" not in ptx  # inlined, and dropped
    assert re.search(r"(add|mul)\.rn\.f32", ptx)  # x * lib_table[1], 2x


def test_a_kernel_declaring_none_of_its_functions_is_unchanged(library):
    plain = KERNEL.replace("@lib_twice", "@other")
    assert link_extern_libs(plain, extern_libs({"mylib": library})) == plain


def test_a_broken_library_is_a_clear_error(tmp_path, library):
    broken = tmp_path / "broken.bc"
    broken.write_bytes(b"BC\xc0\xde" + b"\0" * 32)
    with pytest.raises(
        ExternLibraryError, match=r"library 'broken' at .* is not valid LLVM bitcode"
    ):
        link_extern_libs(KERNEL, extern_libs({"broken": broken}))


@tilec.jit
def asin_kernel(x_ptr, y_ptr, BLOCK: tl.constexpr):
    offsets = tl.arange(0, BLOCK)
    tl.store(y_ptr + offsets, tl.extra.libdevice.asin(tl.load(x_ptr + offsets)))


def test_libdevice_functions_need_no_library(tmp_path, library):
    """Tutorial 07's launch: tilec computes `libdevice.asin`, so nothing is linked, and the
    option is part of the compile (its key holds the library's digest)."""
    signature = {"x_ptr": "*fp32", "y_ptr": "*fp32"}
    plain = tilec.compile(asin_kernel, signature, {"BLOCK": 128}, backend="nvidia",
                          target="sm_80")  # fmt: skip
    named = tilec.compile(asin_kernel, signature, {"BLOCK": 128}, backend="nvidia",
                          target="sm_80", extern_libs={"libdevice": str(library)})  # fmt: skip
    assert named.asm["llir"] == plain.asm["llir"] and "lib_twice" not in named.asm["llir"]
    x = np.linspace(-1, 1, 128, dtype=np.float32)
    y = np.zeros_like(x)
    asin_kernel[(1,)](x, y, BLOCK=128, backend="interp", extern_libs={"libdevice": str(library)})
    np.testing.assert_allclose(y, np.arcsin(x), rtol=1e-6, atol=1e-7)


def test_the_option_keys_on_the_library_contents(tmp_path, library):
    first = extern_libs({"mylib": library})
    library.write_bytes(llvm.parse_assembly(LIBRARY.replace("2.0", "3.0")).as_bitcode())
    second = extern_libs({"mylib": library})
    assert second != first
    assert extern_libs(second) == second  # an option's value converts to itself
