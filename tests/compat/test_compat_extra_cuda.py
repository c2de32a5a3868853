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
    assert set(tl.extra.cuda.__all__) >= {"globaltimer", "smid", "num_threads", "num_warps",
                                          "gdc_wait", "gdc_launch_dependents", "libdevice"}  # fmt: skip
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
