"""`math.*` lowering: every op in f32, f64, f16 and bf16 through NVPTX and ptxas, and the accuracy
of the generic expansions (JIT-compiled for the host with the base `TargetInfo`, which has no math
instructions, and compared with the host's libm over many points)."""

from __future__ import annotations

import ctypes
import math

import llvmlite.binding as llvm
import numpy as np
import pytest
from gir_check import KINDS, ptx_of, runner
from llvmlite import ir

from tilec.lowering.math_ops import math_value
from tilec.lowering.target import TargetInfo

RNG = np.random.default_rng(5)
OPS = ["exp", "exp2", "log", "log2", "sqrt", "rsqrt", "sin", "cos", "erf", "tanh", "floor",
       "ceil", "absf"]  # fmt: skip
REFERENCE = {"exp": math.exp, "exp2": lambda v: 2.0**v, "log": math.log, "log2": math.log2,
             "sin": math.sin, "cos": math.cos, "tanh": math.tanh, "erf": math.erf}  # fmt: skip
_ENGINES: list = []


def _jit(name: str, dtype: str):
    """A host function `out[i] = name(x[i])` built by `math_value` with no target math."""
    llvm.initialize_native_target()
    llvm.initialize_native_asmprinter()
    ty = ir.DoubleType() if dtype == "f64" else ir.FloatType()
    i64 = ir.IntType(64)
    module = ir.Module()
    module.triple = llvm.get_process_triple()
    fn_type = ir.FunctionType(ir.VoidType(), [ir.PointerType(), ir.PointerType(), i64])
    fn = ir.Function(module, fn_type, "apply")
    entry, loop, done = (fn.append_basic_block() for _ in range(3))
    b = ir.IRBuilder(entry)
    b.branch(loop)
    b.position_at_end(loop)
    i = b.phi(i64)
    i.add_incoming(i64(0), entry)
    x = b.load(b.gep(fn.args[0], [i], source_etype=ty), typ=ty)
    b.store(
        math_value(b, TargetInfo("host", 32), name, [x], dtype),
        b.gep(fn.args[1], [i], source_etype=ty),
    )
    following = b.add(i, i64(1))
    i.add_incoming(following, b.block)
    b.cbranch(b.icmp_signed("<", following, fn.args[2]), loop, done)
    b.position_at_end(done)
    b.ret_void()
    parsed = llvm.parse_assembly(str(module))
    parsed.verify()
    engine = llvm.create_mcjit_compiler(
        parsed, llvm.Target.from_default_triple().create_target_machine()
    )
    engine.finalize_object()
    _ENGINES.append((engine, parsed))
    apply = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int64)(
        engine.get_function_address("apply")
    )
    np_type = np.float64 if dtype == "f64" else np.float32

    def call(xs: np.ndarray) -> np.ndarray:
        xs = np.ascontiguousarray(xs, np_type)
        out = np.empty_like(xs)
        apply(xs.ctypes.data, out.ctypes.data, xs.size)
        return out

    return call


def _reference(name: str, xs: np.ndarray) -> np.ndarray:
    def one(v: float) -> float:
        try:
            return REFERENCE[name](v)
        except OverflowError:
            return math.inf
        except ValueError:
            return -math.inf if v == 0 else math.nan

    return np.array([one(float(v)) for v in xs])


def _ulps(got: np.ndarray, ref: np.ndarray) -> np.ndarray:
    spacing = np.spacing(np.abs(ref).astype(got.dtype)).astype(np.float64)
    spacing = np.maximum(spacing, np.finfo(got.dtype).smallest_subnormal)
    same = (got.astype(np.float64) == ref) | (np.isnan(got) & np.isnan(ref))
    with np.errstate(invalid="ignore"):
        return np.where(same, 0.0, np.abs(got.astype(np.float64) - ref) / spacing)


def _points(name: str, dtype: str) -> np.ndarray:
    if name.startswith("log"):
        top = 690.0 if dtype == "f64" else 85.0
        xs = np.exp(RNG.uniform(-top, top, 20000))
    else:
        wide = {"exp": 700.0, "exp2": 1000.0, "sin": 1e5, "cos": 1e5, "tanh": 25.0, "erf": 7.0}
        limit = wide[name] if dtype == "f64" else min(wide[name], 80.0)
        xs = np.concatenate([RNG.uniform(-limit, limit, 10000), RNG.uniform(-2, 2, 10000)])
    specials = [0.0, -0.0, np.inf, -np.inf, np.nan, 1e-300, -1.0, 1.0, 0.5, 1e-8]
    return np.concatenate([xs, specials]).astype(np.float64 if dtype == "f64" else np.float32)


@pytest.mark.parametrize("name", sorted(REFERENCE))
def test_f64_expansion_is_within_two_ulps(name: str):
    xs = _points(name, "f64")
    errors = _ulps(_jit(name, "f64")(xs), _reference(name, xs))
    assert errors.max() <= 2.0, f"{name}: {errors.max()} ulp at x = {xs[np.argmax(errors)]!r}"


@pytest.mark.parametrize("name", sorted(REFERENCE))
def test_f32_expansion_is_within_three_ulps(name: str):
    xs = _points(name, "f32")
    errors = _ulps(_jit(name, "f32")(xs), _reference(name, xs))
    assert errors.max() <= 3.0, f"{name}: {errors.max()} ulp at x = {xs[np.argmax(errors)]!r}"


@pytest.mark.parametrize("dtype", ["f32", "f64", "f16", "bf16"])
def test_every_math_op_lowers_to_ptx(dtype: str):
    ptx = ptx_of(f"math-{dtype}.gir")
    if dtype == "f64":
        assert "call" not in ptx.split(".entry", 1)[1]  # no libm: NVPTX has no f64 exp, log, ...
        assert "rsqrt.approx" not in ptx and "sqrt.rn.f64" in ptx and "div.rn.f64" in ptx
    else:
        # Triton's forms: tl.exp keeps subnormal results, tl.exp2 is libdevice's ftz exp2f
        assert "ex2.approx.f32" in ptx and "ex2.approx.ftz.f32" in ptx


@pytest.mark.parametrize("kind", KINDS)
def test_f64_math_kernel_matches_libm(kind: str):
    x = np.concatenate([RNG.uniform(0.01, 5, 120), [0.5, 1.0, 2.0, 3.0, 4.0, 0.25, 1.5, 2.5]])
    out = np.zeros(14 * 128)
    runner(kind)("math-f64.gir", [x, out])
    rows = out.reshape(14, 128)
    expected = _libm(x)
    for row, name in zip(rows, OPS, strict=False):
        np.testing.assert_allclose(row, expected[name], rtol=2e-15, err_msg=name)
    np.testing.assert_allclose(rows[13], x * x + x, rtol=3e-16)  # fused: one rounding


@pytest.mark.parametrize("kind", KINDS)
def test_f32_math_kernel_matches_libm(kind: str):
    """On NVIDIA: the `.approx` instructions (as Triton) and the generic f32 erf and tanh."""
    x = np.concatenate([RNG.uniform(0.01, 5, 120), [0.5, 1.0, 2.0, 3.0, 4.0, 0.25, 1.5, 2.5]])
    x = x.astype(np.float32)
    out = np.zeros(15 * 128, np.float32)
    runner(kind)("math-f32.gir", [x, out])
    expected = _libm(x.astype(np.float64))
    rows = out.reshape(15, 128)
    for row, name in zip(rows, OPS, strict=False):
        np.testing.assert_allclose(row, expected[name], rtol=3e-6, atol=3e-6, err_msg=name)
    np.testing.assert_array_equal(rows[14], np.sqrt(x))  # `{ieee}`: tl.sqrt_rn, correctly rounded


def _libm(x: np.ndarray) -> dict[str, np.ndarray]:
    return {
        "exp": np.exp(x), "exp2": np.exp2(x), "log": np.log(x), "log2": np.log2(x),
        "sqrt": np.sqrt(x), "rsqrt": 1 / np.sqrt(x), "sin": np.sin(x), "cos": np.cos(x),
        "erf": np.array([math.erf(v) for v in x]), "tanh": np.tanh(x), "floor": np.floor(x),
        "ceil": np.ceil(x), "absf": np.abs(x),
    }  # fmt: skip


def _native_call(target, name: str, dtype: str) -> str:
    from tilec.lowering.math_ops import FLOAT_TYPES

    ty = FLOAT_TYPES[dtype]
    module = ir.Module()
    fn = ir.Function(module, ir.FunctionType(ty, [ty, ty, ty]), "f")
    builder = ir.IRBuilder(fn.append_basic_block())
    args = list(fn.args[:3] if name == "fma" else fn.args[:1])
    builder.ret(math_value(builder, target, name, args, dtype))
    return str(module)


def test_fma_floor_ceil_and_fabs_are_one_intrinsic_at_the_native_width():
    """`native_intrinsic`, the core piece both GPU targets answer `math` with."""
    from tilec.lowering.math_ops import native_intrinsic
    from tilec_amd.target_info import AmdTargetInfo
    from tilec_nvidia.target_info import NvidiaTargetInfo

    for target in (NvidiaTargetInfo("sm_90", 32), AmdTargetInfo("gfx942", 64)):
        assert 'call half @"llvm.fma.f16"(' in _native_call(target, "fma", "f16")
        assert '@"llvm.floor.f64"(' in _native_call(target, "floor", "f64")
    assert 'call bfloat @"llvm.fabs.bf16"(' in _native_call(
        NvidiaTargetInfo("sm_90", 32), "absf", "bf16"
    )
    # bf16 without instructions for it (sm_75, and amd's math): computed in f32 by the core
    assert '@"llvm.fabs.f32"(' in _native_call(NvidiaTargetInfo("sm_75", 32), "absf", "bf16")
    assert '@"llvm.fabs.f32"(' in _native_call(AmdTargetInfo("gfx942", 64), "absf", "bf16")
    assert native_intrinsic(ir.IRBuilder(), "exp", [], "f32") is None
