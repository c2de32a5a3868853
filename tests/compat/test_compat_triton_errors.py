"""Where Triton 3.6 rejects a kernel, tilec rejects it too, with a located error that says what
Triton's says (issue 11): bitwise operators on floats, `/`, `//` and `%` between integer tensors
of different signedness, a negative Python number with an unsigned tensor, atomics on 8- and
16-bit integers (and on 16-bit floats but for add)."""

import numpy as np
import pytest
from compat_error_kernels import atomic_op, binary_op
from compat_helpers import compile_error, run_interp

import tilec.language as tl
from tilec.ir.type_names import BY_SIGNATURE


def _binary_error(op: str, x: str, y: str):
    return compile_error(binary_op, {"x_ptr": x, "y_ptr": y, "out_ptr": x}, OP=op)


@pytest.mark.parametrize("op", ["&", "|", "^", "<<", ">>"])
@pytest.mark.parametrize(("x", "y", "names"), [
    ("*fp32", "*fp32", "tl.float32 and tl.float32"),
    ("*fp16", "*i32", "tl.float16 and tl.int32"),
    ("*i32", "*fp64", "tl.int32 and tl.float64"),
])  # fmt: skip
def test_bitwise_operators_on_floats_are_rejected(op, x, y, names):
    error = _binary_error(op, x, y)
    assert f"invalid operands of type {names}" in error.message, error.message
    assert f"operator {op} is not defined for" in error.message
    assert f"z = x {op} y" in str(error)  # located at the expression
    assert "cast with x.to(tl.int32)" in error.hint


def test_invert_of_a_float_is_rejected():
    error = _binary_error("~", "*bf16", "*bf16")
    assert "wrong type argument to unary invert (tl.bfloat16)" in error.message, error.message
    assert "z = ~x" in str(error)


@pytest.mark.parametrize("op", ["/", "//", "%"])
@pytest.mark.parametrize(("x", "y"), [("*i32", "*u32"), ("*u32", "*i32"), ("*i8", "*u64")])
def test_division_of_mixed_signedness_is_rejected(op, x, y):
    error = _binary_error(op, x, y)
    names = f"{_tl(x)} and {_tl(y)}"
    assert f"cannot use {op} with {names} because they have different signedness" in error.message
    assert "this is unlikely to result in a useful answer" in error.message
    assert "cast them to the same signedness" in error.hint
    assert f"z = x {op} y" in str(error)


@pytest.mark.parametrize(("op", "expected"), [("//", [3, 0, 7]), ("%", [1, 5, 0]), ("% 3", None)])
def test_division_of_one_signedness_and_by_a_literal_is_accepted(op, expected):
    x = np.array([7, 5, 14, 1, 2, 3, 4, 5], np.uint32)
    y = np.array([2, 9, 2, 1, 1, 1, 1, 1], np.uint32)
    out = np.zeros(8, np.uint32)
    signature = {"x_ptr": "*u32", "y_ptr": "*u32", "out_ptr": "*u32"}
    run_interp(binary_op, signature, [x, y, out], OP=op)
    if expected is None:
        np.testing.assert_array_equal(out, x % 3)
    else:
        np.testing.assert_array_equal(out[:3], expected)


@pytest.mark.parametrize("op", ["+ -1", "-1 *", "< -1", "& -1"])
@pytest.mark.parametrize("dtype", ["*u32", "*u8"])
def test_a_negative_scalar_with_an_unsigned_tensor_is_rejected(op, dtype):
    error = _binary_error(op, dtype, dtype)
    symbol = op.replace("-1", "").strip()
    expected = f"cannot perform {symbol} between an unsigned tensor ({_tl(dtype)}) and a negative"
    assert expected in error.message, error.message
    assert "perform an explicit cast on one of them" in error.hint


@pytest.mark.parametrize("op", ["+ -1", "-1 *", "< -1", "& -1"])
def test_a_negative_scalar_with_a_signed_tensor_is_accepted(op):
    x = np.arange(-4, 4, dtype=np.int32)
    out = np.zeros(8, np.int32)
    signature = {"x_ptr": "*i32", "y_ptr": "*i32", "out_ptr": "*i32"}
    run_interp(binary_op, signature, [x, x.copy(), out], OP=op)
    expected = {"+ -1": x - 1, "-1 *": -x, "< -1": (x < -1).astype(np.int32), "& -1": x}[op]
    np.testing.assert_array_equal(out, expected)


RMW = ["add", "xchg", "max", "min", "and", "or", "xor"]


@pytest.mark.parametrize("op", RMW)
@pytest.mark.parametrize("dtype", ["int8", "uint8", "int16", "uint16", "int1"])
def test_atomics_on_narrow_integers_are_rejected(op, dtype):
    error = _atomic_error(op, dtype)
    assert f"tl.atomic_{op} does not support tl.{dtype}" in error.message, error.message
    assert "use a tl.int32 (or tl.int64) buffer" in error.hint
    assert f"tl.atomic_{op}(ptrs, one)" in str(error)


@pytest.mark.parametrize("op", ["xchg", "max", "min", "and"])
@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_atomics_other_than_add_on_16_bit_floats_are_rejected(op, dtype):
    error = _atomic_error(op, dtype)
    assert f"tl.atomic_{op} does not support tl.{dtype}" in error.message, error.message


@pytest.mark.parametrize("dtype", ["int8", "uint8", "int1"])
def test_compare_and_swap_on_bytes_is_rejected(dtype):
    error = _atomic_error("cas", dtype)
    expected = f"tl.atomic_cas only supports elements with width {{16, 32, 64}}, got tl.{dtype}"
    assert expected in error.message, error.message


@pytest.mark.parametrize(("op", "dtype"), [("add", "float16"), ("add", "bfloat16"),
                                           ("cas", "int16"), ("cas", "float16"),
                                           ("xchg", "int32"), ("max", "uint64")])  # fmt: skip
def test_atomics_triton_accepts_compile_and_run(op, dtype):
    numpy_dtype = "uint16" if dtype == "bfloat16" else dtype  # bf16 buffers hold bit patterns
    x, out = np.zeros(8, numpy_dtype), np.full(8, 7, numpy_dtype)
    signature = {"x_ptr": _signature(dtype), "out_ptr": _signature(dtype)}
    run_interp(atomic_op, signature, [x, out], OP=op, DTYPE=getattr(tl, dtype))
    np.testing.assert_array_equal(out, 0)  # the old values
    one = 0x3F80 if dtype == "bfloat16" else 1
    np.testing.assert_array_equal(x, one)


def _atomic_error(op: str, dtype: str):
    signature = {"x_ptr": _signature(dtype), "out_ptr": _signature(dtype)}
    return compile_error(atomic_op, signature, OP=op, DTYPE=getattr(tl, dtype))


def _signature(dtype: str) -> str:
    return "*" + next(s.signature for s in BY_SIGNATURE.values() if s.language == dtype)


def _tl(signature: str) -> str:
    return "tl." + BY_SIGNATURE[signature.lstrip("*")].language
