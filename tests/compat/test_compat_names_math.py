"""Triton's casts, math and helper names (issue 11), on interp against NumPy: tl.cast and the
tensor methods, tl.floor/ceil, tl.math.*, tl.extra.libdevice, umulhi, softmax, swizzle2d,
reduce_or, static_print, device_assert, print, pointer casts."""

import numpy as np
import pytest
from compat_helpers import compile_error, run_interp
from compat_names_helpers import run

import tilec
import tilec.language as tl
from tilec.language.extra import libdevice
from tilec_interp.interpreter import InterpreterError

BLOCK = 16


@tilec.jit
def unary_kernel(x_ptr, out_ptr, OP: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs)
    if OP == "floor":
        y = tl.floor(x)
    elif OP == "ceil":
        y = tl.ceil(x)
    elif OP == "math.floor":
        y = tl.math.floor(x)
    elif OP == "math.ceil":
        y = tl.math.ceil(x)
    elif OP == "method.floor":
        y = x.floor()
    elif OP == "sqrt_rn":
        y = tl.sqrt_rn(tl.abs(x))
    elif OP == "math.sqrt_rn":
        y = tl.math.sqrt_rn(tl.abs(x))
    elif OP == "libdevice.tanh":
        y = libdevice.tanh(x)
    elif OP == "libdevice.fabs":
        y = libdevice.fabs(x)
    elif OP == "libdevice.floor":
        y = tl.extra.cuda.libdevice.floor(x)
    elif OP == "libdevice.exp":
        y = libdevice.fast_expf(x)
    elif OP == "cast":
        y = tl.cast(x, tl.int32).to(tl.float32)
    elif OP == "method.cast":
        y = x.cast(tl.float16).cast(tl.float32)
    elif OP == "numel":
        y = x * x.numel
    elif OP == "method.sum":
        y = x - x.sum(0)
    elif OP == "softmax":
        y = tl.softmax(x)
    elif OP == "zeros_like":
        y = tl.zeros_like(x) - 2.5
    tl.store(out_ptr + offs, y)


UNARY = {
    "floor": np.floor,
    "ceil": np.ceil,
    "math.floor": np.floor,
    "math.ceil": np.ceil,
    "method.floor": np.floor,
    "sqrt_rn": lambda x: np.sqrt(np.abs(x)),
    "math.sqrt_rn": lambda x: np.sqrt(np.abs(x)),
    "libdevice.tanh": np.tanh,
    "libdevice.fabs": np.abs,
    "libdevice.floor": np.floor,
    "libdevice.exp": np.exp,
    "cast": lambda x: np.trunc(x),
    "method.cast": lambda x: x.astype(np.float16).astype(np.float32),
    "numel": lambda x: x * np.float32(BLOCK),
    "method.sum": lambda x: x - x.sum(dtype=np.float32),
    "softmax": lambda x: np.exp(x - x.max()) / np.exp(x - x.max()).sum(),
    "zeros_like": lambda x: np.full_like(x, -2.5),
}


@pytest.mark.parametrize("op", list(UNARY))
def test_unary_names_match_numpy(op, rng):
    x = (rng.standard_normal(BLOCK) * 4).astype(np.float32)
    x[:4] = [-2.0, 2.5, -0.5, 3.0]
    out = np.zeros(BLOCK, np.float32)
    run(unary_kernel, {"x_ptr": "*fp32", "out_ptr": "*fp32"}, [x, out], OP=op, BLOCK=BLOCK)
    np.testing.assert_allclose(out, UNARY[op](x).astype(np.float32), rtol=2e-6, atol=1e-6)


@tilec.jit
def binary_kernel(x_ptr, y_ptr, out_ptr, OP: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs)
    y = tl.load(y_ptr + offs)
    if OP == "umulhi":
        z = tl.umulhi(x, y)
    elif OP == "math.umulhi":
        z = tl.math.umulhi(x, y)
    elif OP == "add":
        z = tl.add(x, y, sanitize_overflow=False)
    elif OP == "sub":
        z = tl.sub(x, y)
    elif OP == "mul":
        z = tl.mul(x, y)
    elif OP == "fdiv":
        z = tl.fdiv(x, y, ieee_rounding=True)
    elif OP == "div_rn":
        z = tl.math.div_rn(x, y)
    elif OP == "reduce_or":
        z = tl.reduce_or(tl.join(x, y), axis=1)
    tl.store(out_ptr + offs, z)


def _umulhi(x, y):
    width = x.dtype.itemsize * 8
    ux = x.view(f"u{x.dtype.itemsize}").astype(object)
    uy = y.view(f"u{y.dtype.itemsize}").astype(object)
    high = [(a * b) >> width for a, b in zip(ux, uy, strict=True)]
    return np.array(high, dtype=f"u{x.dtype.itemsize}").view(x.dtype)


@pytest.mark.parametrize("dtype", [np.int32, np.uint32, np.int64, np.uint64])
@pytest.mark.parametrize("op", ["umulhi", "math.umulhi", "add", "sub", "mul", "reduce_or"])
def test_integer_names_match_numpy(op, dtype, rng):
    info = np.iinfo(dtype)
    x = rng.integers(info.min, info.max, BLOCK, dtype=dtype, endpoint=True)
    y = rng.integers(info.min, info.max, BLOCK, dtype=dtype, endpoint=True)
    x[:2], y[:2] = info.max, info.max  # the largest products
    out = np.zeros(BLOCK, dtype)
    sig = "*" + {np.int32: "i32", np.uint32: "u32", np.int64: "i64", np.uint64: "u64"}[dtype]
    signature = {"x_ptr": sig, "y_ptr": sig, "out_ptr": sig}
    run(binary_kernel, signature, [x, y, out], OP=op, BLOCK=BLOCK)
    with np.errstate(over="ignore"):
        want = {
            "umulhi": _umulhi,
            "math.umulhi": _umulhi,
            "add": np.add,
            "sub": np.subtract,
            "mul": np.multiply,
            "reduce_or": np.bitwise_or,
        }[op](x, y)
    np.testing.assert_array_equal(out, want)


@pytest.mark.parametrize("op", ["fdiv", "div_rn"])
def test_float_division_rounds_to_nearest(op, rng):
    x = rng.standard_normal(BLOCK).astype(np.float32)
    y = rng.standard_normal(BLOCK).astype(np.float32)
    out = np.zeros(BLOCK, np.float32)
    sig = {"x_ptr": "*fp32", "y_ptr": "*fp32", "out_ptr": "*fp32"}
    run(binary_kernel, sig, [x, y, out], OP=op, BLOCK=BLOCK)
    np.testing.assert_array_equal(out, x / y)


@tilec.jit
def swizzle_kernel(out_i, out_j, SIZE_I: tl.constexpr, SIZE_J: tl.constexpr, G: tl.constexpr):
    i = tl.arange(0, SIZE_I)[:, None] + tl.zeros((SIZE_I, SIZE_J), tl.int32)
    j = tl.arange(0, SIZE_J)[None, :] + tl.zeros((SIZE_I, SIZE_J), tl.int32)
    new_i, new_j = tl.swizzle2d(i, j, SIZE_I, SIZE_J, G)
    offs = i * SIZE_J + j
    tl.store(out_i + offs, new_i)
    tl.store(out_j + offs, new_j)


def test_swizzle2d_matches_triton_docstring_example():
    out_i, out_j = np.zeros((4, 4), np.int32), np.zeros((4, 4), np.int32)
    sig = {"out_i": "*i32", "out_j": "*i32"}
    run(swizzle_kernel, sig, [out_i, out_j], SIZE_I=4, SIZE_J=4, G=2)
    swizzled = out_i * 4 + out_j  # where each row-major index lands
    moved = np.zeros(16, np.int32)
    moved[swizzled.ravel()] = np.arange(16)
    want = [[0, 2, 4, 6], [1, 3, 5, 7], [8, 10, 12, 14], [9, 11, 13, 15]]
    np.testing.assert_array_equal(moved.reshape(4, 4), want)


@tilec.jit
def pointer_kernel(x_ptr, out_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    as_bytes = x_ptr.to(tl.pointer_type(tl.uint8))
    tl.static_assert(as_bytes.dtype.element_ty == tl.uint8)
    tl.static_assert(isinstance(x_ptr, tl.tensor))
    address = x_ptr.to(tl.int64)
    back = address.to(tl.pi32_t)
    low_bytes = tl.load(as_bytes + offs * 4)  # the low byte of each int32 (little endian)
    tl.store(out_ptr + offs, tl.load(back + offs) - low_bytes.to(tl.int32))


def test_pointer_casts_keep_the_address():
    x = np.arange(BLOCK, dtype=np.int32) * 1000
    out = np.zeros(BLOCK, np.int32)
    run(pointer_kernel, {"x_ptr": "*i32", "out_ptr": "*i32"}, [x, out], BLOCK=BLOCK)
    np.testing.assert_array_equal(out, x - (x & 0xFF))


@tilec.jit
def debug_kernel(x_ptr, n, OP: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs)
    if OP == "static_print":
        tl.static_print("static", BLOCK, x)
    elif OP == "assert":
        tl.device_assert(x < 100, "x is small")
    elif OP == "assert_masked":
        tl.device_assert(x < 100, "x is small", mask=offs < n)
    elif OP == "print":
        print("x:", x)
    elif OP == "assume":
        tl.assume(n > 0)
        tl.store(x_ptr + offs, tl.max_constancy(x, 1) + 1)


def test_static_print_prints_at_compile_time(capsys):
    x = np.zeros(BLOCK, np.float32)
    run_interp(debug_kernel, {"x_ptr": "*fp32", "n": "i32"}, [x, 1], OP="static_print", BLOCK=BLOCK)
    assert f"static {BLOCK} tensor<{BLOCK}xf32>" in capsys.readouterr().out


def test_device_assert_fails_where_the_condition_is_false():
    x = np.zeros(BLOCK, np.float32)
    x[-1] = 1000
    sig = {"x_ptr": "*fp32", "n": "i32"}
    with pytest.raises(InterpreterError, match="x is small"):
        run_interp(debug_kernel, sig, [x, BLOCK], OP="assert", BLOCK=BLOCK)
    run_interp(debug_kernel, sig, [x, BLOCK - 1], OP="assert_masked", BLOCK=BLOCK)  # masked off
    with pytest.raises(InterpreterError, match="x is small"):
        run_interp(debug_kernel, sig, [x, BLOCK], OP="assert_masked", BLOCK=BLOCK)


def test_print_in_a_kernel_is_device_print(capfd):
    x = np.arange(BLOCK, dtype=np.float32)
    run_interp(debug_kernel, {"x_ptr": "*fp32", "n": "i32"}, [x, 1], OP="print", BLOCK=BLOCK)
    assert "x:" in capfd.readouterr().out


def test_assume_and_max_constancy_keep_the_values():
    x = np.arange(BLOCK, dtype=np.float32)
    run_interp(debug_kernel, {"x_ptr": "*fp32", "n": "i32"}, [x, 1], OP="assume", BLOCK=BLOCK)
    np.testing.assert_array_equal(x, np.arange(BLOCK) + 1)


@tilec.jit
def bad_math_kernel(x_ptr, OP: tl.constexpr):
    x = tl.load(x_ptr + tl.arange(0, 8))
    if OP == "umulhi_float":
        tl.umulhi(x, x)
    elif OP == "umulhi_i16":
        tl.umulhi(x.to(tl.int16), x.to(tl.int16))
    elif OP == "fdiv_int":
        tl.fdiv(x.to(tl.int32), 2)
    elif OP == "ptr_to_i32":
        x_ptr.to(tl.int32)
    elif OP == "i32_to_ptr":
        x.to(tl.int32).to(tl.pi32_t)
    elif OP == "reduce_or_float":
        tl.reduce_or(x, 0)
    elif OP == "const_pointer":
        x_ptr.to(tl.pointer_type(tl.float32, const=True))
    elif OP == "rtz":
        x.to(tl.float16, fp_downcast_rounding="rtz")


@pytest.mark.parametrize(
    ("op", "message"),
    [
        ("umulhi_float", "tl.umulhi takes integers"),
        ("umulhi_i16", "tl.umulhi takes 32- or 64-bit integers"),
        ("fdiv_int", "tl.fdiv takes float operands"),
        ("ptr_to_i32", "cannot cast a pointer"),
        ("i32_to_ptr", "only int64 values become pointers"),
        ("reduce_or_float", "tl.reduce_or needs an integer tensor"),
        ("const_pointer", "global pointers only"),
        ("rtz", "fp_downcast_rounding='rtz' is not supported"),
    ],
)
def test_math_names_reject_what_they_cannot_honour(op, message):
    error = compile_error(bad_math_kernel, {"x_ptr": "*fp32"}, OP=op)
    assert message in error.message, error.message


def test_host_helpers():
    assert [tilec.next_power_of_2(n) for n in (0, 1, 2, 3, 17, 1024)] == [1, 1, 2, 4, 32, 1024]
    assert tl.TRITON_MAX_TENSOR_NUMEL == 2**20
    assert tl.pointer_type(tl.float16).element_ty == tl.float16
    assert set(libdevice.NAMES) <= set(dir(tl.extra.cuda.libdevice))


def test_warmup_compiles_without_launching():
    x = np.arange(BLOCK, dtype=np.float32)
    out = np.full(BLOCK, -1.0, np.float32)
    compiled = unary_kernel.warmup(x, out, OP="floor", BLOCK=BLOCK, grid=(1,), backend="interp")
    assert "math.floor" in compiled.asm["tir"]
    np.testing.assert_array_equal(out, -1.0)  # nothing ran
    with pytest.raises(TypeError, match="not the dtype"):
        unary_kernel.warmup(np.float32, out, OP="floor", BLOCK=BLOCK, grid=(1,))
    with pytest.raises(TypeError, match="drop stream="):
        unary_kernel.warmup(x, out, OP="floor", BLOCK=BLOCK, grid=(1,), stream=0)


def test_the_active_driver_on_interp():
    from tilec.runtime import driver

    tilec.set_backend("interp")
    try:
        target = driver.active.get_current_target()
        assert (target.backend, target.warp_size) == ("interp", 1)
        assert driver.active.get_current_device() == 0
        with pytest.raises(RuntimeError, match="no GPU device properties"):
            driver.active.utils.get_device_properties()
    finally:
        tilec.set_backend(None)


@pytest.mark.gpu
def test_the_active_driver_on_nvidia():
    from tilec.runtime import driver

    if not tilec.get_backend("nvidia", require_available=False).is_available():
        pytest.skip("no NVIDIA GPU here")
    tilec.set_backend("nvidia")
    try:
        target = driver.active.get_current_target()
        assert target.backend == "cuda" and target.warp_size == 32 and target.arch >= 70
        properties = driver.active.utils.get_device_properties(0)
        assert properties["multiprocessor_count"] > 0 and properties["max_shared_mem"] > 0
        assert properties["warpSize"] == 32 and properties["max_num_regs"] > 0
    finally:
        tilec.set_backend(None)


@tilec.jit
def dtype_query_kernel(x_ptr, out_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs)
    if x.dtype.is_floating():
        y = x * 2
    else:
        y = x + tl.constexpr(x.dtype.primitive_bitwidth)
    tl.static_assert(x_ptr.dtype.is_ptr() and x_ptr.dtype.element_ty.scalar == x.dtype)
    tl.store(out_ptr + offs, y)


@pytest.mark.parametrize(("sig", "dtype"), [("*fp32", np.float32), ("*i16", np.int16)])
def test_dtype_queries_in_kernels(sig, dtype):
    x = np.arange(BLOCK, dtype=dtype)
    out = np.zeros(BLOCK, dtype)
    run(dtype_query_kernel, {"x_ptr": sig, "out_ptr": sig}, [x, out], BLOCK=BLOCK)
    np.testing.assert_array_equal(out, x * 2 if dtype is np.float32 else x + 16)
    assert tl.int8.is_int_signed() and tl.uint8.is_int_unsigned() and tl.int1.is_bool()
    assert tl.float16.is_fp16() and not tl.bfloat16.is_fp16() and tl.pi32_t.primitive_bitwidth == 64


@tilec.jit
def libdevice_kernel(x_ptr, y_ptr, out_ptr, OP: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs)
    y = tl.load(y_ptr + offs)
    if OP == "trunc":
        z = libdevice.trunc(x)
    elif OP == "rint":
        z = libdevice.rint(x)
    elif OP == "nearbyint":
        z = libdevice.nearbyint(x)
    elif OP == "round":
        z = libdevice.round(x)
    elif OP == "copysign":
        z = libdevice.copysign(x, y)
    elif OP == "saturatef":
        z = libdevice.saturatef(x)
    elif OP == "rcp_rn":
        z = libdevice.rcp_rn(x)
    elif OP == "add_rn":
        z = libdevice.add_rn(x, y) + libdevice.mul_rn(x, y) - libdevice.sub_rn(y, x)
    elif OP == "isnan":
        z = libdevice.isnan(x) + 2 * libdevice.isinf(x) + 4 * libdevice.signbit(x)
        z = (z + 8 * libdevice.finitef(x) + 16 * libdevice.isfinited(x)).to(x.dtype)
    elif OP == "rz":
        z = libdevice.float2int_rz(x).to(x.dtype)
    elif OP == "bits":
        if x.dtype == tl.float64:
            z = libdevice.longlong_as_double(libdevice.double_as_longlong(x) ^ 1)
        else:
            z = libdevice.int_as_float(libdevice.float_as_int(x) ^ 1)
    tl.store(out_ptr + offs, z)


def _round_half_away(x):
    return np.where(np.abs(x - np.trunc(x)) >= 0.5, np.trunc(x) + np.sign(x), np.trunc(x))


def _flags(x):
    finite = np.isfinite(x).astype(int)
    return np.isnan(x) + 2 * np.isinf(x) + 4 * np.signbit(x) + 8 * finite + 16 * finite


LIBDEVICE = {
    "trunc": lambda x, y: np.trunc(x),
    "rint": lambda x, y: np.rint(x),
    "nearbyint": lambda x, y: np.rint(x),
    "round": lambda x, y: _round_half_away(x),
    "copysign": np.copysign,
    "saturatef": lambda x, y: np.where(np.isnan(x), 0, np.clip(x, 0, 1)) + 0.0,  # -0 is +0
    "rcp_rn": lambda x, y: 1 / x,
    "add_rn": lambda x, y: x + y + x * y - (y - x),
    "isnan": lambda x, y: _flags(x),
    "rz": lambda x, y: np.trunc(np.clip(np.nan_to_num(x), -(2**31), 2**31 - 1)) + 0.0,
    "bits": lambda x, y: (x.view(f"i{x.itemsize}") ^ 1).view(x.dtype),
}


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("op", list(LIBDEVICE))
def test_libdevice_functions_written_in_tl(op, dtype, rng):
    x = (rng.standard_normal(64) * 6).astype(dtype)
    x[:12] = [0.5, -0.5, 1.5, 2.5, -2.5, -0.0, 0.49999997, 3e9, -7.0, 0.25, -1.75, 1e30]
    if op in ("isnan", "copysign", "saturatef", "bits"):
        x[12:15] = [np.nan, np.inf, -np.inf]
    if op == "rz":
        x = np.clip(x, -1e9, 1e9)
    y = rng.standard_normal(64).astype(dtype)
    out = np.zeros(64, dtype)
    sig = "*fp64" if dtype is np.float64 else "*fp32"
    signature = {"x_ptr": sig, "y_ptr": sig, "out_ptr": sig}
    run(libdevice_kernel, signature, [x, y, out], OP=op, BLOCK=64)
    with np.errstate(all="ignore"):
        want = np.asarray(LIBDEVICE[op](x, y)).astype(dtype)
    np.testing.assert_array_equal(out.view(f"u{x.itemsize}"), want.view(f"u{x.itemsize}"))


@tilec.jit
def block_type_kernel(x_ptr, out_ptr, BLOCK: tl.constexpr):
    x = tl.load(x_ptr + tl.arange(0, BLOCK))
    tl.static_assert(x.type.is_block() and x.type.shape == (BLOCK,))
    tl.static_assert(x.type.scalar == tl.float32 and x.type.is_floating())
    tl.store(out_ptr + tl.arange(0, BLOCK), x * x.type.numel + x.type.primitive_bitwidth)


def test_tensor_type_is_a_block_type():
    x = np.arange(BLOCK, dtype=np.float32)
    out = np.zeros(BLOCK, np.float32)
    run(block_type_kernel, {"x_ptr": "*fp32", "out_ptr": "*fp32"}, [x, out], BLOCK=BLOCK)
    np.testing.assert_array_equal(out, x * BLOCK + 32)
    assert tl.block_type(tl.int8, [2, 4]).numel == 8 and not tl.int8.is_block()


@tilec.jit
def python_assert_kernel(x_ptr, BLOCK: tl.constexpr):
    x = tl.load(x_ptr + tl.arange(0, BLOCK))
    assert x < 100, "x is small"


def test_python_assert_on_a_runtime_value_is_device_assert():
    x = np.zeros(BLOCK, np.float32)
    run_interp(python_assert_kernel, {"x_ptr": "*fp32"}, [x], BLOCK=BLOCK)
    x[3] = 500
    with pytest.raises(InterpreterError, match="x is small"):
        run_interp(python_assert_kernel, {"x_ptr": "*fp32"}, [x], BLOCK=BLOCK)
