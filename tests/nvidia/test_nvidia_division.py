"""Float division on NVIDIA as Triton 3.6 divides: float32 `/` (and `tl.fdiv`, `tl.sigmoid`) is
`div.full.f32`, within 2 ulp; `tl.div_rn`, `libdevice.div_rn`, `libdevice.rcp_rn` and
`tl.fdiv(..., ieee_rounding=True)` are `div.rn.f32`; float64 and 16-bit `/` stay correctly
rounded. On the GPU each is checked against the correctly rounded quotient."""

from __future__ import annotations

import re

import numpy as np
import pytest

import tilec
import tilec.language as tl
from tilec.language.extra import libdevice

BLOCK = 256


@tilec.jit
def divide_kernel(x_ptr, y_ptr, out_ptr, OP: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs)
    y = tl.load(y_ptr + offs)
    if OP == "slash":
        z = x / y
    elif OP == "fdiv":
        z = tl.fdiv(x, y)
    elif OP == "fdiv_ieee":
        z = tl.fdiv(x, y, ieee_rounding=True)
    elif OP == "div_rn":
        z = tl.div_rn(x, y)
    elif OP == "libdevice_div_rn":
        z = libdevice.div_rn(x, y)
    elif OP == "rcp_rn":
        z = libdevice.rcp_rn(y) + x * 0
    elif OP == "sigmoid":
        z = tl.sigmoid(x) + y * 0
    else:  # "row": the softmax's division of a row by its sum
        z = x / tl.sum(y, axis=0)
    tl.store(out_ptr + offs, z)


FAST = ["slash", "fdiv", "sigmoid", "row"]
EXACT = ["fdiv_ieee", "div_rn", "libdevice_div_rn", "rcp_rn"]


def _ptx(op: str, dtype: str = "fp32") -> str:
    signature = {"x_ptr": f"*{dtype}", "y_ptr": f"*{dtype}", "out_ptr": f"*{dtype}"}
    compiled = tilec.compile(divide_kernel, signature, {"OP": op, "BLOCK": BLOCK},
                             backend="nvidia", target="sm_90a")  # fmt: skip
    return compiled.asm["ptx"]


@pytest.mark.parametrize("op", FAST)
def test_float32_slash_is_tritons_full_range_division(op):
    ptx = _ptx(op)
    assert re.search(r"\bdiv\.full\.f32\b", ptx), op
    assert not re.search(r"\bdiv\.rn\.f32\b", ptx), op


@pytest.mark.parametrize("op", EXACT)
def test_ieee_divisions_stay_correctly_rounded(op):
    ptx = _ptx(op)
    assert re.search(r"\b(div|rcp)\.rn\.f32\b", ptx), op
    assert "div.full" not in ptx, op


@pytest.mark.parametrize("dtype", ["fp64", "fp16", "bf16"])
def test_other_widths_divide_correctly_rounded(dtype):
    assert "div.full" not in _ptx("slash", dtype)


def test_the_ieee_mark_is_in_the_ir():
    signature = {"x_ptr": "*fp32", "y_ptr": "*fp32", "out_ptr": "*fp32"}
    tir = {
        op: tilec.compile(
            divide_kernel, signature, {"OP": op, "BLOCK": BLOCK}, backend="nvidia", target="sm_90a"
        ).asm["tir"]
        for op in ("slash", "div_rn")
    }
    assert "arith.divf" in tir["slash"] and "ieee" not in tir["slash"]
    assert re.search(r"arith\.divf .*\{ieee = unit\}", tir["div_rn"]), tir["div_rn"]


@pytest.mark.gpu
@pytest.mark.parametrize("op", FAST + EXACT)
def test_divisions_on_the_gpu(op, rng):
    x = rng.standard_normal(BLOCK).astype(np.float32)
    y = (rng.standard_normal(BLOCK) + np.sign(rng.standard_normal(BLOCK)) * 0.1).astype(np.float32)
    if op == "row":  # small integers: every order of summing them is exact
        y = rng.integers(1, 8, BLOCK).astype(np.float32)
    out = np.zeros(BLOCK, np.float32)
    divide_kernel[(1,)](x, y, out, OP=op, BLOCK=BLOCK, backend="nvidia")
    wide_x, wide_y = x.astype(np.float64), y.astype(np.float64)
    exact = {
        "rcp_rn": 1.0 / wide_y,
        "sigmoid": 1.0 / (1.0 + np.exp(-wide_x)),
        "row": wide_x / wide_y.sum(),
    }.get(op, wide_x / wide_y)
    if op in EXACT:
        np.testing.assert_array_equal(out, exact.astype(np.float32))
        return
    ulp = np.spacing(np.abs(exact).astype(np.float32)).astype(np.float64)
    slack = 8.0 if op == "sigmoid" else 2.0  # sigmoid: tl.exp's own error (test_language_math)
    assert (np.abs(out - exact) <= slack * ulp).all(), np.max(np.abs(out - exact) / ulp)


@tilec.jit
def integer_divide_kernel(x_ptr, y_ptr, q_ptr, r_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs)
    y = tl.load(y_ptr + offs)
    tl.store(q_ptr + offs, x // y)
    tl.store(r_ptr + offs, x % y)


def _integer_operands(dtype):
    """Every pair of a few dividends (the type's ends among them) and divisors (0, 1, -1 or the
    largest unsigned value, and others)."""
    info = np.iinfo(dtype)
    xs = np.array([info.min, info.min + 1, -7, -1, 0, 1, 7, 100, info.max], np.int64)
    ys = np.array([0, 1, -1, 3, -3, 7, info.max], np.int64)
    xs, ys = (np.unique(np.clip(a, info.min, info.max)).astype(dtype) for a in (xs, ys))
    x, y = (a.ravel() for a in np.meshgrid(xs, ys))
    pad = BLOCK - x.size
    return np.concatenate([x, np.ones(pad, dtype)]), np.concatenate([y, np.ones(pad, dtype)])


def test_a_remainder_needs_no_select_after_its_guarded_divisor():
    """x % y divides by 1 where y is 0 (or -1, signed): x % 1 is 0, the result tilec defines for
    both, so no select follows the `srem`/`urem` (a quotient keeps its select: x // 1 is x)."""
    for dtype in ("i32", "u32"):
        signature = {"x_ptr": f"*{dtype}", "y_ptr": f"*{dtype}", "q_ptr": f"*{dtype}",
                     "r_ptr": f"*{dtype}"}  # fmt: skip
        llir = tilec.compile(integer_divide_kernel, signature, {"BLOCK": BLOCK}, backend="nvidia",
                             target="sm_90a").asm["llir"]  # fmt: skip
        rem = re.search(r"(%\S+) = [su]rem i32 %\S+, %", llir)  # by a register: the data's
        assert rem, llir
        assert not re.search(rf"select\s+i1 [^\n]*{re.escape(rem.group(1))}", llir)
        div = re.search(r"(%\S+) = [su]div i32 %\S+, %", llir)
        assert re.search(rf"select\s+i1 [^\n]*{re.escape(div.group(1))}", llir)


@tilec.jit
def divide_by_parameter_kernel(x_ptr, q_ptr, r_ptr, s, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs)
    tl.store(q_ptr + offs, x // s)
    tl.store(r_ptr + offs, x % s)


def test_a_divisor_known_a_multiple_of_16_is_guarded_against_zero_only():
    """A parameter the specialization found a multiple of 16 is never -1: its quotient and
    remainder guard the divisor against 0 alone (one compare; LLVM makes the divisor
    `umax(s, 1)`) and the quotient keeps one select, x // 0 being 0; unspecialized, -1 is
    guarded too, and the quotient has its select for -x (the rotary embedding's `token % S`:
    97 SASS instructions against Triton's 98, sm_90a)."""
    signature = {"x_ptr": "*i32", "q_ptr": "*i32", "r_ptr": "*i32", "s": "i32"}

    def llir(divisibility):
        return tilec.compile(divide_by_parameter_kernel, signature, {"BLOCK": BLOCK},
                             backend="nvidia", target="sm_90a",
                             divisibility=divisibility).asm["llir"]  # fmt: skip

    known = llir(["x_ptr", "q_ptr", "r_ptr", "s"])
    unknown = llir(["x_ptr", "q_ptr", "r_ptr"])
    assert not re.search(r"icmp eq i32 %\S+, -1", known), known
    assert re.search(r"icmp eq i32 %\S+, -1", unknown), unknown
    assert len(re.findall(r"select\s+i1", known)) < len(re.findall(r"select\s+i1", unknown))


@pytest.mark.gpu
@pytest.mark.parametrize("s", [0, 16, -16, 48, -1, 7, 2**31 - 16])
def test_division_by_a_parameter_on_the_gpu(s):
    """x // s and x % s by a parameter, specialized as a multiple of 16 (0, 16, -16, 48, 2**31 -
    16: the divisor guarded against 0 alone) or not (-1, 7), at the int32 ends, against interp."""
    ends = [0, 1, -1, 7, -7, 2**31 - 1, -(2**31), -(2**31) + 1, 100, -100]
    x = np.resize(np.array(ends, dtype=np.int32), BLOCK)
    outs = {b: (np.zeros(BLOCK, np.int32), np.zeros(BLOCK, np.int32)) for b in ("nvidia", "interp")}
    for backend, (q, r) in outs.items():
        divide_by_parameter_kernel[(1,)](x, q, r, s, BLOCK=BLOCK, backend=backend)
    np.testing.assert_array_equal(outs["nvidia"][0], outs["interp"][0])
    np.testing.assert_array_equal(outs["nvidia"][1], outs["interp"][1])


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", [np.int32, np.uint32])
def test_integer_division_by_zero_and_minus_one_on_the_gpu(dtype):
    """x // 0 and x % 0 are 0, x // -1 is -x (wrapping) and x % -1 is 0, on the device as in the
    interpreter (the reference)."""
    x, y = _integer_operands(dtype)
    outs = {b: (np.zeros(BLOCK, dtype), np.zeros(BLOCK, dtype)) for b in ("nvidia", "interp")}
    for backend, (q, r) in outs.items():
        integer_divide_kernel[(1,)](x, y, q, r, BLOCK=BLOCK, backend=backend)
    np.testing.assert_array_equal(outs["nvidia"][0], outs["interp"][0])
    np.testing.assert_array_equal(outs["nvidia"][1], outs["interp"][1])
    zero = y == 0
    assert (outs["nvidia"][0][zero] == 0).all() and (outs["nvidia"][1][zero] == 0).all()
