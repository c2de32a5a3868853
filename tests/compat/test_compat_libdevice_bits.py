"""`tl.extra.libdevice`'s integer functions (`libdevice_integer`) and its conversions with a
directed rounding (`libdevice_rounding`), exact, against Python's integers and fractions. Run on
interp in CI, on a GPU backend with `TILEC_TEST_BACKEND=nvidia` (checked against the interpreter
too: compat_names_helpers)."""

from __future__ import annotations

import struct
from fractions import Fraction

import numpy as np
import pytest
from compat_helpers import compile_error
from compat_names_helpers import run

import tilec
import tilec.language as tl
from tilec.language.extra import libdevice

N = 256
SIG = {np.int32: "i32", np.uint32: "u32", np.int64: "i64", np.uint64: "u64",
       np.float32: "fp32", np.float64: "fp64"}  # fmt: skip


@tilec.jit
def bits_kernel(x_ptr, y_ptr, z_ptr, out_ptr, OP: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs)
    y = tl.load(y_ptr + offs)
    z = tl.load(z_ptr + offs)
    if OP == "clz":
        r = libdevice.clz(x)
    elif OP == "popc":
        r = libdevice.popc(x)
    elif OP == "brev":
        r = libdevice.brev(x)
    elif OP == "ffs":
        r = libdevice.ffs(x)
    elif OP == "mulhi":
        r = libdevice.mulhi(x, y)
    elif OP == "mul24":
        r = libdevice.mul24(x, y)
    elif OP == "sad":
        r = libdevice.sad(x, y, z)
    elif OP == "hadd":
        r = libdevice.hadd(x, y)
    elif OP == "rhadd":
        r = libdevice.rhadd(x, y)
    elif OP == "byte_perm":
        r = libdevice.byte_perm(x, y, z)
    elif OP == "double2loint":
        r = libdevice.double2loint(x)
    elif OP == "double2hiint":
        r = libdevice.double2hiint(x)
    else:
        r = libdevice.hiloint2double(x, y)
    tl.store(out_ptr + offs, r)


def integers(dtype, rng) -> np.ndarray:
    info = np.iinfo(dtype)
    x = rng.integers(info.min, info.max, N, dtype=dtype, endpoint=True)
    x[: N // 4] >>= rng.integers(0, info.bits - 1, N // 4).astype(dtype)  # every width
    x[:6] = [0, 1, info.max, info.min, info.max - 1, 2 ** (info.bits - 2)]
    return x


def launch(op, args, out_dtype):
    out = np.zeros(N, out_dtype)
    args = [*args, *[args[0]] * (3 - len(args))]
    sig = {
        name: f"*{SIG[a.dtype.type]}"
        for name, a in zip(("x_ptr", "y_ptr", "z_ptr"), args, strict=True)
    }
    sig["out_ptr"] = f"*{SIG[out_dtype]}"
    run(bits_kernel, sig, [*args, out], OP=op, BLOCK=N)
    return out


def wrap(value: int, bits: int, signed: bool) -> int:
    value %= 1 << bits
    return value - (1 << bits) if signed and value >= 1 << (bits - 1) else value


@pytest.mark.parametrize("dtype", [np.int32, np.int64])
def test_bit_functions(dtype, rng):
    x = integers(dtype, rng)
    bits = np.iinfo(dtype).bits
    unsigned = [int(v) % (1 << bits) for v in x]
    expected = {
        "clz": [bits - u.bit_length() for u in unsigned],
        "popc": [u.bit_count() for u in unsigned],
        "brev": [wrap(int(f"{u:0{bits}b}"[::-1], 2), bits, True) for u in unsigned],
        "ffs": [(u & -u).bit_length() for u in unsigned],
    }
    for op, values in expected.items():
        out = launch(op, [x], dtype if op == "brev" else np.int32)
        np.testing.assert_array_equal(out, np.array(values, out.dtype), err_msg=op)


@pytest.mark.parametrize("dtype", [np.int32, np.uint32, np.int64, np.uint64])
def test_mulhi_is_the_high_half(dtype, rng):
    x, y = integers(dtype, rng), integers(dtype, rng)[::-1].copy()
    bits = np.iinfo(dtype).bits
    signed = np.iinfo(dtype).min < 0
    expected = [wrap((int(a) * int(b)) >> bits, bits, signed) for a, b in zip(x, y, strict=True)]
    np.testing.assert_array_equal(launch("mulhi", [x, y], dtype), np.array(expected, dtype))


@pytest.mark.parametrize("dtype", [np.int32, np.uint32])
def test_24_bit_products_sums_of_differences_and_averages(dtype, rng):
    x, y = integers(dtype, rng), integers(dtype, rng)[::-1].copy()
    z = integers(np.uint32, rng)
    signed = dtype is np.int32
    low24 = [wrap(int(v), 24, signed) for v in x], [wrap(int(v), 24, signed) for v in y]
    expected = {
        "mul24": [wrap(a * b, 32, signed) for a, b in zip(*low24, strict=True)],
        "sad": [
            wrap(abs(int(a) - int(b)) + int(c), 32, signed) for a, b, c in zip(x, y, z, strict=True)
        ],
        "hadd": [(int(a) + int(b)) >> 1 for a, b in zip(x, y, strict=True)],
        "rhadd": [(int(a) + int(b) + 1) >> 1 for a, b in zip(x, y, strict=True)],
    }
    for op, values in expected.items():
        out = launch(op, [x, y, z], dtype)
        np.testing.assert_array_equal(out, np.array(values, dtype), err_msg=op)


def test_byte_perm_selects_bytes_of_both_words(rng):
    x, y = integers(np.int32, rng), integers(np.int32, rng)
    s = rng.integers(0, 2**16, N).astype(np.int32)
    expected = []
    for a, b, c in zip(x, y, s, strict=True):
        word = (int(b) % 2**32) << 32 | int(a) % 2**32
        chosen = [(word >> (8 * ((int(c) >> (4 * i)) & 7))) & 0xFF for i in range(4)]
        expected.append(wrap(sum(v << (8 * i) for i, v in enumerate(chosen)), 32, True))
    np.testing.assert_array_equal(launch("byte_perm", [x, y, s], np.int32), expected)


def test_the_words_of_a_double(rng):
    x = rng.standard_normal(N) * 10.0 ** rng.integers(-300, 300, N)
    words = [struct.unpack("<ii", struct.pack("<d", v)) for v in x]
    np.testing.assert_array_equal(launch("double2loint", [x], np.int32), [w[0] for w in words])
    np.testing.assert_array_equal(launch("double2hiint", [x], np.int32), [w[1] for w in words])
    lo = np.array([w[0] for w in words], np.int32)
    hi = np.array([w[1] for w in words], np.int32)
    np.testing.assert_array_equal(launch("hiloint2double", [hi, lo], np.float64), x)


def test_bit_functions_refuse_floats():
    error = compile_error(bits_kernel, {n: "*fp32" for n in ("x_ptr", "y_ptr", "z_ptr", "out_ptr")},
                          OP="popc", BLOCK=16)  # fmt: skip
    assert "libdevice.popc takes a 32- or 64-bit integer" in str(error)


# conversions with a directed rounding --------------------------------------------------------

TO_FLOAT = {  # name: (source dtype, target dtype)
    "double2float": (np.float64, np.float32),
    "int2float": (np.int32, np.float32),
    "uint2float": (np.uint32, np.float32),
    "ll2float": (np.int64, np.float32),
    "ull2float": (np.uint64, np.float32),
    "ll2double": (np.int64, np.float64),
    "ull2double": (np.uint64, np.float64),
}
TO_INTEGER = {
    "float2int": (np.float32, np.int32),
    "float2uint": (np.float32, np.uint32),
    "float2ll": (np.float32, np.int64),
    "float2ull": (np.float32, np.uint64),
    "double2int": (np.float64, np.int32),
    "double2uint": (np.float64, np.uint32),
    "double2ll": (np.float64, np.int64),
    "double2ull": (np.float64, np.uint64),
}


def convert_kernel_for(name: str):
    """A kernel calling `libdevice.<name>` (one compile a name: the names differ in type)."""
    function = getattr(libdevice, name)

    @tilec.jit
    def convert_kernel(x_ptr, out_ptr, BLOCK: tl.constexpr):
        offs = tl.arange(0, BLOCK)
        tl.store(out_ptr + offs, function(tl.load(x_ptr + offs)))

    return convert_kernel


def directed(value: Fraction, candidates: list[float], mode: str) -> float:
    """The float of `candidates` that rounding `value` by `mode` gives, by the definition."""
    below = [c for c in candidates if (c < 0 if np.isinf(c) else Fraction(c) <= value)]
    above = [c for c in candidates if (c > 0 if np.isinf(c) else Fraction(c) >= value)]
    down, up = max(below), min(above)
    return {"rd": down, "ru": up, "rz": down if value >= 0 else up}[mode]


@pytest.mark.parametrize("mode", ["rz", "rd", "ru"])
@pytest.mark.parametrize("name", list(TO_FLOAT))
def test_directed_conversions_to_a_float(name, mode, rng):
    source, target = TO_FLOAT[name]
    if source is np.float64:
        x = rng.standard_normal(N) * 10.0 ** rng.integers(-50, 50, N)
        x[:6] = [1e300, -1e300, 1e-310, -1e-310, 3.4028235677973366e38, 0.0]
        exact = [Fraction(v) for v in x]
    else:
        x = integers(source, rng)
        exact = [Fraction(int(v)) for v in x]
    out = np.zeros(N, target)
    run(convert_kernel_for(f"{name}_{mode}"), {"x_ptr": f"*{SIG[source]}",
        "out_ptr": f"*{SIG[target]}"}, [x, out], BLOCK=N)  # fmt: skip
    with np.errstate(over="ignore"):
        nearest = x.astype(target)
    for i, value in enumerate(exact):
        c = nearest[i]
        candidates = [c, np.nextafter(c, target(-np.inf)), np.nextafter(c, target(np.inf))]
        assert out[i] == directed(value, [float(v) for v in candidates], mode), (x[i], out[i])


@pytest.mark.parametrize("mode", ["rn", "rd", "ru"])
@pytest.mark.parametrize("name", list(TO_INTEGER))
def test_conversions_to_an_integer(name, mode, rng):
    source, target = TO_INTEGER[name]
    info = np.iinfo(target)
    limit = min(float(info.max), 2.0**60) / 2
    x = rng.uniform(-limit if info.min < 0 else 0, limit, N)
    x[: N // 2] = np.round(x[: N // 2] / 1e9, 1) * 2 + rng.choice([0.5, 0.0, 0.25], N // 2)
    x = x.astype(source)
    out = np.zeros(N, target)
    run(convert_kernel_for(f"{name}_{mode}"), {"x_ptr": f"*{SIG[source]}",
        "out_ptr": f"*{SIG[target]}"}, [x, out], BLOCK=N)  # fmt: skip
    rounded = {"rn": np.rint, "rd": np.floor, "ru": np.ceil}[mode](x.astype(np.float64))
    np.testing.assert_array_equal(out, [int(v) for v in rounded])


def test_llround_rounds_halves_away_from_zero():
    x = np.array([0.5, 1.5, 2.5, -0.5, -2.5, 2.4999, -7.5, 1e15 + 0.5] * 32)
    out = np.zeros(N, np.int64)
    run(convert_kernel_for("llround"), {"x_ptr": "*fp64", "out_ptr": "*i64"}, [x, out], BLOCK=N)
    np.testing.assert_array_equal(out[:8], [1, 2, 3, -1, -3, 2, -8, 10**15 + 1])


@pytest.mark.parametrize(("backend", "target"), [("nvidia", "sm_90a"), ("amd", "gfx942")])
def test_the_gpu_backends_compile_them(backend, target):
    for op, dtype in [("mulhi", "i64"), ("clz", "i32"), ("brev", "i64"), ("byte_perm", "i32")]:
        sig = {n: f"*{dtype}" for n in ("x_ptr", "y_ptr", "z_ptr", "out_ptr")}
        tilec.compile(bits_kernel, signature=sig, constexprs={"OP": op, "BLOCK": 64},
                      backend=backend, target=target)  # fmt: skip
    for name in ("ull2float_rz", "double2float_rd"):
        source, result = TO_FLOAT[name[:-3]]
        sig = {"x_ptr": f"*{SIG[source]}", "out_ptr": f"*{SIG[result]}"}
        tilec.compile(convert_kernel_for(name), signature=sig, constexprs={"BLOCK": 64},
                      backend=backend, target=target)  # fmt: skip
