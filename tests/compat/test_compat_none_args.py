"""`None` arguments, as Triton takes them (issue 20): a `None` passed for any parameter is a
compile-time None (part of the specialization), kernels branch on it with `is None` /
`is not None` folded at compile time, and a later launch with a tensor for the same parameter
is another specialization, also through the launch fast path."""

import numpy as np
import pytest

import tilec
import tilec.language as tl
from tilec.frontend import CompilationError


@tilec.jit
def scale_shift(x_ptr, w_ptr, b_ptr, N: tl.constexpr, C: tl.constexpr = tl.constexpr(None)):  # noqa: B008
    offsets = tl.arange(0, N)
    x = tl.load(x_ptr + offsets)
    if w_ptr is not None:
        x = x * tl.load(w_ptr + offsets)
    if b_ptr is None:
        x = x + 100.0
    else:
        x = x + tl.load(b_ptr + offsets)
    if not C is None:  # noqa: E714 (written as kernels in the wild write it)
        x = x + C
    tl.store(x_ptr + offsets, x)


@tilec.jit
def optional_bias(out_ptr, bias_ptr=None, N: tl.constexpr = 8):
    offsets = tl.arange(0, N)
    value = tl.full((N,), 1.0, tl.float32)
    if bias_ptr is not None:
        value += tl.load(bias_ptr + offsets)
    tl.store(out_ptr + offsets, value)


def _launch(w, b, **meta):
    x = np.full(8, 2.0, np.float32)
    compiled = scale_shift[(1,)](x, w, b, 8, backend="interp", **meta)
    return x, compiled


def test_none_arguments_are_compile_time_constants_and_kernels_branch_on_them(rng):
    w, b = rng.random(8, dtype=np.float32), rng.random(8, dtype=np.float32)
    x, compiled = _launch(None, None)
    np.testing.assert_allclose(x, np.full(8, 102.0))
    assert compiled.constexprs["w_ptr"] is None and "w_ptr" not in compiled.signature
    x, _ = _launch(w, None)
    np.testing.assert_allclose(x, 2 * w + 100, rtol=1e-6)
    x, _ = _launch(None, b)
    np.testing.assert_allclose(x, 2 + b, rtol=1e-6)
    x, with_both = _launch(w, b)
    np.testing.assert_allclose(x, 2 * w + b, rtol=1e-6)
    assert with_both.signature["w_ptr"] == "*fp32" and "w_ptr" not in with_both.constexprs
    x, _ = _launch(None, None, C=5.0)
    np.testing.assert_allclose(x, np.full(8, 107.0))


def test_none_and_a_tensor_for_one_parameter_are_two_fast_launches(rng, general):
    w = rng.random(8, dtype=np.float32)
    for _ in range(3):
        x, _ = _launch(None, None)
        np.testing.assert_allclose(x, np.full(8, 102.0))
        x, _ = _launch(w, None)
        np.testing.assert_allclose(x, 2 * w + 100, rtol=1e-6)
        x = np.full(8, 2.0, np.float32)
        scale_shift[(1,)](x, w_ptr=None, b_ptr=w, N=8, backend="interp")
        np.testing.assert_allclose(x, 2 + w, rtol=1e-6)
    assert len(general) == 3  # the first launch of each call shape; the rest were fast


def test_a_none_default_of_a_pointer_parameter(rng, general):
    bias = rng.random(8, dtype=np.float32)
    for _ in range(2):
        out = np.zeros(8, np.float32)
        optional_bias[(1,)](out, backend="interp")
        np.testing.assert_array_equal(out, np.ones(8))
        optional_bias[(1,)](out, bias, backend="interp")
        np.testing.assert_allclose(out, 1 + bias, rtol=1e-6)
    assert len(general) == 2


@tilec.jit
def is_checks(out_ptr, x_ptr, K: tl.constexpr):
    tl.store(out_ptr + 0, (x_ptr is not None) * 1.0)
    tl.store(out_ptr + 1, (x_ptr is None) * 1.0)
    tl.store(out_ptr + 2, (K is None) * 1.0)
    tl.store(out_ptr + 3, (not K is not None) * 1.0)


def test_is_and_is_not_fold_on_tensors_and_constants():
    out = np.zeros(4, np.float32)
    is_checks[(1,)](out, out, None, backend="interp")
    np.testing.assert_array_equal(out, [1.0, 0.0, 1.0, 1.0])
    is_checks[(1,)](out, None, 3, backend="interp")
    np.testing.assert_array_equal(out, [0.0, 1.0, 0.0, 0.0])


@tilec.jit
def loads_none(out_ptr, w_ptr, N: tl.constexpr):
    offsets = tl.arange(0, N)
    tl.store(out_ptr + offsets, tl.load(w_ptr + offsets))


@tilec.jit
def scales_none(out_ptr, w, N: tl.constexpr):
    tl.store(out_ptr + tl.arange(0, N), w * 2)


@tilec.jit
def reads_an_attribute_of_none(out_ptr, w, N: tl.constexpr):
    tl.store(out_ptr + tl.arange(0, N), tl.zeros((N,), w.dtype.element_ty))


@tilec.jit
def indexes_none(out_ptr, w, N: tl.constexpr):
    tl.store(out_ptr + tl.arange(0, N), w[0])


@tilec.jit
def negates_none(out_ptr, w, N: tl.constexpr):
    tl.store(out_ptr + tl.arange(0, N), -w)


@tilec.jit
def loops_to_none(out_ptr, w, N: tl.constexpr):
    for i in range(w):
        tl.store(out_ptr + i, 1.0)


@tilec.jit
def branches_on_not_none(out_ptr, w, N: tl.constexpr):
    if not w:
        tl.store(out_ptr + tl.arange(0, N), tl.full((N,), 4.0, tl.float32))


def test_not_none_is_true():
    out = np.zeros(8, np.float32)
    branches_on_not_none[(1,)](out, None, 8, backend="interp")
    np.testing.assert_array_equal(out, np.full(8, 4.0))


@pytest.mark.parametrize(
    ("kernel", "text"),
    [
        (loads_none, "w_ptr + offsets"),
        (scales_none, "w * 2"),
        (reads_an_attribute_of_none, "w.dtype"),
        (indexes_none, "w[0]"),
        (negates_none, "-w"),
        (loops_to_none, "range(w)"),
    ],
)
def test_a_none_used_as_a_value_is_a_located_error(kernel, text):
    with pytest.raises(CompilationError) as info:
        kernel[(1,)](np.zeros(8, np.float32), None, 8, backend="interp")
    error = info.value
    assert error.file == __file__ and text in str(error)
    assert "None" in str(error) and "if x is not None:" in str(error)
