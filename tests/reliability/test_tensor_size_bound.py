"""A block of more than 2**20 elements (Triton's limit) is a located error in the frontend
(issue 14): before, BLOCK 2**16 took 74 s to compile for nvidia and the interpreter tried to
allocate 4 TiB for 2**40."""

from __future__ import annotations

import inspect
import time

import numpy as np
import pytest

import tilec
import tilec.language as tl
from tilec.frontend import CompilationError, compile_to_tir
from tilec.frontend.semantics import MAX_TENSOR_ELEMENTS


@tilec.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.arange(0, BLOCK) + tl.program_id(0) * BLOCK
    mask = offsets < n
    x = tl.load(x_ptr + offsets, mask=mask)
    tl.store(out_ptr + offsets, x + tl.load(y_ptr + offsets, mask=mask), mask=mask)


@tilec.jit
def outer_kernel(out_ptr, A: tl.constexpr, B: tl.constexpr):
    grid = tl.arange(0, A)[:, None] + tl.arange(0, B)[None, :]
    tl.store(out_ptr + grid, grid)


@tilec.jit
def full_kernel(out_ptr, B: tl.constexpr):
    tl.store(out_ptr + tl.arange(0, 16), tl.sum(tl.full([B], 1, tl.int32), axis=0))


SIGNATURE = {"x_ptr": "*fp32", "y_ptr": "*fp32", "out_ptr": "*fp32", "n": "i32"}


def line_of(kernel, text: str) -> int:
    lines, first = inspect.getsourcelines(kernel.fn)
    [index] = [i for i, line in enumerate(lines) if text in line]
    return first + index


@pytest.mark.parametrize("exponent", [21, 40])
def test_arange_over_the_limit_is_a_located_error(exponent):
    start = time.perf_counter()
    with pytest.raises(CompilationError) as info:
        compile_to_tir(add_kernel, SIGNATURE, {"BLOCK": 2**exponent})
    assert time.perf_counter() - start < 5
    error = info.value
    assert error.line == line_of(add_kernel, "tl.arange(0, BLOCK)")
    assert f"{2**exponent} elements, more than the limit of 1048576" in error.message
    assert "smaller block size" in error.hint


def test_the_limit_itself_is_accepted():
    compile_to_tir(add_kernel, SIGNATURE, {"BLOCK": MAX_TENSOR_ELEMENTS})


def test_broadcast_over_the_limit_is_a_located_error():
    with pytest.raises(CompilationError, match=r"shape \[1024, 2048\]") as info:
        compile_to_tir(outer_kernel, {"out_ptr": "*i32"}, {"A": 1024, "B": 2048})
    assert info.value.line == line_of(outer_kernel, "tl.arange(0, A)[:, None]")
    compile_to_tir(outer_kernel, {"out_ptr": "*i32"}, {"A": 1024, "B": 1024})


def test_full_over_the_limit_is_a_located_error():
    with pytest.raises(CompilationError, match="more than the limit") as info:
        compile_to_tir(full_kernel, {"out_ptr": "*i32"}, {"B": 2**22})
    assert info.value.line == line_of(full_kernel, "tl.full([B]")


def test_launch_with_a_huge_block_fails_fast_on_interp():
    x = np.ones(16, dtype=np.float32)
    start = time.perf_counter()
    with pytest.raises(CompilationError, match="more than the limit"):
        add_kernel[(1,)](x, x, np.empty_like(x), 16, BLOCK=2**40, backend="interp")
    assert time.perf_counter() - start < 5


@tilec.jit
def far_range_kernel(out_ptr, START: tl.constexpr):
    tl.store(out_ptr + tl.arange(0, 16), tl.arange(START, START + 16))


def test_an_arange_past_int32_is_a_located_error():
    """Its bounds are i32 attributes: 2**40 was an internal ValueError once integer attributes
    had to fit their type (issue 22)."""
    with pytest.raises(CompilationError, match="does not fit in int32") as info:
        compile_to_tir(far_range_kernel, {"out_ptr": "*i32"}, {"START": 2**40})
    assert info.value.line == line_of(far_range_kernel, "tl.arange(START")
    compile_to_tir(far_range_kernel, {"out_ptr": "*i32"}, {"START": 2**31 - 17})


@pytest.mark.parametrize(
    ("backend", "target", "lanes"), [("nvidia", "sm_90a", 32), ("amd", "gfx942", 64)]
)
def test_more_elements_a_thread_than_compile_in_reasonable_time_is_a_located_error(
    backend, target, lanes
):
    """A block of 2**20 elements on 4 warps never finished compiling for nvidia (LLVM's code
    generation grows as the square of the elements a thread: issue 22, item 5)."""
    start = time.perf_counter()
    with pytest.raises(CompilationError) as info:
        tilec.compile(
            add_kernel, SIGNATURE, {"BLOCK": 2**20}, backend=backend, target=target, num_warps=4
        )
    assert time.perf_counter() - start < 30
    error = info.value
    assert error.line == line_of(add_kernel, "tl.arange(0, BLOCK)")
    per_thread = 2**20 // (4 * lanes)
    assert f"is {per_thread} elements a thread, more than the limit of 1024" in error.message
    assert f"more warps (num_warps={2**20 // (1024 * lanes)})" in error.hint


def test_the_elements_a_thread_limit_itself_reaches_the_gir():
    from tilec.layout.assign_layouts import MAX_ELEMENTS_PER_THREAD
    from tilec.layout.assignment import to_gir
    from tilec.layout.rules import GpuTarget, LayoutRules
    from tilec.pipeline import plugin_pass_manager

    block = MAX_ELEMENTS_PER_THREAD * 32 * 4
    module = compile_to_tir(add_kernel, SIGNATURE, {"BLOCK": block})
    to_gir(module, GpuTarget(LayoutRules(threads_per_warp=32), "test", 4), plugin_pass_manager())
    module = compile_to_tir(add_kernel, SIGNATURE, {"BLOCK": 2 * block})
    with pytest.raises(Exception, match="2048 elements a thread"):
        to_gir(
            module, GpuTarget(LayoutRules(threads_per_warp=32), "test", 4), plugin_pass_manager()
        )
