"""`tl.dot`'s result type for each operand dtype and `out_dtype`, as Triton 3.6's `semantic.dot`
decides it (issue 22): integer operands give the int32 sums whatever `out_dtype` says (Triton's
test_dot stores `tl.dot(x, y, out_dtype=tl.int8)` into int32 and expects the sums), f32 and bf16
operands give f32, f64 operands f64, f16 and 8-bit float operands `out_dtype` (f32 or f16), and
`out_dtype=bfloat16` is an error."""

from __future__ import annotations

import numpy as np
import pytest
from compat_helpers import compile_error, run_interp

import tilec
import tilec.language as tl
from tilec.frontend import compile_to_tir


@tilec.jit
def typed_dot(a_ptr, c_ptr, DTYPE: tl.constexpr, OUT: tl.constexpr, RESULT: tl.constexpr):
    rows = tl.arange(0, 16)[:, None] * 16 + tl.arange(0, 16)[None, :]
    a = tl.load(a_ptr + rows).to(DTYPE, bitcast=True)
    c = tl.dot(a, a, out_dtype=OUT)
    tl.static_assert(c.dtype == RESULT)
    tl.store(c_ptr + rows, c.to(tl.float32))


POINTEES = {tl.int8: "i8", tl.float16: "fp16", tl.bfloat16: "bf16", tl.float32: "fp32",
            tl.float64: "fp64", tl.float8e5: "u8", tl.float8e4nv: "u8"}  # fmt: skip


def _signature(dtype) -> dict[str, str]:
    return {"a_ptr": f"*{POINTEES[dtype]}", "c_ptr": "*fp32"}


RESULTS = [  # operands, out_dtype, Triton's result dtype
    (tl.int8, tl.int8, tl.int32),
    (tl.int8, tl.int16, tl.int32),
    (tl.int8, tl.int32, tl.int32),
    (tl.int8, tl.float32, tl.int32),  # Triton's default out_dtype
    (tl.float32, tl.float16, tl.float32),
    (tl.float32, tl.float64, tl.float32),
    (tl.bfloat16, tl.float16, tl.float32),
    (tl.float64, tl.float32, tl.float64),
    (tl.float64, tl.float16, tl.float64),
    (tl.float16, tl.float16, tl.float16),
    (tl.float16, tl.float32, tl.float32),
    (tl.float8e5, tl.float16, tl.float16),
    (tl.float8e4nv, tl.float32, tl.float32),
]


@pytest.mark.parametrize(("dtype", "out", "result"), RESULTS, ids=str)
def test_the_result_dtype_is_tritons(dtype, out, result):
    compile_to_tir(typed_dot, _signature(dtype), dict(DTYPE=dtype, OUT=out, RESULT=result))


@pytest.mark.parametrize(
    ("dtype", "out", "message"),
    [
        (tl.float16, tl.bfloat16, "out_dtype=bfloat16 is unsupported"),
        (tl.float32, tl.bfloat16, "out_dtype=bfloat16 is unsupported"),
        (tl.float16, tl.int32, "tl.dot of f16 inputs cannot have out_dtype i32"),
        (tl.float16, tl.float64, "tl.dot of f16 inputs cannot have out_dtype f64"),
    ],
    ids=str,
)
def test_out_dtypes_triton_refuses_are_located_errors(dtype, out, message):
    error = compile_error(typed_dot, _signature(dtype), DTYPE=dtype, OUT=out, RESULT=out)
    assert message in str(error)


@tilec.jit
def int8_dot(x_ptr, y_ptr, z_ptr, OUT: tl.constexpr):
    rows = tl.arange(0, 16)[:, None] * 32 + tl.arange(0, 32)[None, :]
    cols = tl.arange(0, 32)[:, None] * 16 + tl.arange(0, 16)[None, :]
    z = tl.dot(tl.load(x_ptr + rows), tl.load(y_ptr + cols), out_dtype=OUT)
    tl.store(z_ptr + tl.arange(0, 16)[:, None] * 16 + tl.arange(0, 16)[None, :], z)


@pytest.mark.parametrize("out", [tl.int8, tl.int16, tl.int32], ids=str)
def test_int8_dot_with_a_narrow_out_dtype_stores_the_int32_sums(out):
    rng = np.random.default_rng(22)
    x = rng.integers(-128, 128, (16, 32), dtype=np.int8)
    y = rng.integers(-128, 128, (32, 16), dtype=np.int8)
    z = np.zeros((16, 16), np.int32)
    sums = x.astype(np.int64) @ y.astype(np.int64)
    assert np.abs(sums).max() > 2**15
    run_interp(int8_dot, {"x_ptr": "*i8", "y_ptr": "*i8", "z_ptr": "*i32"}, [x, y, z], OUT=out)
    np.testing.assert_array_equal(z, sums)
