"""A conversion through shared memory moves each thread's registers as vector accesses where they
hold consecutive, aligned elements of the scratch buffer (issue 24: a wgmma matmul's epilogue
was 128 scalar stores and 128 scalar loads a thread, whose addresses LLVM's DSE, GVN and
strength reduction compared pairwise; Triton's conversions are vectorized too)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from cpu_emulator import HostTargetInfo, compile_kernel, launch

import tilec.dialects  # noqa: F401
from tilec.dialects.gpu import BlockedEncodingAttr
from tilec.ir.parser import parse_module
from tilec.layout.mapping import thread_mapping
from tilec.lowering import lower_module
from tilec.lowering.layout_ops import scratch_vector_width

GIR = Path(__file__).parents[1] / "filecheck" / "lowering" / "convert_layout_vectors.gir"
ROW_MAJOR = (64, 1)


def blocked(size, lanes, warps, order):
    return BlockedEncodingAttr(list(size), list(lanes), list(warps), list(order))


@pytest.mark.parametrize(
    ("layout", "shape", "nbytes", "width"),
    [
        (blocked([1, 8], [4, 8], [2, 1], [1, 0]), (16, 64), 2, 8),  # a row of 8 f16: 16 bytes
        (blocked([1, 8], [4, 8], [2, 1], [1, 0]), (16, 64), 4, 4),  # 8 f32: two of 16 bytes
        (blocked([1, 8], [4, 8], [2, 1], [1, 0]), (16, 64), 8, 2),
        (blocked([8, 1], [2, 16], [1, 2], [0, 1]), (16, 64), 2, 1),  # columns: not consecutive
        (blocked([1, 2], [4, 8], [2, 1], [1, 0]), (16, 64), 4, 2),
        (blocked([1, 1], [4, 8], [2, 1], [1, 0]), (16, 64), 4, 1),
    ],
)
def test_vector_width(layout, shape, nbytes, width):
    assert scratch_vector_width(thread_mapping(layout, shape), ROW_MAJOR, nbytes) == width


def test_no_vector_across_a_factor_that_breaks_alignment():
    """Consecutive registers along a dimension whose factor is not 1 (a transpose's read), or
    another dimension's factor that is not a multiple of the width, take one access each."""
    mapping = thread_mapping(blocked([1, 8], [4, 8], [2, 1], [1, 0]), (16, 64))
    assert scratch_vector_width(mapping, (1, 16), 2) == 1
    assert scratch_vector_width(mapping, (6, 1), 2) == 2  # rows 6 elements apart: 4-byte aligned


def test_vector_conversions_run_on_the_cpu():
    module = parse_module(GIR.read_text(), str(GIR))
    lowered = lower_module(module, HostTargetInfo(), "convert_vectors")
    address = compile_kernel(lowered.llvm_ir, lowered.name)
    rng = np.random.default_rng(1)
    x = rng.random(16 * 64).astype(np.float16)
    f = rng.random(1024).astype(np.float32)
    t, y = np.zeros_like(x), np.zeros_like(x)
    g = np.full(1024, 7, np.float32)
    launch(address, lowered.params, [x, t, y, f, g], (1,), 64)
    np.testing.assert_array_equal(t, x)
    np.testing.assert_array_equal(y, x)
    np.testing.assert_array_equal(g, (f > 0.5).astype(np.float32))
