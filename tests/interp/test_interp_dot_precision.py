"""`tl.dot`'s numerics and options with Triton's meanings, on the interpreter (the reference):
`input_precision` ("tf32", "tf32x3", "ieee"), `allow_tf32`, `TILEC_F32_DEFAULT`, `out_dtype`,
the tf32 conversion (the tensor cores' truncation toward zero) and the errors."""

from __future__ import annotations

import numpy as np
import pytest

import tilec
import tilec.language as tl
from tilec.frontend import CompilationError
from tilec.runtime import check
from tilec_interp.dtypes import tf32_truncate

RNG = np.random.default_rng(5)


def tf32_reference(x: np.ndarray) -> np.ndarray:
    """tf32 conversion written apart from `tf32_truncate`: through float64, the 10-bit mantissa
    rounded toward zero."""
    out = []
    for value in np.asarray(x, np.float64).reshape(-1):
        if not np.isfinite(value) or value == 0:
            out.append(value)
            continue
        _, exponent = np.frexp(abs(value))  # |value| = m * 2**exponent, 0.5 <= m < 1
        # 11 significant bits (the implicit one and 10 stored); subnormals (exponent below
        # -125) keep f32's fixed quantum with the 13 low bits gone
        quantum = 2.0 ** (max(int(exponent), -125) - 11)
        rounded = np.floor(abs(value) / quantum)  # toward zero
        out.append(np.copysign(rounded * quantum, value))
    return np.array(out).astype(np.float32).reshape(np.shape(x))


def test_tf32_truncates_toward_zero():
    one = np.float32(1.0)
    ulp = np.float32(2.0**-10)
    values = np.array(
        [one + ulp / 2, -(one + ulp / 2), one + ulp * 1.5, one + ulp - 2.0**-23,
         one + ulp * 0.75, 3.0e38, -np.inf, np.inf, 0.0, -0.0, 1.0e-40, 1.17e-38],
        np.float32,
    )  # fmt: skip
    cut = tf32_truncate(values)
    assert cut[0] == one and cut[1] == -one  # toward zero, whatever the sign
    assert cut[2] == one + ulp and cut[3] == one and cut[4] == one
    big = np.array([3.4028235e38], np.float32)
    assert np.isfinite(tf32_truncate(big))[0] and tf32_truncate(big)[0] <= big[0]  # no overflow
    np.testing.assert_array_equal(cut, tf32_reference(values))
    assert np.isnan(tf32_truncate(np.array([np.nan], np.float32)))[0]
    randoms = (RNG.standard_normal(2000) * 10.0 ** RNG.integers(-30, 30, 2000)).astype(np.float32)
    np.testing.assert_array_equal(tf32_truncate(randoms), tf32_reference(randoms))
    assert (tf32_truncate(randoms).view(np.uint32) & 0x1FFF == 0).all()
    assert (np.abs(tf32_truncate(randoms)) <= np.abs(randoms)).all()


@tilec.jit
def dot_kernel(a_ptr, b_ptr, c_ptr, M: tl.constexpr, N: tl.constexpr, K: tl.constexpr,
               PRECISION: tl.constexpr, ALLOW_TF32: tl.constexpr):  # fmt: skip
    rm, rn, rk = tl.arange(0, M), tl.arange(0, N), tl.arange(0, K)
    a = tl.load(a_ptr + rm[:, None] * K + rk[None, :])
    b = tl.load(b_ptr + rk[:, None] * N + rn[None, :])
    c_ptrs = c_ptr + rm[:, None] * N + rn[None, :]
    c = tl.dot(a, b, tl.load(c_ptrs), input_precision=PRECISION, allow_tf32=ALLOW_TF32)
    tl.store(c_ptrs, c)


def run_dot(a, b, c, precision=None, allow_tf32=None, dtype="fp32", acc="fp32"):
    (m, k), n = a.shape, b.shape[1]
    signature = {"a_ptr": f"*{dtype}", "b_ptr": f"*{dtype}", "c_ptr": f"*{acc}"}
    constexprs = dict(M=m, N=n, K=k, PRECISION=precision, ALLOW_TF32=allow_tf32)
    kernel = tilec.compile(dot_kernel, signature, constexprs, backend="interp")
    out = c.reshape(-1).copy()
    kernel.run((1,), [a.reshape(-1), b.reshape(-1), out])
    return out.reshape(m, n), kernel


def operands(m=16, n=16, k=32):
    a = RNG.standard_normal((m, k)).astype(np.float32)
    b = RNG.standard_normal((k, n)).astype(np.float32)
    c = RNG.standard_normal((m, n)).astype(np.float32)
    return a, b, c


def exact(a, b, c):
    return a.astype(np.float64) @ b.astype(np.float64) + c


def test_tf32_multiplies_the_truncated_inputs():
    a, b, c = operands()
    got, kernel = run_dot(a, b, c, "tf32")
    cut = tf32_reference(a).astype(np.float64) @ tf32_reference(b).astype(np.float64) + c
    np.testing.assert_allclose(got, cut, rtol=1e-6, atol=1e-5)
    assert np.abs(got - exact(a, b, c)).max() > 1e-3  # tf32 loses what ieee keeps
    assert 'input_precision = "tf32"' in kernel.asm["tir"]


def test_ieee_is_f32_arithmetic():
    a, b, c = operands()
    got, kernel = run_dot(a, b, c, "ieee")
    np.testing.assert_allclose(got, exact(a, b, c), rtol=1e-6, atol=1e-5)
    assert 'input_precision = "ieee"' in kernel.asm["tir"]


def test_tf32x3_is_about_as_accurate_as_f32():
    a, b, c = operands()
    got, _ = run_dot(a, b, c, "tf32x3")
    np.testing.assert_allclose(got, exact(a, b, c), rtol=1e-5, atol=1e-4)
    big_a, big_b = tf32_reference(a), tf32_reference(b)
    small_a, small_b = tf32_reference(a - big_a), tf32_reference(b - big_b)
    d = lambda x, y: x.astype(np.float64) @ y.astype(np.float64)  # noqa: E731
    three = d(small_a, big_b) + d(big_a, small_b) + d(big_a, big_b) + c
    np.testing.assert_allclose(got, three, rtol=1e-6, atol=1e-5)
    assert not np.array_equal(got, run_dot(a, b, c, "ieee")[0])  # small_a @ small_b left out


def test_default_is_tf32_and_allow_tf32_false_is_ieee(monkeypatch):
    monkeypatch.delenv("TILEC_F32_DEFAULT", raising=False)
    a, b, c = operands()
    np.testing.assert_array_equal(run_dot(a, b, c)[0], run_dot(a, b, c, "tf32")[0])
    np.testing.assert_array_equal(run_dot(a, b, c, allow_tf32=True)[0], run_dot(a, b, c, "tf32")[0])
    np.testing.assert_array_equal(
        run_dot(a, b, c, allow_tf32=False)[0], run_dot(a, b, c, "ieee")[0]
    )


@pytest.mark.parametrize("value", ["ieee", "tf32x3", "tf32"])
def test_tilec_f32_default_sets_the_default(monkeypatch, value):
    a, b, c = operands()
    monkeypatch.setenv("TILEC_F32_DEFAULT", value)
    got, kernel = run_dot(a, b, c)
    assert f'input_precision = "{value}"' in kernel.asm["tir"]
    np.testing.assert_array_equal(got, run_dot(a, b, c, value)[0])
    # as Triton's TRITON_F32_DEFAULT, it also overrides allow_tf32
    assert f'input_precision = "{value}"' in run_dot(a, b, c, allow_tf32=False)[1].asm["tir"]
    # an explicit input_precision wins
    assert 'input_precision = "tf32"' in run_dot(a, b, c, "tf32")[1].asm["tir"]


def test_tilec_f32_default_enters_the_cache_key(monkeypatch):
    a, b, c = operands()
    monkeypatch.setenv("TILEC_F32_DEFAULT", "ieee")
    first = run_dot(a, b, c)[1]
    monkeypatch.setenv("TILEC_F32_DEFAULT", "tf32")
    second = run_dot(a, b, c)[1]
    assert first.key != second.key and 'input_precision = "tf32"' in second.asm["tir"]


def test_a_bad_tilec_f32_default_is_an_error(monkeypatch):
    monkeypatch.setenv("TILEC_F32_DEFAULT", "fp32")
    with pytest.raises(
        CompilationError, match=r"TILEC_F32_DEFAULT='fp32'.*tf32, tf32x3, ieee, bf16x3, bf16x6"
    ):
        run_dot(*operands())


@pytest.mark.parametrize(
    ("precision", "allow_tf32", "dtype", "message"),
    [
        ("tf32", True, "fp32", "input_precision or allow_tf32, not both"),
        ("ieee", False, "fp32", "input_precision or allow_tf32, not both"),
        (
            "bf16x9",
            None,
            "fp32",
            "input_precision must be one of 'tf32', 'tf32x3', 'ieee', 'bf16x3', 'bf16x6'",
        ),
        (None, 1, "fp32", "allow_tf32 must be True or False"),
    ],
)
def test_option_errors_are_located(precision, allow_tf32, dtype, message):
    a, b, c = operands()
    with pytest.raises(CompilationError, match=message) as error:
        run_dot(a, b, c, precision, allow_tf32, dtype=dtype)
    assert "test_interp_dot_precision.py" in str(error.value)


@pytest.mark.parametrize(
    ("precision", "allow_tf32"), [("tf32", None), ("tf32x3", None), ("bf16x3", None), (None, True)]
)
def test_f64_dots_are_f64_whatever_the_precision(precision, allow_tf32):
    """As Triton (its backends and interpreter): f64 inputs multiply in f64; the precision,
    checked, has no effect on them."""
    a, b, c = (x.astype(np.float64) for x in operands())
    got, kernel = run_dot(a, b, c, precision, allow_tf32, dtype="fp64", acc="fp64")
    expected, _ = run_dot(a, b, c, "ieee", dtype="fp64", acc="fp64")
    np.testing.assert_array_equal(got, expected)
    np.testing.assert_allclose(got, a @ b + c, rtol=1e-12)
    assert "input_precision" not in kernel.asm["tir"]


def test_precision_is_exact_for_narrower_inputs():
    """f16, bf16 and int8 inputs are tf32 values already: every precision gives the same dot
    (the op records none)."""
    a = RNG.integers(-100, 100, (16, 32)).astype(np.float16)
    b = RNG.standard_normal((32, 16)).astype(np.float16)
    c = np.zeros((16, 16), np.float32)
    results = [run_dot(a, b, c, p, dtype="fp16") for p in ("tf32", "tf32x3", "ieee", None)]
    for got, kernel in results:
        np.testing.assert_array_equal(got, results[0][0])
        assert "input_precision" not in kernel.asm["tir"]
    i8 = RNG.integers(-128, 128, (16, 32)).astype(np.int8), RNG.integers(-128, 128, (32, 16))
    got, _ = run_dot(i8[0], i8[1].astype(np.int8), np.zeros((16, 16), np.int32), "tf32",
                     dtype="i8", acc="i32")  # fmt: skip
    np.testing.assert_array_equal(got, i8[0].astype(np.int64) @ i8[1])


@tilec.jit
def out_dtype_kernel(a_ptr, b_ptr, c_ptr, M: tl.constexpr, N: tl.constexpr, K: tl.constexpr):
    rm, rn, rk = tl.arange(0, M), tl.arange(0, N), tl.arange(0, K)
    a = tl.load(a_ptr + rm[:, None] * K + rk[None, :])
    b = tl.load(b_ptr + rk[:, None] * N + rn[None, :])
    tl.store(c_ptr + rm[:, None] * N + rn[None, :], tl.dot(a, b, out_dtype=tl.float16))


def test_out_dtype_rounds_the_f32_result_once():
    a = RNG.standard_normal((16, 64)).astype(np.float16)
    b = RNG.standard_normal((64, 16)).astype(np.float16)
    signature = {"a_ptr": "*fp16", "b_ptr": "*fp16", "c_ptr": "*fp16"}
    kernel = tilec.compile(out_dtype_kernel, signature, dict(M=16, N=16, K=64), backend="interp")
    c = np.zeros(256, np.float16)
    kernel.run((1,), [a.reshape(-1), b.reshape(-1), c])
    expected = (a.astype(np.float32) @ b.astype(np.float32)).astype(np.float16)
    np.testing.assert_array_equal(c.reshape(16, 16), expected)


def test_check_tolerance_follows_the_precision():
    a, b, c = operands()
    tf32 = run_dot(a, b, c, "tf32")[1]
    assert check.tolerances_of(tf32.module)["fp32"] == check.TF32_TOLERANCE
    for precision in ("ieee", "tf32x3"):
        kernel = run_dot(a, b, c, precision)[1]
        assert check.tolerances_of(kernel.module)["fp32"] == check.DOT_F32_TOLERANCE
    assert check.tolerances_of(None) == check.TOLERANCES
