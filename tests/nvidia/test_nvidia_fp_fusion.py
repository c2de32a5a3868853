"""`enable_fp_fusion` (Triton's option, True by default): a multiply and the add of its result
become one `fma.rn` in the PTX; with False every operation keeps its own rounding (`mul.rn`,
`add.rn`), as on the interpreter."""

from __future__ import annotations

import re

import pytest

import tilec
import tilec.language as tl


@tilec.jit
def axpy_kernel(x_ptr, y_ptr, out_ptr, a, BLOCK: tl.constexpr):
    offsets = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offsets)
    y = tl.load(y_ptr + offsets)
    tl.store(out_ptr + offsets, a * x + y)


SIGNATURE = {"x_ptr": "*fp32", "y_ptr": "*fp32", "out_ptr": "*fp32", "a": "fp32"}


def _ptx(**options) -> str:
    compiled = tilec.compile(axpy_kernel, SIGNATURE, {"BLOCK": 128}, backend="nvidia",
                             target="sm_90a", **options)  # fmt: skip
    return compiled.asm["ptx"]


@pytest.mark.parametrize("fusion", [None, True, False])
def test_fp_fusion_option_decides_the_fma(fusion):
    ptx = _ptx() if fusion is None else _ptx(enable_fp_fusion=fusion)
    fused = re.findall(r"\bfma\.rn\.f32\b", ptx)
    if fusion is False:
        assert (
            not fused
            and re.search(r"\bmul\.rn\.f32\b", ptx)
            and re.search(r"\badd\.rn\.f32\b", ptx)
        )
    else:
        assert fused and not re.search(r"\bmul(\.rn)?\.f32\b", ptx)


def test_fp_fusion_is_part_of_the_cache_key():
    assert _ptx(enable_fp_fusion=True) != _ptx(enable_fp_fusion=False)


def test_a_non_bool_is_refused_by_name():
    with pytest.raises(tilec.errors.OptionValueError, match="enable_fp_fusion"):
        _ptx(enable_fp_fusion="yes")
