"""On the GPU: Triton's test_dot int8 cases (its shapes, row- and column-major operands) with
`out_dtype` int8, int16 and int32 stored into int32 (issue 22): the int32 sums, as Triton 3.6
gives them (its `semantic.dot` makes an int8 dot int32 whatever `out_dtype` says), checked
against the interpreter (`check.run_checked`, --check's path) and against NumPy.
tests/lowering/test_lower_dot_out_dtype.py checks the same on the CPU emulator."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

import tilec
import tilec.language as tl
from tilec.runtime import check

sys.path.insert(0, str(Path(__file__).parent.parent / "lowering"))
from numerics_kernels import (
    TEST_DOT_INT8_SHAPES,
    TEST_DOT_SIGNATURE,
    int8_test_dot_case,
    triton_test_dot_kernel,
)

pytestmark = pytest.mark.gpu

CASES = [(shape, False, False, out) for shape in TEST_DOT_INT8_SHAPES
         for out in (tl.int8, tl.int16, tl.int32)] + [
    (shape, col_a, col_b, tl.int8) for shape in TEST_DOT_INT8_SHAPES
    for col_a, col_b in ((True, False), (False, True), (True, True))
]  # fmt: skip


@pytest.mark.parametrize(("shape", "col_a", "col_b", "out"), CASES, ids=str)
def test_int8_dot_with_an_out_dtype_gives_the_int32_sums(rng, shape, col_a, col_b, out):
    m, n, k, num_warps = shape
    args, sums = int8_test_dot_case(rng, m, n, k, col_a, col_b, np.full((m, n), -1, np.int32))
    constexprs = dict(BLOCK_M=m, BLOCK_N=n, BLOCK_K=k, OUT=out, RESULT=tl.int32)

    def compiled(backend: str):
        return tilec.compile(triton_test_dot_kernel, TEST_DOT_SIGNATURE, constexprs,
                             backend=backend, num_warps=num_warps)  # fmt: skip

    check.run_checked(compiled("nvidia"), (1,), args, lambda: compiled("interp"))
    np.testing.assert_array_equal(args[6], sums)
