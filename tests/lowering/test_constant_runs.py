"""Registers the axis info proves equal share one value (`elementwise.same_registers`, Triton's
`maybeDeduplicate`): the layer norm's mask `cols < N`, N divisible by 16, is one compare a run of
a thread's contiguous elements, not one an element (PTX for sm_90a), and kernels whose masks are
constant over runs along either dimension give the interpreter's results on the example backend
(hostcpu, the core's LLVM lowering on the host)."""

from __future__ import annotations

import re

import numpy as np
import pytest

import tilec
import tilec.language as tl
from tilec.plugin.manager import load_backends


@tilec.jit
def masked_row_kernel(x_ptr, y_ptr, N, BLOCK: tl.constexpr):
    cols = tl.arange(0, BLOCK)
    inside = cols < N
    x = tl.load(x_ptr + cols, mask=inside, other=0.0)
    tl.store(y_ptr + cols, tl.where(inside, x - 1.0, 7.0), mask=inside)


@tilec.jit
def masked_tile_kernel(x_ptr, y_ptr, M, N, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    rows = tl.arange(0, BLOCK_M)[:, None]
    cols = tl.arange(0, BLOCK_N)[None, :]
    inside = (rows < M) & (cols < N)
    x = tl.load(x_ptr + rows * N + cols, mask=inside, other=0.0)
    y = tl.where(rows < M, x * 2.0, -1.0) + tl.where(cols < N, 0.5, 0.25)
    tl.store(y_ptr + rows * N + cols, y, mask=inside)


def _ptx(divisible: list[str]) -> str:
    signature = {"x_ptr": "*fp32", "y_ptr": "*fp32", "N": "i32"}
    compiled = tilec.compile(masked_row_kernel, signature, {"BLOCK": 1024}, backend="nvidia",
                             target="sm_90a", num_warps=4, divisibility=divisible)  # fmt: skip
    return compiled.asm["ptx"]


def test_a_mask_constant_over_a_vector_is_one_compare_a_vector():
    # 1024 f32 over 128 threads: 8 registers a thread, in runs of 4 contiguous elements
    per_element = re.findall(r"\bsetp\.lt\.s32\b", _ptx(["x_ptr", "y_ptr"]))
    per_run = re.findall(r"\bsetp\.lt\.s32\b", _ptx(["x_ptr", "y_ptr", "N"]))
    assert len(per_element) == 8
    assert len(per_run) == 2


def _hostcpu_or_skip():
    backend = load_backends().get("hostcpu")
    if backend is None or not backend.is_available():
        pytest.skip("the example backend (examples/plugins/tilec-hostcpu) is not available")


@pytest.mark.parametrize("n", [1024, 1008, 1000, 16, 3])
def test_row_masks_give_the_interpreters_results(n, rng):
    _hostcpu_or_skip()
    x = rng.standard_normal(1024).astype(np.float32)
    want = np.where(np.arange(1024) < n, x - 1.0, 0.0).astype(np.float32)
    for backend in ("hostcpu", "interp"):
        y = np.zeros(1024, np.float32)
        masked_row_kernel[(1,)](x, y, n, BLOCK=1024, backend=backend, num_warps=4)
        np.testing.assert_array_equal(y, want, err_msg=f"{backend}, N = {n}")


@pytest.mark.parametrize(("m", "n"), [(32, 64), (16, 48), (31, 64), (32, 40), (5, 3)])
def test_tile_masks_give_the_interpreters_results(m, n, rng):
    _hostcpu_or_skip()
    x = rng.standard_normal(m * n).astype(np.float32)
    want = (x.reshape(m, n) * 2.0 + 0.5).ravel().astype(np.float32)
    for backend in ("hostcpu", "interp"):
        y = np.zeros(m * n, np.float32)
        masked_tile_kernel[(1,)](x, y, m, n, BLOCK_M=32, BLOCK_N=64, backend=backend, num_warps=2)
        np.testing.assert_array_equal(y, want, err_msg=f"{backend}, M = {m}, N = {n}")
