"""Python kernels through the whole tir path: frontend, the default tir pipeline, interpreter.

The runtime (`kernel[grid](...)`) comes later; this checks that the stages built so far compose,
against NumPy on random inputs (seeded per test).
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

import tilec.dialects  # noqa: F401
from tilec.frontend import compile_to_tir
from tilec.ir import verify
from tilec.pipeline import plugin_pass_manager
from tilec_interp import interpreter
from tilec_interp.dtypes import tf32_truncate

sys.path.insert(0, str(Path(__file__).parent / "frontend"))
from frontend_kernels import add_kernel, matmul_kernel, softmax_kernel


def optimized(kernel, signature, constexprs):
    module = compile_to_tir(kernel, signature, constexprs)
    verify(module)
    plugin_pass_manager().run(module, ["inline", "canonicalize", "licm", "cse", "dce"])
    return module


def test_vector_add_matches_numpy(rng):
    n = 98432
    x, y = rng.standard_normal(n, dtype=np.float32), rng.standard_normal(n, dtype=np.float32)
    out = np.empty_like(x)
    signature = {"x_ptr": "*fp32", "y_ptr": "*fp32", "output_ptr": "*fp32", "n_elements": "i32"}
    module = optimized(add_kernel, signature, {"BLOCK_SIZE": 1024})
    interpreter.execute(module, "add_kernel", (-(-n // 1024),), [x, y, out, n])
    np.testing.assert_array_equal(out, x + y)


def test_softmax_matches_numpy(rng):
    rows, cols = 37, 100
    x = rng.standard_normal((rows, cols), dtype=np.float32)
    out = np.empty_like(x)
    signature = {
        "out_ptr": "*fp32",
        "in_ptr": "*fp32",
        "in_row_stride": "i32",
        "out_row_stride": "i32",
        "n_cols": "i32",
    }
    module = optimized(softmax_kernel, signature, {"BLOCK": 128})
    interpreter.execute(module, "softmax_kernel", (rows,), [out, x, cols, cols, cols])
    e = np.exp(x - x.max(axis=1, keepdims=True))
    np.testing.assert_allclose(out, e / e.sum(axis=1, keepdims=True), rtol=1e-5, atol=1e-7)


def test_matmul_matches_numpy(rng):
    m = n = k = 64
    a = rng.standard_normal((m, k), dtype=np.float32)
    b = rng.standard_normal((k, n), dtype=np.float32)
    c = np.empty((m, n), dtype=np.float16)
    signature = {
        "a_ptr": "*fp32",
        "b_ptr": "*fp32",
        "c_ptr": "*fp16",
        "M": "i32",
        "N": "i32",
        "K": "i32",
    }
    module = optimized(matmul_kernel, signature, {"BLOCK_M": 32, "BLOCK_N": 32, "BLOCK_K": 16})
    interpreter.execute(module, "matmul_kernel", (2, 2), [a, b, c, m, n, k])
    # tl.dot of float32 operands is tf32 by default, as in Triton: the reference multiplies the
    # truncated operands exactly, so what is left is float32 summation order and the float16 store
    # (half an ulp, 2**-11 relative); against a @ b, tf32's error alone made this flaky
    expected = tf32_truncate(a).astype(np.float64) @ tf32_truncate(b)
    np.testing.assert_allclose(c.astype(np.float32), expected, rtol=1e-3, atol=1e-3)
