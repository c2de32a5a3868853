"""`tl.inline_asm_elementwise` on NVIDIA: the kernels of Triton 3.6's `test_inline_asm*` tests
(a funnel shift, packed u8 registers, several results, pointer operands), compiled for sm_80
and sm_90a and assembled by ptxas without a GPU; on the GPU each is compared with NumPy."""

from __future__ import annotations

import re

import numpy as np
import pytest

import tilec
import tilec.language as tl
from tilec.lowering import LoweringError
from tilec_nvidia.codegen import find_ptxas


@tilec.jit
def shift_kernel(X, Y, Z, n: tl.constexpr, BLOCK: tl.constexpr):
    x = tl.load(X + tl.arange(0, BLOCK))
    y = tl.load(Y + tl.arange(0, BLOCK))
    z = tl.inline_asm_elementwise("shf.l.wrap.b32 $0, $1, $2, $3;", "=r,r, r, r", [x, y, n],
                                  dtype=tl.int32, is_pure=True, pack=1)  # fmt: skip
    tl.store(Z + tl.arange(0, BLOCK), z)


@tilec.jit
def packed_kernel(X, Y, BLOCK: tl.constexpr):
    x = tl.load(X + tl.arange(0, BLOCK))
    # four u8 a register: shift each byte left by 3, keeping it in its byte
    y = tl.inline_asm_elementwise("and.b32 $0, $1, 0x1F1F1F1F; \n shl.b32 $0, $0, 3;", "=r,r",
                                  [x], dtype=tl.int8, is_pure=True, pack=4)  # fmt: skip
    tl.store(Y + tl.arange(0, BLOCK), y)


@tilec.jit
def outputs_kernel(X, Y, Z, W, BLOCK: tl.constexpr):
    x = tl.load(X + tl.arange(0, BLOCK))
    y = tl.load(Y + tl.arange(0, BLOCK))
    (z, w) = tl.inline_asm_elementwise(
        asm="""
        {
            .reg .b8 tmp<4>;
            mov.b32 {tmp0, tmp1, tmp2, tmp3}, $8;
            cvt.u32.u8 $0, tmp0;
            cvt.u32.u8 $1, tmp1;
            cvt.u32.u8 $2, tmp2;
            cvt.u32.u8 $3, tmp3;
        }
        rcp.approx.ftz.f32 $4, $9;
        rcp.approx.ftz.f32 $5, $10;
        rcp.approx.ftz.f32 $6, $11;
        rcp.approx.ftz.f32 $7, $12;
        """,
        constraints="=r,=r,=r,=r,=r,=r,=r,=r,r,r,r,r,r",
        args=[x, y],
        dtype=(tl.int32, tl.float32),
        is_pure=True,
        pack=4,
    )
    tl.store(Z + tl.arange(0, BLOCK), z)
    tl.store(W + tl.arange(0, BLOCK), w)


@tilec.jit
def pointer_kernel(X, Y, BLOCK: tl.constexpr):
    # the asm loads through its pointer operand and adds 1: it is not pure
    y = tl.inline_asm_elementwise("ld.global.b32 $0, [$1];\n\tadd.s32 $0, $0, 1;", "=r,l",
                                  [X + tl.arange(0, BLOCK)], dtype=tl.int32, is_pure=False,
                                  pack=1)  # fmt: skip
    tl.store(Y + tl.arange(0, BLOCK), y)


@tilec.jit
def swap_kernel(A, B, C, D, BLOCK: tl.constexpr):
    r = tl.arange(0, BLOCK)
    a, b = tl.load(A + r), tl.load(B + r)
    # two f16 a register (pack=2), two results: C gets b's pair, D gets a's
    c, d = tl.inline_asm_elementwise("mov.b32 $0, $3; mov.b32 $1, $2;", "=r,=r,r,r", [a, b],
                                     dtype=(a.dtype, a.dtype), is_pure=True, pack=2)  # fmt: skip
    tl.store(C + r, c)
    tl.store(D + r, d)


KERNELS = {
    "shift": (shift_kernel, {"X": "*u32", "Y": "*u32", "Z": "*i32"}, {"n": 17, "BLOCK": 128},
              ["shf.l.wrap.b32"]),
    "packed": (packed_kernel, {"X": "*u8", "Y": "*i8"}, {"BLOCK": 512},
               ["0x1F1F1F1F;", "shl.b32"]),
    "outputs": (outputs_kernel, {"X": "*u8", "Y": "*fp32", "Z": "*i32", "W": "*fp32"},
                {"BLOCK": 512}, ["mov.b32 {tmp0, tmp1, tmp2, tmp3}", "rcp.approx.ftz.f32"]),
    "swap": (swap_kernel, {"A": "*fp16", "B": "*fp16", "C": "*fp16", "D": "*fp16"},
             {"BLOCK": 256}, ["; mov.b32 %r"]),
    "pointer": (pointer_kernel, {"X": "*i32", "Y": "*i32"}, {"BLOCK": 256},
                ["ld.global.b32", "add.s32"]),
}  # fmt: skip


@pytest.mark.parametrize("target", ["sm_80", "sm_90a"])
@pytest.mark.parametrize("name", sorted(KERNELS))
def test_inline_asm_is_in_the_ptx(name, target):
    kernel, signature, constexprs, texts = KERNELS[name]
    compiled = tilec.compile(kernel, signature, constexprs, backend="nvidia", target=target)
    ptx = compiled.asm["ptx"]
    for text in texts:
        assert text in ptx
    if find_ptxas() is not None:
        assert compiled.asm.get("cubin"), "ptxas gave no cubin"


def test_packed_registers_hold_four_u8():
    """With pack=4, each asm call takes the four u8 of a thread in one `r` register (built with
    prmt, as Triton does) and gives four i8 back in one."""
    kernel, signature, constexprs, _ = KERNELS["packed"]
    compiled = tilec.compile(kernel, signature, constexprs, backend="nvidia", target="sm_90a")
    calls = len(re.findall(r'asm\s+"and.b32', compiled.asm["llir"]))
    assert calls == 512 // (32 * 4) // 4  # 512 elements, 4 warps, 4 a call
    assert re.search(r"call <4 x i8> asm\s+\"and.b32 \$0, \$1, 0x1F1F1F1F;", compiled.asm["llir"])


@tilec.jit
def constraint_kernel(X, Y, C: tl.constexpr):
    x = tl.load(X + tl.arange(0, 128))
    y = tl.inline_asm_elementwise("mov.b32 $0, $1;", C, [x], dtype=tl.int32, is_pure=True,
                                  pack=1)  # fmt: skip
    tl.store(Y + tl.arange(0, 128), y)


@pytest.mark.parametrize(
    ("constraints", "message"),
    [
        ("=v,v", r"constraint '=v' is not one of this target's \(sm_90a: b, c, h"),
        ("=r", "name 1 outputs and 0 inputs; with pack=1 this call has 1 outputs and 1 inputs"),
        ("=r,r,r", "name 1 outputs and 2 inputs"),
    ],
)
def test_constraints_llvm_would_refuse_are_located_errors(constraints, message):
    """A register class NVPTX lacks makes LLVM abort the process: refused before LLVM sees it."""
    signature = {"X": "*i32", "Y": "*i32"}
    with pytest.raises(LoweringError, match=message) as error:
        tilec.compile(constraint_kernel, signature, {"C": constraints}, backend="nvidia",
                      target="sm_90a")  # fmt: skip
    assert "test_nvidia_inline_asm.py" in str(error.value)


# On the GPU ----------------------------------------------------------------------------------


def _needs_gpu():
    from tilec.plugin.manager import load_backends

    availability = load_backends()["nvidia"].is_available()
    if not availability:
        pytest.skip(f"needs an NVIDIA GPU ({availability.reason})")


@pytest.mark.gpu
def test_shift_on_the_gpu(rng):
    _needs_gpu()
    x = rng.integers(0, 2**32, 128, dtype=np.uint32)
    y = rng.integers(0, 2**32, 128, dtype=np.uint32)
    z = np.zeros(128, np.int32)
    shift_kernel[(1,)](x, y, z, n=17, BLOCK=128, backend="nvidia")
    expected = ((y.astype(np.uint64) << 17) | (x.astype(np.uint64) >> 15)) & 0xFFFFFFFF
    np.testing.assert_array_equal(z.view(np.uint32), expected.astype(np.uint32))


@pytest.mark.gpu
def test_packed_on_the_gpu(rng):
    _needs_gpu()
    x = rng.integers(0, 256, 512, dtype=np.uint8)
    y = np.zeros(512, np.int8)
    packed_kernel[(1,)](x, y, BLOCK=512, backend="nvidia")
    np.testing.assert_array_equal(y.view(np.uint8), (x << 3).astype(np.uint8))


@pytest.mark.gpu
def test_outputs_on_the_gpu(rng):
    _needs_gpu()
    x = rng.integers(0, 256, 512, dtype=np.uint8)
    y = rng.uniform(0.5, 4.0, 512).astype(np.float32)
    z, w = np.zeros(512, np.int32), np.zeros(512, np.float32)
    outputs_kernel[(1,)](x, y, z, w, BLOCK=512, backend="nvidia")
    np.testing.assert_array_equal(z, x.astype(np.int32))
    np.testing.assert_allclose(w, 1 / y, rtol=1e-6)


@pytest.mark.gpu
def test_pointer_operands_on_the_gpu(rng):
    _needs_gpu()
    x = rng.integers(-1000, 1000, 256, dtype=np.int32)
    y = np.zeros(256, np.int32)
    pointer_kernel[(1,)](x, y, BLOCK=256, backend="nvidia")
    np.testing.assert_array_equal(y, x + 1)


@pytest.mark.gpu
def test_packed_pairs_and_two_results_on_the_gpu(rng):
    _needs_gpu()
    a, b = rng.standard_normal((2, 256)).astype(np.float16)
    c, d = np.zeros(256, np.float16), np.zeros(256, np.float16)
    swap_kernel[(1,)](a, b, c, d, BLOCK=256, backend="nvidia")
    np.testing.assert_array_equal(c, b)
    np.testing.assert_array_equal(d, a)
