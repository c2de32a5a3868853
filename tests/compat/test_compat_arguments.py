"""Triton's arguments are honoured, or rejected with a located error naming them (issue 11)."""

import numpy as np
import pytest
from compat_helpers import compile_error, run_interp
from compat_kernels import (
    abs_kernel,
    bitcast_kernel,
    bogus_keyword,
    bogus_to_keyword,
    dot_kernel,
    dot_keywords,
    downcast_kernel,
    memory_keywords,
    range_hints,
    range_keywords,
    shift_kernel,
    static_range_step,
    sum_dtype_kernel,
)

import tilec.language as tl
from tilec.frontend.control_flow import LOOP_ITERATORS
from tilec.ir.type_names import SIGNATURE_BY_TORCH
from tilec_interp.dtypes import tf32_truncate


@pytest.mark.parametrize(("n", "step"), [(20, 7), (10, 1), (9, 3)])
def test_static_range_honours_step(n, step):
    out = np.zeros(1, np.int32)
    run_interp(static_range_step, {"out_ptr": "*i32"}, [out], N=n, STEP=step)
    assert out[0] == sum(range(0, n, step))


def test_range_takes_its_arguments_by_keyword():
    out = np.zeros(1, np.int32)
    run_interp(range_keywords, {"out_ptr": "*i32", "n": "i32"}, [out, 20], STEP=3)
    assert out[0] == sum(range(1, 20, 3))


@pytest.mark.parametrize(
    ("hint", "value"),
    [
        ("num_stages", None),
        ("num_stages", 0),
        ("num_stages", 1),
        ("num_stages", 3),
        ("loop_unroll_factor", 1),
        ("loop_unroll_factor", 0),
        ("loop_unroll_factor", 4),
        ("flatten", False),
        ("flatten", True),
        ("warp_specialize", False),
        ("warp_specialize", True),
        ("disable_licm", False),
        ("disable_licm", True),
        ("disallow_acc_multi_buffer", True),
        ("disallow_acc_multi_buffer", False),
    ],
)
def test_every_range_hint_of_triton_is_accepted(hint, value):
    out = np.zeros(1, np.int32)
    run_interp(range_hints, {"out_ptr": "*i32", "n": "i32"}, [out, 10], HINT=hint, VALUE=value)
    assert out[0] == 45


@pytest.mark.parametrize(
    ("hint", "value", "message"),
    [
        ("num_stages", 2.5, "tl.range's num_stages must be an int or None, got 2.5"),
        ("num_stages", True, "tl.range's num_stages must be an int or None, got True"),
        ("loop_unroll_factor", 2.5, "loop_unroll_factor must be an int or None, got 2.5"),
        ("flatten", 1, "tl.range's flatten must be a bool, got 1"),
        ("warp_specialize", "yes", "tl.range's warp_specialize must be a bool, got 'yes'"),
        ("disable_licm", None, "tl.range's disable_licm must be a bool, got None"),
        ("disallow_acc_multi_buffer", 2, "disallow_acc_multi_buffer must be a bool"),
        ("bogus", 1, "unexpected keyword argument 'bogus'"),
        ("static_hint", 2, "tl.static_range takes no num_stages"),
        (
            "static_bogus",
            2,
            "bad arguments to tl.static_range: tl.static_range() got an unexpected",
        ),
        ("python_range", 2, "range() takes no keyword arguments, got step"),
    ],
)
def test_range_hints_of_a_wrong_type_are_rejected_by_name(hint, value, message):
    error = compile_error(range_hints, {"out_ptr": "*i32", "n": "i32"}, HINT=hint, VALUE=value)
    assert message in error.message, error.message


@pytest.mark.parametrize(
    ("source", "target", "to"),
    [
        (np.float32, np.int32, tl.int32),
        (np.int32, np.float32, tl.float32),
        (np.float16, np.int16, tl.int16),
        (np.int64, np.uint64, tl.uint64),
        (np.float64, np.int64, tl.int64),
    ],
)
def test_to_with_bitcast_reinterprets(source, target, to):
    x = np.array([1.5, -2.25, 3.0, -0.0], np.float64).astype(source)
    if np.dtype(source).kind in "iu":
        x = np.array([1, -2, 1 << 20, 7], source)
    out = np.zeros(4, target)
    sig = {"x_ptr": f"*{_sig(source)}", "out_ptr": f"*{_sig(target)}"}
    run_interp(bitcast_kernel, sig, [x, out], N=4, TO=to)
    np.testing.assert_array_equal(out, x.view(target))


def test_bitcast_between_sizes_is_rejected():
    sig = {"x_ptr": "*fp32", "out_ptr": "*i64"}
    error = compile_error(bitcast_kernel, sig, N=4, TO=tl.int64)
    assert "cannot bitcast f32 to i64: they have different sizes" in error.message


def test_fp_downcast_rounding_rtne_is_the_default_rounding():
    x = np.array([1.0 + 2**-11, 1.0 + 3 * 2**-11, 65504.0, -0.1], np.float32)
    out = np.zeros(4, np.float16)
    run_interp(
        downcast_kernel, {"x_ptr": "*fp32", "out_ptr": "*fp16"}, [x, out], N=4, ROUNDING="rtne"
    )
    np.testing.assert_array_equal(out, x.astype(np.float16))


@pytest.mark.parametrize(
    ("signature", "message"),
    [
        ({"x_ptr": "*fp32", "out_ptr": "*fp16"}, "fp_downcast_rounding='rtz' is not supported"),
        # to the same type it is x itself, as Triton's (test_compat_as_triton_library)
        ({"x_ptr": "*i16", "out_ptr": "*fp16"}, "only to float conversions to a narrower type"),
    ],
)
def test_fp_downcast_rounding_rtz_and_misuse_are_rejected(signature, message):
    error = compile_error(downcast_kernel, signature, N=4, ROUNDING="rtz")
    assert message in error.message


def test_sum_with_dtype_sums_in_that_dtype():
    x = np.full(64, 5, np.int32)  # 320 wraps in int8 to 64
    out = np.zeros(1, np.int8)
    run_interp(sum_dtype_kernel, {"x_ptr": "*i32", "out_ptr": "*i8"}, [x, out], N=64, DTYPE=tl.int8)
    assert out[0] == np.int8(np.int64(320) - 256)


def test_sum_with_a_wider_dtype_widens_first():
    x = np.full(64, 100, np.int8)
    out = np.zeros(1, np.int32)
    run_interp(
        sum_dtype_kernel, {"x_ptr": "*i8", "out_ptr": "*i32"}, [x, out], N=64, DTYPE=tl.int32
    )
    assert out[0] == 6400


@pytest.mark.parametrize("precision", [None, "ieee"])
def test_dot_out_dtype_is_the_result_type(rng, precision):
    a = rng.standard_normal((16, 16)).astype(np.float16)
    b = rng.standard_normal((16, 16)).astype(np.float16)
    c = np.zeros((16, 16), np.float16)
    sig = {"a_ptr": "*fp16", "b_ptr": "*fp16", "c_ptr": "*fp16"}
    run_interp(dot_kernel, sig, [a, b, c], N=16, OUT=tl.float16, PRECISION=precision)
    reference = (a.astype(np.float32) @ b.astype(np.float32)).astype(np.float16)
    np.testing.assert_allclose(c, reference, rtol=1e-3, atol=1e-3)


def test_dot_ieee_on_f32_is_exact_f32(rng):
    a = rng.standard_normal((16, 16)).astype(np.float32)
    b = rng.standard_normal((16, 16)).astype(np.float32)
    c = np.zeros((16, 16), np.float32)
    sig = {"a_ptr": "*fp32", "b_ptr": "*fp32", "c_ptr": "*fp32"}
    run_interp(dot_kernel, sig, [a, b, c], N=16, OUT=tl.float32, PRECISION="ieee")
    np.testing.assert_allclose(c, a.astype(np.float64) @ b, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("precision", ["tf32", "tf32x3"])
def test_dot_tf32_on_f32_is_honoured(rng, precision):
    """tf32 rounds the inputs to 10 mantissa bits; 3xTF32 recovers about f32's accuracy."""
    a = (1.0 + rng.integers(0, 2**10, (16, 16)) * 2.0**-20).astype(np.float32)
    c = np.zeros((16, 16), np.float32)
    sig = {"a_ptr": "*fp32", "b_ptr": "*fp32", "c_ptr": "*fp32"}
    run_interp(dot_kernel, sig, [a, np.eye(16, dtype=np.float32), c], N=16, OUT=tl.float32,
               PRECISION=precision)  # fmt: skip
    expected = tf32_truncate(a) if precision == "tf32" else a
    np.testing.assert_array_equal(c, expected)


def test_dot_tf32_on_f16_has_no_effect_as_in_triton():
    sig = {"a_ptr": "*fp16", "b_ptr": "*fp16", "c_ptr": "*fp32"}
    a = np.eye(16, dtype=np.float16)
    c = np.zeros((16, 16), np.float32)
    run_interp(dot_kernel, sig, [a, a, c], N=16, OUT=tl.float32, PRECISION="tf32")
    np.testing.assert_array_equal(c, np.eye(16))


@pytest.mark.parametrize(
    ("which", "message"),
    [
        (
            "bad_precision",
            "input_precision must be one of 'tf32', 'tf32x3', 'ieee', 'bf16x3', 'bf16x6'",
        ),
        ("acc_mismatch", "out_dtype f16 differs from the accumulator's f32"),
    ],
)
def test_dot_keywords_tilec_cannot_honour_are_rejected(which, message):
    sig = {"a_ptr": "*fp32", "b_ptr": "*fp32", "c_ptr": "*fp32"}
    error = compile_error(dot_keywords, sig, N=16, WHICH=which)
    assert message in error.message


@pytest.mark.parametrize("which", ["allow_tf32", "imprecise"])
def test_dot_allow_tf32_true_is_tf32(rng, which):
    """`allow_tf32=True`, and `max_num_imprecise_acc=32`, which Triton takes on every tl.dot and
    applies to float8 inputs only (tests/lowering/test_lower_wgmma_fp8.py has those): tf32."""
    a = rng.standard_normal((16, 16)).astype(np.float32)
    c = np.zeros((16, 16), np.float32)
    sig = {"a_ptr": "*fp32", "b_ptr": "*fp32", "c_ptr": "*fp32"}
    run_interp(dot_keywords, sig, [a, a, c], N=16, WHICH=which)
    rounded = tf32_truncate(a).astype(np.float64)
    np.testing.assert_allclose(c, rounded @ rounded, rtol=1e-5, atol=1e-5)


def test_dot_allow_tf32_false_is_ieee(rng):
    a = rng.standard_normal((16, 16)).astype(np.float32)
    c = np.zeros((16, 16), np.float32)
    sig = {"a_ptr": "*fp32", "b_ptr": "*fp32", "c_ptr": "*fp32"}
    run_interp(dot_keywords, sig, [a, a, c], N=16, WHICH="allow_tf32_false")
    np.testing.assert_allclose(c, a.astype(np.float64) @ a, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize(("source", "amount"), [(np.int32, np.uint32), (np.int8, np.uint8)])
def test_signed_shifted_right_by_unsigned_shifts_arithmetically(source, amount):
    x = np.array([-64, -1, 64, -128 if source == np.int8 else -(2**31)], source)
    s = np.array([1, 3, 2, 4], amount)
    out = np.zeros(4, amount)
    sig = {"x_ptr": f"*{_sig(source)}", "s_ptr": f"*{_sig(amount)}", "out_ptr": f"*{_sig(amount)}"}
    run_interp(shift_kernel, sig, [x, s, out], N=4)
    np.testing.assert_array_equal(out, (x >> s.astype(source)).view(amount))


@pytest.mark.parametrize("dtype", [np.uint8, np.uint32, np.uint64])
def test_abs_of_unsigned_is_the_identity(dtype):
    x = np.array([0, 1, np.iinfo(dtype).max, np.iinfo(dtype).max // 2 + 1], dtype)
    out = np.zeros(4, dtype)
    sig = {"x_ptr": f"*{_sig(dtype)}", "out_ptr": f"*{_sig(dtype)}"}
    run_interp(abs_kernel, sig, [x, out], N=4)
    np.testing.assert_array_equal(out, x)


@pytest.mark.parametrize(
    ("which", "value"),
    [
        ("boundary_check", ()),
        ("padding_option", ""),
        ("cache_modifier", ""),
        ("eviction_policy", ""),
        ("volatile", False),
        ("store_cache_modifier", ""),
        ("store_eviction_policy", ""),
        # hints tilec emits (tests/compat/test_compat_cache_hints.py), and volatile loads
        ("cache_modifier", ".cg"),
        ("eviction_policy", "evict_last"),
        ("volatile", True),
        ("store_cache_modifier", ".wt"),
        ("store_eviction_policy", "evict_first"),
    ],
)
def test_load_store_keywords_tilec_honours_are_accepted(which, value):
    x = np.arange(4, dtype=np.float32)
    out = np.zeros(4, np.float32)
    sig = {"x_ptr": "*fp32", "out_ptr": "*fp32"}
    run_interp(memory_keywords, sig, [x, out], N=4, WHICH=which, VALUE=value)
    np.testing.assert_array_equal(out, x)


@pytest.mark.parametrize(
    ("which", "value", "message"),
    [
        ("boundary_check", (0,), "tl.load(boundary_check=(0,)) is not supported: it applies"),
        ("padding_option", "zero", "tl.load(padding_option='zero') is not supported"),
    ],
)
def test_load_store_keywords_tilec_cannot_honour_are_rejected(which, value, message):
    sig = {"x_ptr": "*fp32", "out_ptr": "*fp32"}
    error = compile_error(memory_keywords, sig, N=4, WHICH=which, VALUE=value)
    assert message in error.message
    assert "leave out" in error.hint


@pytest.mark.parametrize("name", sorted({*tl.BUILTIN_NAMES, "cdiv"} - set(LOOP_ITERATORS)))
def test_every_tl_function_rejects_a_bogus_keyword(name):
    error = compile_error(bogus_keyword, {"x_ptr": "*fp32"}, FN=getattr(tl, name))
    assert f"bad arguments to tl.{name}" in error.message
    assert "'bogus'" in error.message


def _sig(dtype) -> str:
    return SIGNATURE_BY_TORCH[np.dtype(dtype).name]


def test_to_rejects_a_bogus_keyword():
    error = compile_error(bogus_to_keyword, {"x_ptr": "*fp32"})
    assert "bad arguments to tl.cast: tl.cast() got an unexpected keyword argument 'bogus'" in (
        error.message
    )
