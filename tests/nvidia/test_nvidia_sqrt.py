"""`tl.sqrt` of float32 on NVIDIA is Triton's: `sqrt.approx.ftz.f32` (libdevice's `sqrtf` under
`enable_reflect_ftz`, `sqrt.approx.f32` without it), one MUFU.SQRT and no slow-path call, so
that ptxas may move the loads after a layer norm's reductions above it; `tl.sqrt_rn`,
`libdevice.sqrt_rn` and float64 roots stay `sqrt.rn`. On the GPU, within 2 ulp."""

from __future__ import annotations

import re

import numpy as np
import pytest

import tilec
import tilec.language as tl
from tilec.language.extra import libdevice

BLOCK = 256


@tilec.jit
def root_kernel(x_ptr, out_ptr, OP: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs)
    if OP == "sqrt":
        z = tl.sqrt(x)
    elif OP == "math_sqrt":
        z = tl.math.sqrt(x)
    elif OP == "sqrt_rn":
        z = tl.sqrt_rn(x)
    else:
        z = libdevice.sqrt_rn(x)
    tl.store(out_ptr + offs, z)


def _ptx(op: str, dtype: str = "fp32", **options) -> str:
    signature = {"x_ptr": f"*{dtype}", "out_ptr": f"*{dtype}"}
    return tilec.compile(root_kernel, signature, {"OP": op, "BLOCK": BLOCK}, backend="nvidia",
                         target="sm_90a", **options).asm["ptx"]  # fmt: skip


@pytest.mark.parametrize("op", ["sqrt", "math_sqrt"])
def test_tl_sqrt_of_float32_is_tritons_approximation(op):
    ptx = _ptx(op)
    assert re.search(r"\bsqrt\.approx\.ftz\.f32\b", ptx) and "sqrt.rn" not in ptx
    unflushed = _ptx(op, enable_reflect_ftz=False)
    assert re.search(r"\bsqrt\.approx\.f32\b", unflushed)


@pytest.mark.parametrize("op", ["sqrt_rn", "libdevice_sqrt_rn"])
def test_sqrt_rn_stays_correctly_rounded(op):
    ptx = _ptx(op)
    assert re.search(r"\bsqrt\.rn\.f32\b", ptx) and "sqrt.approx" not in ptx


def test_float64_roots_stay_correctly_rounded():
    assert "sqrt.rn.f64" in _ptx("sqrt", "fp64")


@pytest.mark.gpu
@pytest.mark.parametrize("op", ["sqrt", "sqrt_rn"])
def test_roots_on_the_gpu(op, rng):
    x = np.exp(rng.uniform(-80, 80, BLOCK)).astype(np.float32)
    out = np.zeros(BLOCK, np.float32)
    root_kernel[(1,)](x, out, OP=op, BLOCK=BLOCK, backend="nvidia")
    exact = np.sqrt(x.astype(np.float64))
    if op == "sqrt_rn":
        np.testing.assert_array_equal(out, exact.astype(np.float32))
        return
    ulp = np.spacing(exact.astype(np.float32)).astype(np.float64)
    assert (np.abs(out - exact) <= 2 * ulp).all()
