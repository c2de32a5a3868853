"""`tl.inline_asm_elementwise` where there is no machine to run it: the interp backend refuses it
with a located error (Triton's interpreter refuses it too), and the frontend checks its arguments
as Triton does, on every backend."""

from __future__ import annotations

import numpy as np
import pytest

import tilec
import tilec.language as tl
from tilec.frontend import CompilationError
from tilec_interp.memory import InterpreterError


@tilec.jit
def asm_kernel(X, Y):
    x = tl.load(X + tl.arange(0, 16))
    y = tl.inline_asm_elementwise("shl.b32 $0, $1, 3;", "=r,r", [x], dtype=tl.int32,
                                  is_pure=True, pack=1)  # fmt: skip
    tl.store(Y + tl.arange(0, 16), y)


def test_interp_refuses_inline_assembly_with_its_location():
    x, y = np.arange(16, dtype=np.int32), np.zeros(16, np.int32)
    with pytest.raises(InterpreterError, match="cannot execute inline assembly") as error:
        asm_kernel[(1,)](x, y, backend="interp")
    assert "test_interp_inline_asm.py:19" in str(error.value)
    assert "backend='nvidia'" in str(error.value)


@tilec.jit
def bad_kernel(X, Y, WHICH: tl.constexpr):
    x = tl.load(X + tl.arange(0, 16))
    if WHICH == "pack":
        y = tl.inline_asm_elementwise("", "=r,r", [x], tl.int32, True, 0)
    elif WHICH == "pure":
        y = tl.inline_asm_elementwise("", "=r,r", [x], tl.int32, 1, 1)
    elif WHICH == "dtype":
        y = tl.inline_asm_elementwise("", "=r,r", [x], (), True, 1)
    elif WHICH == "not_dtype":
        y = tl.inline_asm_elementwise("", "=r,r", [x], "int32", True, 1)
    elif WHICH == "args":
        y = tl.inline_asm_elementwise("", "=r,r", x, tl.int32, True, 1)
    elif WHICH == "asm":
        y = tl.inline_asm_elementwise(3, "=r,r", [x], tl.int32, True, 1)
    else:  # i16 travels two a register: pack 3 does not split into them
        y = tl.inline_asm_elementwise("", "=r,r", [x.to(tl.int16)], tl.int32, True, 3)
    tl.store(Y + tl.arange(0, 16), y)


@pytest.mark.parametrize(
    ("which", "message"),
    [
        ("pack", "pack must be an int of 1 or more, got 0"),
        ("pure", "is_pure must be True or False, got 1"),
        ("dtype", "needs at least one result dtype"),
        ("not_dtype", "dtype must be a tl dtype or a tuple of them, got 'int32'"),
        ("args", "args must be a list or tuple of values"),
        ("asm", "asm must be a string, got 3"),
        ("split", r"pack=3 does not split into registers of 2 i16 elements"),
    ],
)
def test_arguments_are_checked(which, message):
    with pytest.raises(CompilationError, match=message) as error:
        tilec.compile(bad_kernel, {"X": "*i32", "Y": "*i32"}, {"WHICH": which}, backend="interp")
    assert "test_interp_inline_asm.py" in str(error.value)


@tilec.jit
def shapes_kernel(X, Y, Z):
    x = tl.load(X + tl.arange(0, 16)[:, None] * 8 + tl.arange(0, 8)[None, :])
    y = tl.load(Y + tl.arange(0, 8))
    (a, b) = tl.inline_asm_elementwise("", "=r,=r,r,r,r", [x, y[None, :], 2], (tl.int32, tl.float32),
                                       False, 1)  # fmt: skip
    s = tl.inline_asm_elementwise("", "=r,r", [3], tl.int64, True, 1)
    tl.static_assert(a.shape == [16, 8] and b.dtype == tl.float32 and s.dtype == tl.int64)
    tl.store(Z + tl.arange(0, 16)[:, None] * 8 + tl.arange(0, 8)[None, :], a + s)


def test_arguments_broadcast_and_results_take_each_dtype():
    """Triton's rules: operands broadcast to one shape (a Python int is an i32 scalar), one
    result per dtype, a scalar asm where every operand is a scalar."""
    compiled = tilec.compile(shapes_kernel, {"X": "*i32", "Y": "*i32", "Z": "*i32"}, {},
                             backend="interp")  # fmt: skip
    tir = compiled.asm["tir"]
    assert "tile.elementwise_inline_asm_effects" in tir
    assert ": tensor<16x8xi32>, tensor<16x8xf32>" in tir
    assert 'constraints = "=r,r", pack = 1 : i32} : i64' in tir
