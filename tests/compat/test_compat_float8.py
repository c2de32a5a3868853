"""Triton's five float8 dtypes on the interpreter: every code of every format decodes to its
value, f16/bf16 (all 65536 patterns), f32 and f64 values encode as Triton's GPU conversions do
(nearest even, saturating; e4b15 half away, at +-1.75), fp8 pointers load and store, fp8 dots,
and the arithmetic Triton refuses on 8-bit floats is refused with a located error.

The reference (`float8_reference`) is written from the formats' definitions, apart from tilec."""

from __future__ import annotations

import re

import compat_float8_kernels as kernels
import float8_reference as ref
import numpy as np
import pytest
from compat_helpers import compile_error, run_interp

import tilec
import tilec.language as tl
from tilec.frontend import compile_to_tir
from tilec.ir.float8 import FORMATS
from tilec.ir.type_names import BY_SIGNATURE, SIGNATURE_BY_DLPACK, SIGNATURE_BY_TORCH
from tilec.ir.types import SCALAR_TYPES
from tilec.pipeline.validation import ValidatePasses

NAMES = list(ref.SPECS)
BY_SIGNATURE_OF = {s.language: s.signature for s in BY_SIGNATURE.values()}
BLOCK = 1024


def _fmt(name: str):
    return getattr(tl, name)


def _decode_on_interp(name: str):
    codes = np.arange(256, dtype=np.uint8)
    outs = [np.zeros(256, np.float32), np.zeros(256, np.float16), np.zeros(256, np.float64)]
    sig = {"codes_ptr": "*u8", "f32_ptr": "*fp32", "f16_ptr": "*fp16", "f64_ptr": "*fp64"}
    run_interp(kernels.decode_kernel, sig, [codes, *outs], FMT=_fmt(name), BLOCK=256)
    return outs


def _assert_same_values(got: np.ndarray, want: np.ndarray, what: str) -> None:
    got, want = np.asarray(got, np.float64), np.asarray(want, np.float64)
    assert np.array_equal(np.isnan(got), np.isnan(want)), what
    finite = ~np.isnan(want)
    np.testing.assert_array_equal(got[finite], want[finite], err_msg=what)
    np.testing.assert_array_equal(np.signbit(got[finite]), np.signbit(want[finite]), what)


@pytest.mark.parametrize("name", NAMES)
def test_every_code_decodes_to_its_value(name):
    want = ref.values(name)
    for got, what in zip(_decode_on_interp(name), ("f32", "f16", "f64"), strict=True):
        _assert_same_values(got, want, f"{name} -> {what}")
    pure = np.array([FORMATS[_fmt(name).ir_type].decode(c) for c in range(256)])
    _assert_same_values(pure, want, f"{name} (tilec.ir.float8)")


@pytest.mark.parametrize("name", NAMES)
def test_the_formats_have_their_published_limits(name):
    table = ref.values(name)
    assert np.nanmax(table[np.isfinite(table)]) == ref.LARGEST[name]
    nan_codes = {int(c) for c in np.flatnonzero(np.isnan(table))}
    expected = {
        "float8e4nv": {0x7F, 0xFF},
        "float8e5": {0x7D, 0x7E, 0x7F, 0xFD, 0xFE, 0xFF},
        "float8e4b8": {0x80},
        "float8e5b16": {0x80},
        "float8e4b15": set(),
    }[name]
    assert nan_codes == expected
    assert (np.isinf(table).sum() == 2) == (name == "float8e5")


def _encode_on_interp(x: np.ndarray, signature: str, name: str) -> np.ndarray:
    codes = np.full(x.size, 0xAA, np.uint8)
    sig = {"x_ptr": signature, "codes_ptr": "*u8", "n": "i32"}
    grid = ((x.size + BLOCK - 1) // BLOCK,)
    run_interp(kernels.encode_kernel, sig, [x, codes, x.size], grid, FMT=_fmt(name), BLOCK=BLOCK)
    return codes


@pytest.mark.parametrize("name", NAMES)
def test_every_f16_and_bf16_value_encodes_as_triton(name):
    bits = np.arange(1 << 16, dtype=np.uint16)
    halves = bits.view(np.float16)
    np.testing.assert_array_equal(
        _encode_on_interp(halves, "*fp16", name), ref.encode(halves.astype(np.float64), name)
    )
    bf16_values = (bits.astype(np.uint32) << 16).view(np.float32)
    np.testing.assert_array_equal(
        _encode_on_interp(bits, "*bf16", name), ref.encode(bf16_values, name)
    )


@pytest.mark.parametrize("name", NAMES)
def test_f32_values_encode_as_triton(rng, name):
    randoms = rng.integers(0, 1 << 32, 200_000, dtype=np.uint64).astype(np.uint32).view(np.float32)
    scaled = (rng.standard_normal(50_000) * ref.LARGEST[name]).astype(np.float32)
    edges = ref.midpoints(name).astype(np.float32)
    x = np.concatenate([randoms, scaled, edges, ref.special_values().astype(np.float32)])
    np.testing.assert_array_equal(_encode_on_interp(x, "*fp32", name), ref.encode(x, name))


@pytest.mark.parametrize("name", NAMES)
def test_f64_values_round_once(rng, name):
    """A value just above a midpoint rounds up from f64; through f32 it would be the midpoint
    (a tie) and could round down."""
    x = np.concatenate([
        ref.midpoints(name), ref.midpoints(name) * (1 + 2.0**-40), ref.special_values(),
        rng.standard_normal(20_000) * ref.LARGEST[name],
    ])  # fmt: skip
    np.testing.assert_array_equal(_encode_on_interp(x, "*fp64", name), ref.encode(x, name))
    pure = np.array([FORMATS[_fmt(name).ir_type].encode(float(v)) for v in x[:2000]], np.uint8)
    np.testing.assert_array_equal(pure, ref.encode(x[:2000], name))


@pytest.mark.parametrize("name", NAMES)
def test_rounding_and_saturation_edge_cases(name):
    largest = ref.LARGEST[name]
    sat = 1.75 if name == "float8e4b15" else largest
    cases = {
        largest * 4: sat, -largest * 4: -sat, np.inf: sat, -np.inf: -sat, 0.0: 0.0,
    }  # fmt: skip
    x = np.array(list(cases), np.float32)
    decoded = ref.values(name)[_encode_on_interp(x, "*fp32", name)]
    np.testing.assert_array_equal(decoded, np.array(list(cases.values())))
    one = np.float32(1.0)  # 1 + half an ulp of the 8-bit format is a tie: even (1.0), or away
    half_ulp = 2.0 ** -(ref.SPECS[name][1] + 1)
    tie = ref.values(name)[_encode_on_interp(np.array([one + half_ulp]), "*fp32", name)][0]
    assert tie == (1 + 2 * half_ulp if name == "float8e4b15" else 1.0)
    nan_code = _encode_on_interp(np.array([np.nan], np.float32), "*fp32", name)[0]
    if name == "float8e4b15":
        assert nan_code == 0x7E
    else:
        assert np.isnan(ref.values(name)[nan_code])
    negative_zero = _encode_on_interp(np.array([-0.0, -1e-30], np.float32), "*fp32", name)
    assert list(negative_zero) == ([0, 0] if "b8" in name or "b16" in name else [0x80, 0x80])


@pytest.mark.parametrize("src", NAMES)
@pytest.mark.parametrize("dst", ["float8e4nv", "float8e5", "float8e4b15"])
def test_fp8_to_fp8_goes_through_the_exact_value(src, dst):
    if src == dst:
        return
    codes, out = np.arange(256, dtype=np.uint8), np.zeros(256, np.uint8)
    sig = {"codes_ptr": "*u8", "out_ptr": "*u8"}
    run_interp(kernels.recode_kernel, sig, [codes, out], SRC=_fmt(src), DST=_fmt(dst), BLOCK=256)
    np.testing.assert_array_equal(out, ref.encode(ref.values(src), dst))


@pytest.mark.parametrize(("src", "dst"), [("fp8e4nv", "fp8e5"), ("fp8e5b16", "fp8e4b8")])
def test_fp8_pointers_load_and_store(rng, src, dst):
    n = 1000
    x = rng.integers(0, 256, n, dtype=np.uint8)
    scale = np.array([0.75], np.float32)
    y = np.zeros(n, np.uint8)
    sig = {"x_ptr": f"*{src}", "scale_ptr": "*fp32", "y_ptr": f"*{dst}", "n": "i32"}
    run_interp(kernels.scale_kernel, sig, [x, scale, y, n], (1,), BLOCK=1024)
    src_name, dst_name = BY_SIGNATURE[src].language, BY_SIGNATURE[dst].language
    product = (ref.values(src_name)[x].astype(np.float32) * np.float32(0.75)).astype(np.float32)
    np.testing.assert_array_equal(y, ref.encode(product, dst_name))


def test_mixed_promotions_zeros_and_full(rng):
    a = rng.integers(0, 0x70, 64, dtype=np.uint8)  # e4m3 values below 256
    b = rng.integers(0, 0x50, 64, dtype=np.uint8)  # e5m2 values below 32: no f16 overflow
    h = rng.standard_normal(64).astype(np.float16)
    out = np.zeros(64, np.float16)
    sig = {"a_ptr": "*u8", "b_ptr": "*u8", "h_ptr": "*fp16", "out_ptr": "*fp16"}
    run_interp(kernels.mixed_kernel, sig, [a, b, h, out], BLOCK=64)
    av = ref.values("float8e4nv")[a].astype(np.float16)
    bv = ref.values("float8e5")[b].astype(np.float16)
    want = ((av + h) + (av * bv)) + np.float16(0) + np.float16(1.25)
    np.testing.assert_array_equal(out, want)


@pytest.mark.parametrize(
    ("a_fmt", "b_fmt"), [("float8e4nv", "float8e4nv"), ("float8e5", "float8e4b15")]
)
def test_dot_of_fp8_blocks(rng, a_fmt, b_fmt):
    m = n = k = 16
    finite_a = np.flatnonzero(np.isfinite(ref.values(a_fmt)) & (np.abs(ref.values(a_fmt)) < 64))
    finite_b = np.flatnonzero(np.isfinite(ref.values(b_fmt)) & (np.abs(ref.values(b_fmt)) < 64))
    a = rng.choice(finite_a, (m, k)).astype(np.uint8)
    b = rng.choice(finite_b, (k, n)).astype(np.uint8)
    c = np.zeros((m, n), np.float32)
    sig = {"a_ptr": "*u8", "b_ptr": "*u8", "c_ptr": "*fp32"}
    run_interp(
        kernels.dot_kernel, sig, [a, b, c], M=m, N=n, K=k, A_FMT=_fmt(a_fmt), B_FMT=_fmt(b_fmt)
    )
    av, bv = ref.values(a_fmt)[a], ref.values(b_fmt)[b]
    scale = np.abs(av) @ np.abs(bv)  # f32 sums: rounding errors relative to the terms
    assert np.all(np.abs(c - av @ bv) <= 1e-6 * scale), np.abs(c - av @ bv).max()


def test_fp8_values_move_through_masks_where_and_transposes(rng):
    x = rng.integers(0, 0x7F, 64, dtype=np.uint8)
    y = np.zeros(64, np.uint8)
    sig = {"x_ptr": "*fp8e4nv", "y_ptr": "*fp8e4nv", "n": "i32"}
    run_interp(kernels.moves_kernel, sig, [x, y, 50], BLOCK=64)
    loaded = np.where(np.arange(64) < 50, x, ref.encode(np.array([0.5]), "float8e4nv")[0])
    picked = np.where(ref.values("float8e4nv")[loaded] > 2.0, loaded, 0x3C)  # 0x3C is 1.5
    np.testing.assert_array_equal(y, picked.reshape(8, 8).T.reshape(64))


@pytest.mark.parametrize("name", ["float8e4nv", "float8e4b15"])
def test_scalar_fp8_parameters_travel_as_their_code(name):
    """A Python float for an fp8 parameter is rounded to the format, as GPU launches pack it."""
    out = np.zeros(3, np.float32)
    sig = {"s": BY_SIGNATURE_OF[name], "out_ptr": "*fp32"}
    run_interp(kernels.scalar_kernel, sig, [1.3, out])
    want = ref.values(name)[ref.encode(np.array([1.3]), name)]
    np.testing.assert_array_equal(out, np.array([want[0], want[0] * 2, 0.0], np.float32))


def test_translation_validation_runs_fp8_kernels():
    """`TILEC_VALIDATE_PASSES` gives an fp8 buffer random codes and compares them exactly."""
    module = compile_to_tir(
        kernels.scale_kernel,
        {"x_ptr": "*fp8e4nv", "scale_ptr": "*fp32", "y_ptr": "*fp8e5", "n": "i32"},
        {"BLOCK": 64},
    )
    validate = ValidatePasses()
    validate.before_pipeline([], module)
    assert "scale_kernel" in validate.inputs, validate.skipped
    assert validate.inputs["scale_kernel"][1][0].dtype == np.uint8


def test_type_names_table_has_the_float8_types():
    for signature, ir_name, torch in [
        ("fp8e4nv", "f8E4M3FN", "float8_e4m3fn"), ("fp8e5", "f8E5M2", "float8_e5m2"),
        ("fp8e4b8", "f8E4M3FNUZ", "float8_e4m3fnuz"), ("fp8e5b16", "f8E5M2FNUZ", "float8_e5m2fnuz"),
    ]:  # fmt: skip
        names = BY_SIGNATURE[signature]
        assert str(names.ir_type) == ir_name and SCALAR_TYPES[ir_name] == names.ir_type
        assert names.storage == "uint8" and names.numpy is None and names.struct_code == "B"
        assert SIGNATURE_BY_TORCH[torch] == signature
        assert SIGNATURE_BY_DLPACK[names.dlpack] == signature
    assert BY_SIGNATURE["fp8e4b15"].dlpack is None
    assert tl.float8e4nv.is_fp8() and tl.float8e4nv.is_floating() and tl.float8e5.is_fp8e5()
    assert tl.float8e4nv.primitive_bitwidth == 8


@tilec.jit
def _fp8_add(x_ptr, y_ptr):
    x = tl.load(x_ptr)
    tl.store(y_ptr, x + x)


@tilec.jit
def _fp8_times_literal(x_ptr, y_ptr):
    x = tl.load(x_ptr)
    tl.store(y_ptr, x * 2.0)


@tilec.jit
def _fp8_negate(x_ptr, y_ptr):
    x = tl.load(x_ptr)
    tl.store(y_ptr, -x)


@tilec.jit
def _fp8_plus_int(x_ptr, i_ptr, y_ptr):
    tl.store(y_ptr, tl.load(x_ptr) + tl.load(i_ptr))


@tilec.jit
def _fp8_exp(x_ptr, y_ptr):
    tl.store(y_ptr, tl.exp(tl.load(x_ptr)))


@tilec.jit
def _fp8_sum(x_ptr, y_ptr):
    tl.store(y_ptr, tl.sum(tl.load(x_ptr + tl.arange(0, 16)), axis=0))


@tilec.jit
def _fp8_rtz(x_ptr, y_ptr):
    tl.store(y_ptr, tl.load(x_ptr).to(tl.float8e5, fp_downcast_rounding="rtz"))


@tilec.jit
def _fp8_rtne(x_ptr, y_ptr):
    tl.store(y_ptr, tl.load(x_ptr).to(tl.float8e5, fp_downcast_rounding="rtne"))


def test_fp_downcast_rounding_rtne_is_the_default_and_rtz_is_rejected():
    x, y = np.array([3.0e5], np.float32), np.zeros(1, np.uint8)  # saturates to 57344
    run_interp(_fp8_rtne, {"x_ptr": "*fp32", "y_ptr": "*fp8e5"}, [x, y])
    np.testing.assert_array_equal(y, ref.encode(x, "float8e5"))
    error = compile_error(_fp8_rtz, {"x_ptr": "*fp32", "y_ptr": "*fp8e5"})
    assert "fp_downcast_rounding='rtz' is not supported" in str(error)


@tilec.jit
def _fp8_print(x_ptr, y_ptr):
    tl.device_print("x", tl.load(x_ptr))


@tilec.jit
def _fp8_atomic(x_ptr, y_ptr):
    tl.atomic_add(y_ptr, tl.load(x_ptr))


@pytest.mark.parametrize(
    ("kernel", "signature", "message"),
    [
        (_fp8_add, {"x_ptr": "*fp8e4nv", "y_ptr": "*fp8e4nv"}, r"operator \+ is not defined for tl.float8e4nv"),
        (_fp8_times_literal, {"x_ptr": "*fp8e5", "y_ptr": "*fp8e5"}, r"operator \* is not defined for tl.float8e5"),
        (_fp8_negate, {"x_ptr": "*fp8e4b8", "y_ptr": "*fp8e4b8"}, r"unary - is not defined for tl.float8e4b8"),
        (_fp8_plus_int, {"x_ptr": "*fp8e4nv", "i_ptr": "*i32", "y_ptr": "*fp32"}, r"between tl.float8e4nv and tl.int32"),
        (_fp8_exp, {"x_ptr": "*fp8e4nv", "y_ptr": "*fp32"}, r"tl.exp is not defined for tl.float8e4nv"),
        (_fp8_sum, {"x_ptr": "*fp8e5", "y_ptr": "*fp32"}, r"tl.sum is not defined for tl.float8e5"),
        (_fp8_atomic, {"x_ptr": "*fp8e5", "y_ptr": "*fp8e5"}, r"tl.atomic_add is not defined for tl.float8e5"),
        (_fp8_print, {"x_ptr": "*fp8e4nv", "y_ptr": "*fp32"}, r"'tile.print' is not defined for tl.float8e4nv"),
    ],
)  # fmt: skip
def test_arithmetic_on_fp8_is_rejected_with_a_located_error(kernel, signature, message):
    error = compile_error(kernel, signature)
    assert error.file.endswith("test_compat_float8.py")
    assert re.search(message, str(error)), str(error)
    assert "first, e.g. x.to(tl.float" in str(error)


def test_torch_float8_tensors_run_on_interp():
    torch = pytest.importorskip("torch")
    codes = torch.arange(0, 120, dtype=torch.uint8)
    x = codes.view(torch.float8_e4m3fn)
    y = torch.zeros(120, dtype=torch.float8_e5m2)
    scale = torch.tensor([0.5])
    kernels.scale_kernel[(1,)](x, scale, y, 120, BLOCK=128, backend="interp")
    product = (ref.values("float8e4nv")[codes.numpy()] * 0.5).astype(np.float32)
    np.testing.assert_array_equal(y.view(torch.uint8).numpy(), ref.encode(product, "float8e5"))
    np.testing.assert_array_equal(x.float().numpy(), ref.values("float8e4nv")[:120])
