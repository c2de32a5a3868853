"""Masked loads and stores on NVIDIA are predicated (`@p ld.global`, `@p st.global`, as Triton
emits them), not a branch and a phi an access (issue 24: the branches were most of the basic
blocks LLVM worked through, 838 in an unspecialized matmul); a masked-off load gives `other`."""

from __future__ import annotations

import re

import numpy as np
import pytest

import tilec
import tilec.language as tl


@tilec.jit
def masked_copy(x_ptr, y_ptr, n, OTHER: tl.constexpr, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offsets, mask=offsets < n, other=OTHER)
    tl.store(y_ptr + offsets, x, mask=offsets < n - 3)


SIGNATURE = {"x_ptr": "*fp32", "y_ptr": "*fp32", "n": "i32"}


@pytest.mark.parametrize("divisible", [[], ["n"]])
def test_masked_accesses_are_predicated_not_branched(divisible):
    compiled = tilec.compile(
        masked_copy, SIGNATURE, {"OTHER": 2.5, "BLOCK": 1024}, backend="nvidia", target="sm_90a",
        divisibility=["x_ptr", "y_ptr", *divisible],
    )  # fmt: skip
    ptx = compiled.asm["ptx"]
    width = "v4.b32" if divisible else "b32"
    loads = re.findall(rf"@%p\d+ ld\.global\.{width}", ptx)
    stores = re.findall(r"@%p\d+ st\.global\.(?:v4\.)?b32", ptx)
    assert len(loads) == (2 if divisible else 8) and stores
    assert not re.search(r"^masked", compiled.asm["llir"], re.MULTILINE)  # no masked: blocks
    assert not re.search(r"@%p\d+ bra", ptx)
    assert "mov.b32 %r" in ptx and "1075838976" in ptx  # 2.5 for the masked-off elements


DTYPES = [np.int8, np.int16, np.float16, np.float32, np.float64, np.int64, np.bool_]


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("n", [1000, 1024])
def test_predicated_accesses_on_the_gpu(dtype, n):
    """Every word width (8-bit words in 16-bit registers, 16, 32, 64), vectors (n divisible by
    16) and scalars: what is masked off reads `other` and is not written."""
    from tilec.plugin.manager import load_backends

    availability = load_backends()["nvidia"].is_available()
    if not availability:
        pytest.skip(f"needs an NVIDIA GPU ({availability.reason})")
    rng = np.random.default_rng(0)
    size = 2048
    x = (rng.standard_normal(size) * 20).astype(dtype)
    other = True if dtype is np.bool_ else 7
    results = {}
    for backend in ("interp", "nvidia"):
        y = np.zeros(size, dtype)
        masked_copy[(size // 1024,)](x, y, n, OTHER=other, BLOCK=1024, backend=backend)
        results[backend] = y
    np.testing.assert_array_equal(results["nvidia"], results["interp"])
    expected = np.zeros(size, dtype)
    expected[: n - 3] = x[: n - 3]
    np.testing.assert_array_equal(results["nvidia"], expected)
