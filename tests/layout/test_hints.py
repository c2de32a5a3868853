"""`tl.multiple_of` / `tl.max_contiguous` reach the axis-info analysis and so vectorization."""

import pytest

import tilec
import tilec.language as tl
from tilec.frontend.errors import CompilationError


@tilec.jit
def copy_kernel(x_ptr, out_ptr, start, BLOCK: tl.constexpr, HINT: tl.constexpr):
    offs = start + tl.arange(0, BLOCK)
    if HINT:
        offs = tl.max_contiguous(tl.multiple_of(offs, 4), BLOCK)
    tl.store(out_ptr + offs, tl.load(x_ptr + offs))


@tilec.jit
def bad_hint_kernel(x_ptr, BLOCK: tl.constexpr):
    offs = tl.multiple_of(tl.arange(0, BLOCK), (4, 4))
    tl.store(x_ptr + offs, 1.0)


SIGNATURE = {"x_ptr": "*fp32", "out_ptr": "*fp32", "start": "i32"}


def ptx(hint: bool) -> str:
    compiled = tilec.compile(
        copy_kernel, SIGNATURE, {"BLOCK": 512, "HINT": hint}, backend="nvidia", target="sm_90",
        divisibility=["x_ptr", "out_ptr"],
    )  # fmt: skip
    return compiled.asm["ptx"]


def test_hints_make_an_unknown_offset_vectorizable():
    assert "ld.global.v4" not in ptx(hint=False)  # `start` may be anything: scalar accesses
    hinted = ptx(hint=True)
    assert "ld.global.v4" in hinted and "st.global.v4" in hinted


def test_hint_with_the_wrong_number_of_values_is_an_error():
    with pytest.raises(CompilationError, match=r"tl.multiple_of takes a positive int or one per"):
        tilec.compile(bad_hint_kernel, {"x_ptr": "*fp32"}, {"BLOCK": 64}, backend="interp")
