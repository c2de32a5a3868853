"""`tl.extra.cuda` and `tl.extra.hip` (Triton 3.6's `language/extra`) on the interpreter:
`num_warps()` and `num_threads()` are the compile's, as constexprs; the special registers
(`globaltimer`, `smid`, grid dependency control, HIP's `memrealtime`) are refused, located, as
Triton's interpreter refuses their inline assembly. tests/nvidia and tests/amd compile them."""

import numpy as np
import pytest
from compat_helpers import run_interp

import tilec
import tilec.language as tl
from tilec.frontend import CompilationError


@tilec.jit
def fill_threads(out_ptr):
    num_threads: tl.constexpr = tl.extra.cuda.num_threads()
    offsets = tl.arange(0, num_threads)
    tl.store(out_ptr + offsets, tl.extra.cuda.num_warps())


@tilec.jit
def registers(out_ptr, WHICH: tl.constexpr):
    if WHICH == "globaltimer":
        tl.store(out_ptr, tl.extra.cuda.globaltimer())
    elif WHICH == "smid":
        tl.store(out_ptr, tl.extra.cuda.smid())
    elif WHICH == "gdc_wait":
        tl.extra.cuda.gdc_wait()
    elif WHICH == "gdc_launch_dependents":
        tl.extra.cuda.gdc_launch_dependents()
    else:
        tl.store(out_ptr, tl.extra.hip.memrealtime())


@pytest.mark.parametrize("warps", [1, 2, 8])
def test_num_threads_and_num_warps_are_the_compiles(warps):
    out = np.zeros(warps * 32 + 1, np.int32)
    fill_threads[(1,)](out, num_warps=warps, backend="interp")
    assert (out[:-1] == warps).all() and out[-1] == 0


def test_triton_names():
    assert set(tl.extra.cuda.__all__) == {
        "libdevice", "globaltimer", "num_threads", "num_warps", "smid", "gdc_wait",
        "gdc_launch_dependents", "convert_custom_float8_sm70", "convert_custom_float8_sm80",
    }  # fmt: skip
    assert tl.extra.cuda.libdevice.asin is tl.extra.libdevice.asin
    assert set(tl.extra.hip.__all__) == {"libdevice", "memrealtime"}


@pytest.mark.parametrize(
    ("which", "name"),
    [
        ("globaltimer", "tl.extra.cuda.globaltimer()"),
        ("smid", "tl.extra.cuda.smid()"),
        ("gdc_wait", "tl.extra.cuda.gdc_wait()"),
        ("gdc_launch_dependents", "tl.extra.cuda.gdc_launch_dependents()"),
        ("memrealtime", "tl.extra.hip.memrealtime()"),
    ],
)
def test_registers_are_refused_on_the_interpreter(which, name):
    with pytest.raises(CompilationError) as info:
        run_interp(registers, {"out_ptr": "*i64"}, [np.zeros(1, np.int64)], WHICH=which)
    error = info.value
    assert error.file == __file__ and error.line > 0
    assert f"{name} reads an" in error.message and "the interpreter has none" in error.message


def test_outside_a_kernel_they_say_so():
    with pytest.raises(tilec.errors.KernelCallError, match=r"inside a @tilec\.jit kernel"):
        tl.extra.cuda.globaltimer()


@tilec.jit
def custom_float8(x_ptr, codes_ptr, back_ptr, expected_ptr, BLOCK: tl.constexpr):
    offsets = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offsets)
    code = tl.extra.cuda.convert_custom_float8_sm80(x, tl.float8e4b15)
    tl.store(codes_ptr + offsets, code.to(tl.uint8, bitcast=True))
    tl.store(back_ptr + offsets, tl.extra.cuda.convert_custom_float8_sm70(code, tl.float32))
    tl.store(expected_ptr + offsets, x.to(tl.float8e4b15).to(tl.uint8, bitcast=True))


def test_convert_custom_float8_is_the_float8e4b15_conversion():
    """What Triton's `.to(tl.float8e4b15)` uses on NVIDIA: round half away from zero,
    saturating at +-1.75 (`tilec.ir.float8`), decoding exactly."""
    x = np.concatenate([np.linspace(-2.5, 2.5, 60), [0.0, 1e-6, np.inf, -np.inf]]).astype(
        np.float32
    )
    codes, expected = np.zeros(64, np.uint8), np.zeros(64, np.uint8)
    back = np.zeros(64, np.float32)
    custom_float8[(1,)](x, codes, back, expected, BLOCK=64, backend="interp")
    np.testing.assert_array_equal(codes, expected)
    assert np.abs(back).max() == 1.75 and back[0] == -1.75 and back[-4] == 0.0
    assert (np.abs(back - np.clip(x, -1.75, 1.75)) <= 0.0625).all()  # half a step below 2


@tilec.jit
def custom_float8_wrong(x_ptr):
    x = tl.load(x_ptr)
    tl.store(x_ptr, tl.extra.cuda.convert_custom_float8_sm80(x, tl.float16))


def test_convert_custom_float8_needs_float8e4b15():
    with pytest.raises(CompilationError, match=r"converts to or from tl\.float8e4b15"):
        run_interp(custom_float8_wrong, {"x_ptr": "*fp32"}, [np.zeros(1, np.float32)])
