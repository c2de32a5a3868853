"""User mistakes from issue 14's probing list end in errors that name the kernel, its argument or
its source line, never in an internal error: `tl.trans` of a scalar, `tl.reshape` of a scalar,
recursive @jit functions, `BLOCK=True`, bad grids ('12', (2.9,), None), big-endian, masked and
read-only arrays; and the frontend's IR is verified before any pass, so a pass is not blamed for
what the frontend built."""

from __future__ import annotations

import inspect

import numpy as np
import pytest

import tilec
import tilec.language as tl
from tilec.dialects import tile
from tilec.frontend import CompilationError, compile_to_tir
from tilec.frontend import generator as frontend_generator
from tilec.frontend.semantics import Semantics
from tilec.ir.attributes import int_array
from tilec.ir.types import TensorType
from tilec_interp.memory import InterpreterError


def line_of(kernel, text: str) -> int:
    lines, first = inspect.getsourcelines(kernel.fn)
    [index] = [i for i, line in enumerate(lines) if text in line]
    return first + index


@tilec.jit
def trans_scalar_kernel(p):
    x = tl.load(p)
    tl.store(p, tl.trans(x))


@tilec.jit
def trans_order_kernel(p):
    x = tl.load(p + tl.arange(0, 4)[:, None] * 4 + tl.arange(0, 4)[None, :])
    tl.store(p + tl.arange(0, 4)[:, None] * 4 + tl.arange(0, 4)[None, :], tl.trans(x, 0, 0))


def test_trans_of_a_scalar_is_a_located_error_not_an_invalid_ir_blamed_on_inline():
    with pytest.raises(CompilationError) as info:
        compile_to_tir(trans_scalar_kernel, {"p": "*fp32"})
    assert info.value.line == line_of(trans_scalar_kernel, "tl.trans(x)")
    assert "tl.trans needs a tensor, got a scalar of type f32" in info.value.message


def test_trans_with_dims_that_are_no_permutation_is_a_located_error():
    with pytest.raises(CompilationError, match=r"dims \[0, 0\] are not a permutation"):
        compile_to_tir(trans_order_kernel, {"p": "*fp32"})


def test_invalid_ir_from_the_frontend_is_reported_at_the_kernel_line(monkeypatch):
    """An op the frontend builds wrongly (here: the old unchecked `tl.trans` of a scalar) is
    caught by verifying the frontend's IR, located at the line that built it and called a tilec
    bug, instead of "pass 'inline' produced invalid IR"."""

    def unchecked_trans(self, x, order=None):
        return self.create(tile.TransOp, [x], TensorType((), x.dtype), order=int_array(()))

    monkeypatch.setattr(Semantics, "trans", unchecked_trans)
    with pytest.raises(CompilationError) as info:
        compile_to_tir(trans_scalar_kernel, {"p": "*fp32"})
    error = info.value
    assert error.line == line_of(trans_scalar_kernel, "tl.trans(x)")
    assert "'tile.trans' op" in error.message and "must be tensor" in error.message
    assert "tilec bug" in error.hint
    assert "inline" not in str(error)


@tilec.jit
def reshape_scalar_kernel(p, n, SHAPE: tl.constexpr):
    tl.store(p + tl.arange(0, 1), tl.reshape(n, SHAPE))


def test_a_scalar_reshaped_to_one_element_is_that_element():
    out = np.zeros(1, np.int32)
    reshape_scalar_kernel[(1,)](out, 7, SHAPE=[1], backend="interp")
    assert out[0] == 7


def test_a_scalar_reshaped_to_more_elements_is_a_located_error():
    with pytest.raises(CompilationError, match=r"cannot reshape a scalar to \[4\]") as info:
        compile_to_tir(reshape_scalar_kernel, {"p": "*i32", "n": "i32"}, {"SHAPE": [4]})
    assert "tl.full" in info.value.hint


@tilec.jit
def forever(x):
    return forever(x + 1)


@tilec.jit
def recursive_kernel(p):
    tl.store(p, forever(tl.load(p)))


@tilec.jit
def triangle(n: tl.constexpr):
    if n == 0:
        return 0
    else:
        return n + triangle(n - 1)


@tilec.jit
def triangle_kernel(p, N: tl.constexpr):
    tl.store(p, tl.load(p) + triangle(N))


def test_recursion_without_a_compile_time_end_is_a_located_error():
    with pytest.raises(CompilationError) as info:
        compile_to_tir(recursive_kernel, {"p": "*i32"})
    error = info.value
    assert error.line == line_of(forever, "return forever(x + 1)")
    assert "recursive_kernel -> forever -> forever -> ..." in error.message
    assert "constexpr" in error.hint


def test_recursion_that_ends_on_a_constexpr_compiles():
    out = np.zeros(1, np.int32)
    triangle_kernel[(1,)](out, N=20, backend="interp")
    assert out[0] == 210


def test_a_frontend_recursion_error_is_a_located_error(monkeypatch):
    monkeypatch.setattr(frontend_generator, "MAX_INLINE_DEPTH", 10**6)
    with pytest.raises(CompilationError, match="nests too deeply") as info:
        compile_to_tir(recursive_kernel, {"p": "*i32"})
    assert info.value.line == line_of(recursive_kernel, "def recursive_kernel")


@tilec.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    x = tl.load(x_ptr + offsets, mask=mask)
    tl.store(out_ptr + offsets, x + tl.load(y_ptr + offsets, mask=mask), mask=mask)


@tilec.jit
def full_kernel(p, B: tl.constexpr):
    tl.store(p + tl.arange(0, 1), tl.sum(tl.full([B], 1, tl.int32), axis=0))


def test_a_bool_block_size_is_a_located_error_not_a_parse_error():
    x = np.zeros(8, np.float32)
    with pytest.raises(CompilationError) as info:
        add_kernel[(1,)](x, x, x, 8, BLOCK=True, backend="interp")
    assert info.value.line == line_of(add_kernel, "tl.arange(0, BLOCK)")
    assert "tl.arange's end must be an int, got True (bool)" in info.value.message
    with pytest.raises(CompilationError, match="bool dimension"):
        compile_to_tir(full_kernel, {"p": "*i32"}, {"B": True})


@pytest.mark.parametrize(
    ("grid", "error", "text"),
    [
        ("12", TypeError, "must be an int or a tuple of 1 to 3 ints, got '12'"),
        ((2.9,), TypeError, "got (2.9,); for a size computed by division, use tilec.cdiv"),
        (None, TypeError, "got None"),
        (lambda meta: None, TypeError, "(returned by the grid function) must be an int"),
        ((1, 1, 1, 1), ValueError, "must have 1 to 3 dimensions"),
        ((), ValueError, "must have 1 to 3 dimensions"),
        ((-1,), ValueError, "has a negative size"),
        ((True,), TypeError, "got (True,)"),
    ],
)
def test_a_grid_that_is_not_1_to_3_ints_is_an_error_naming_the_kernel(grid, error, text):
    x = np.zeros(8, np.float32)
    with pytest.raises(error) as info:
        add_kernel[grid](x, x, x, 8, BLOCK=8, backend="interp")
    assert "the grid of kernel 'add_kernel'" in str(info.value)
    assert text in str(info.value)


def test_a_float_grid_is_refused_also_after_a_good_launch():
    """The fast launch path (a call like an earlier one) passes a tuple grid on unchecked; the
    interpreter refuses floats instead of truncating 2.9 to 2."""
    x, out = np.arange(8, dtype=np.float32), np.zeros(8, np.float32)
    add_kernel[(1,)](x, x, out, 8, BLOCK=8, backend="interp")
    with pytest.raises(TypeError, match=r"grid of @add_kernel must hold ints, got \(2.9,\)"):
        add_kernel[(2.9,)](x, x, out, 8, BLOCK=8, backend="interp")
    add_kernel[(np.int64(1),)](x, x, out, 8, BLOCK=8, backend="interp")
    np.testing.assert_array_equal(out, 2 * x)


def test_big_endian_arrays_are_refused_naming_the_argument():
    x = np.arange(8, dtype=">f4")
    out = np.zeros(8, np.float32)
    with pytest.raises(TypeError) as info:
        add_kernel[(1,)](x, x, out, 8, BLOCK=8, backend="interp")
    assert "argument 'x_ptr' of add_kernel" in str(info.value)
    assert "non-native byte order (>f4)" in str(info.value)
    assert "newbyteorder('=')" in str(info.value)


def test_masked_arrays_are_refused_also_after_a_launch_with_plain_arrays():
    x = np.arange(8, dtype=np.float32)
    add_kernel[(1,)](x, x, np.zeros(8, np.float32), 8, BLOCK=8, backend="interp")
    masked = np.ma.masked_array(np.zeros(8, np.float32), mask=[0, 1] * 4)
    with pytest.raises(TypeError, match="argument 'out_ptr' of add_kernel: a masked array"):
        add_kernel[(1,)](x, x, masked, 8, BLOCK=8, backend="interp")


def test_a_store_to_a_read_only_array_is_located_on_the_interpreter():
    x = np.arange(8, dtype=np.float32)
    x.flags.writeable = False  # reading a read-only array is fine
    out = np.zeros(8, np.float32)
    add_kernel[(1,)](x, x, out, 8, BLOCK=8, backend="interp")
    np.testing.assert_array_equal(out, 2 * x)
    out.flags.writeable = False
    with pytest.raises(InterpreterError) as info:
        add_kernel[(1,)](x, x, out, 8, BLOCK=8, backend="interp")
    text = str(info.value)
    assert f":{line_of(add_kernel, 'tl.store(out_ptr')}:" in text
    assert "tile.store writes to argument 'out_ptr', a read-only array" in text
    add_kernel[(1,)](x, x, out, 0, BLOCK=8, backend="interp")  # masked off everywhere: no write


@tilec.jit
def halves_kernel(a_ptr, b_ptr, HALF: tl.constexpr):
    first = tl.arange(0, HALF)
    tl.store(a_ptr + first, tl.load(a_ptr + first) + 1)
    tl.store(b_ptr + HALF + first, tl.load(b_ptr + HALF + first) + 2)


def test_aliased_views_written_through_both_arguments_keep_both_writes():
    """Before, the interpreter copied each argument in and wrote the copies back in argument
    order, so the second copy undid the first one's writes."""
    storage = np.zeros(16, np.float32)
    view = storage[::2]  # addressed in place from its first element, as on a GPU
    halves_kernel[(1,)](view, view, HALF=4, backend="interp")
    np.testing.assert_array_equal(storage[:8], [1, 1, 1, 1, 2, 2, 2, 2])
    assert not storage[8:].any()


@tilec.jit
def rank0_kernel(p, q, n):
    tl.atomic_cas(p, tl.full([], 0, tl.int32), tl.full([], 5, tl.int32))
    tl.store(q, tl.full([], 3, tl.int32))
    if n == tl.full([], 2, tl.int32):
        tl.store(q + 1, n)


def test_rank0_full_in_atomics_stores_and_compares():
    """Issue 14 listed these as "pass 'inline' produced invalid IR"."""
    p, q = np.zeros(1, np.int32), np.zeros(2, np.int32)
    rank0_kernel[(1,)](p, q, 2, backend="interp")
    assert p[0] == 5 and list(q) == [3, 2]


@tilec.jit
def argmax_1x1_kernel(p, q):
    x = tl.load(p + tl.arange(0, 1)[:, None] + tl.arange(0, 1)[None, :])
    tl.store(q + tl.arange(0, 1), tl.argmax(x, axis=0))


@pytest.mark.parametrize(("backend", "target"), [("nvidia", "sm_90a"), ("amd", "gfx942")])
def test_argmax_over_a_1x1_tile_compiles(backend, target):
    """Issue 14: a ValueError in assign_layouts."""
    compiled = tilec.compile(
        argmax_1x1_kernel, {"p": "*fp32", "q": "*i32"}, backend=backend, target=target
    )
    assert "llir" in compiled.asm
