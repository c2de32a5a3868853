"""Integer negation around two ptxas miscompiles found by `tilec fuzz` on the H100
(tests/fuzz/RESULTS.md, findings 6 and 7): the PTX tilec hands to ptxas has no `neg.s16`,
`abs.s16` or `neg.s32` (`codegen.avoid_ptxas_negation_bugs` writes them as two's complement),
the shrunk fuzz kernels compute what the interpreter computes on the device, and so do the
16-bit negations at the bottom of the range."""

from __future__ import annotations

import numpy as np
import pytest

import tilec
import tilec.language as tl
from tilec_nvidia.codegen import avoid_ptxas_negation_bugs, find_ptxas, ptx_to_cubin

gpu = pytest.mark.gpu


def test_negations_are_written_as_twos_complement():
    ptx = "\tneg.s16 \t%rs3, %rs2;\n\tneg.s32 %r9, %r8;\n\tneg.s64 %rd2, %rd1;\n\tabs.s16 %rs5, %rs4;\n"
    out = avoid_ptxas_negation_bugs(ptx)
    assert "\tnot.b16 %rs3, %rs2;\n\tadd.s16 %rs3, %rs3, 1;" in out
    assert "\tnot.b32 %r9, %r8;\n\tadd.s32 %r9, %r9, 1;" in out
    assert "neg.s64 %rd2, %rd1;" in out  # 64-bit negation is not affected
    assert "max.s16 %rs5, %rs4, %abs_t;" in out and "abs.s16" not in out
    assert avoid_ptxas_negation_bugs("neg.f32 %f2, %f1;") == "neg.f32 %f2, %f1;"


@tilec.jit
def negate_i8_kernel(x_ptr, out_ptr, BLOCK: tl.constexpr):
    """Finding 6, shrunk: an i8 negated at -128 (LLVM keeps it in the high byte of 16 bits)."""
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs)
    tl.store(out_ptr + offs, (-(x.to(tl.int8))).to(tl.int16))


@tilec.jit
def negate_i16_kernel(x_ptr, out_ptr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs)
    tl.store(out_ptr + offs, (-x).to(tl.int32) * 4 + tl.abs(x).to(tl.int32))


@tilec.jit
def negated_product_min_kernel(v_ptr, out_ptr, n, BLOCK: tl.constexpr):
    """Finding 7, shrunk: min(-(n * v), pid) then min(., 0), into an atomic xor."""
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    v = tl.load(v_ptr + (offs ^ 1), mask=mask, other=1)
    p = (n.to(tl.int64) * (v.to(tl.int64) * -1)).to(tl.int32)
    tl.atomic_xor(out_ptr + offs, tl.minimum(tl.minimum(p, pid), 0), mask=mask)


CASES = [
    (negate_i8_kernel, {"x_ptr": "*i64", "out_ptr": "*i16"}, {"BLOCK": 256}, 4),
    (negate_i16_kernel, {"x_ptr": "*i16", "out_ptr": "*i32"}, {"BLOCK": 1024}, 4),
    (negated_product_min_kernel, {"v_ptr": "*u32", "out_ptr": "*i32", "n": "i32"}, {"BLOCK": 1}, 4),
]


@pytest.mark.parametrize("target", ["sm_80", "sm_90a"])
@pytest.mark.parametrize(("kernel", "signature", "constexprs", "warps"), CASES)
def test_the_fuzz_kernels_have_no_negation_ptxas_miscompiles(
    kernel, signature, constexprs, warps, target
):
    ptx = tilec.compile(kernel, signature, constexprs, backend="nvidia", target=target,
                        num_warps=warps).asm["ptx"]  # fmt: skip
    for bad in ("neg.s16", "neg.s32", "abs.s16"):
        assert bad not in ptx
    if find_ptxas() is None:
        pytest.skip("ptxas is not installed: the PTX was generated but not assembled")
    assert ptx_to_cubin(ptx, target)  # the scoped register of abs.s16 assembles


def _run(kernel, grid, args, **constexprs):
    expected = [a.copy() if isinstance(a, np.ndarray) else a for a in args]
    kernel[grid](*args, backend="nvidia", **constexprs)
    kernel[grid](*expected, backend="interp", **constexprs)
    return args, expected


def _nvidia_or_skip():
    from tilec.runtime.compiler import get_backend

    availability = get_backend("nvidia", require_available=False).is_available()
    if not availability:
        pytest.skip(f"needs an NVIDIA GPU ({availability.reason})")


@gpu
def test_i8_and_i16_negations_wrap_on_the_device():
    _nvidia_or_skip()
    x8 = np.arange(-128, 128, dtype=np.int64)
    (_, out), (_, want) = _run(negate_i8_kernel, (1,), [x8, np.zeros(256, np.int16)], BLOCK=256)
    np.testing.assert_array_equal(out, want)
    assert out[0] == -128
    x16 = (np.arange(65536) - 32768).astype(np.int16)
    args = [x16, np.zeros(65536, np.int32)]
    (_, out), (_, want) = _run(negate_i16_kernel, (64,), args, BLOCK=1024)
    np.testing.assert_array_equal(out, want)
    assert out[0] == -32768 * 4 - 32768


@gpu
def test_a_negated_product_under_two_mins_keeps_its_sign_on_the_device():
    _nvidia_or_skip()
    v = np.array([3353844684, 630676191, 2735562248, 3368457685, 3112973710, 207469908], np.uint32)
    out = np.array([5, -7, 11, 0, 0, 0], np.int32)
    (_, got, _), (_, want, _) = _run(negated_product_min_kernel, (3,), [v, out, 3], BLOCK=1)
    np.testing.assert_array_equal(got, want)
    assert got[0] == 5 ^ -1892028573
