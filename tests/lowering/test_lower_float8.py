"""`tile.fp_to_fp` lowered to LLVM IR: the integer expansion (`tilec.lowering.float8`) run on
the CPU emulator against the interpreter, bit for bit (all 256 codes of each format decoded;
f16 and bf16 patterns, f32 and f64 values encoded); NVIDIA's `cvt` instructions on sm_90a only
(PTX that ptxas assembles, sm_80 and sm_90a), and AMD code objects for gfx942 and gfx1100.
On a GPU, tests/compat/test_compat_float8_gpu.py runs the same kernels against the interpreter."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest
from cpu_emulator import compile_kernel, launch
from gir_check import needs_ptxas
from mma_emulator import MmaHostTargetInfo
from numerics_check import assert_matches_interpreter

import tilec
import tilec.language as tl
from tilec.ir.parser import parse_module
from tilec.lowering import lower_module
from tilec_interp.dtypes import bf16_to_bits

sys.path.insert(0, str(Path(__file__).parents[1] / "compat"))
import compat_float8_kernels as kernels
import float8_reference as ref

FORMATS = [tl.float8e4nv, tl.float8e5, tl.float8e4b8, tl.float8e5b16, tl.float8e4b15]
DECODE_SIG = {"codes_ptr": "*u8", "f32_ptr": "*fp32", "f16_ptr": "*fp16", "f64_ptr": "*fp64"}
BLOCK = 512
RNG = np.random.default_rng(8)


def _on_both(kernel, signature, constexprs, args, grid=(1,)) -> tuple[list, list]:
    """Run `kernel` on the CPU emulator (lowered for the host from its sm_80 gir, `mma.sync`
    emulated) and on the
    interpreter, each on its own copy of `args`; the two lists of arguments after the runs."""
    emulated = [a.copy() if isinstance(a, np.ndarray) else a for a in args]
    interpreted = [a.copy() if isinstance(a, np.ndarray) else a for a in args]
    compiled = tilec.compile(
        kernel, signature=signature, constexprs=constexprs, backend="nvidia", target="sm_80"
    )
    module = parse_module(compiled.asm["gir"], "float8.gir")
    lowered = lower_module(module, MmaHostTargetInfo(), compiled.metadata["kernel"])
    address = compile_kernel(lowered.llvm_ir, lowered.name)
    launch(address, lowered.params, emulated, grid, lowered.num_warps * 32)
    tilec.compile(kernel, signature=signature, constexprs=constexprs, backend="interp").run(
        grid, interpreted
    )
    return emulated, interpreted


@pytest.mark.parametrize("fmt", FORMATS, ids=str)
def test_every_code_decodes_as_on_the_interpreter(fmt):
    codes = np.arange(256, dtype=np.uint8)
    outs = [np.zeros(256, np.float32), np.zeros(256, np.float16), np.zeros(256, np.float64)]
    emulated, interpreted = _on_both(
        kernels.decode_kernel, DECODE_SIG, {"FMT": fmt, "BLOCK": 256}, [codes, *outs]
    )
    for got, want in zip(emulated[1:], interpreted[1:], strict=True):
        np.testing.assert_array_equal(got.view(f"u{got.itemsize}"), want.view(f"u{want.itemsize}"))


def _encode_on_both(x: np.ndarray, signature: str, fmt) -> tuple[np.ndarray, np.ndarray]:
    codes = np.zeros(x.size, np.uint8)
    sig = {"x_ptr": signature, "codes_ptr": "*u8", "n": "i32"}
    grid = ((x.size + BLOCK - 1) // BLOCK,)
    emulated, interpreted = _on_both(
        kernels.encode_kernel, sig, {"FMT": fmt, "BLOCK": BLOCK}, [x, codes, x.size], grid
    )
    return emulated[1], interpreted[1]


def _sample(name: str) -> np.ndarray:
    """Random f32 bit patterns, values of the format's range, its rounding edges, specials."""
    randoms = RNG.integers(0, 1 << 32, 3000, dtype=np.uint64).astype(np.uint32).view(np.float32)
    scaled = RNG.standard_normal(1000) * ref.LARGEST[name]
    with np.errstate(invalid="ignore"):  # signaling NaNs among the random patterns
        return np.concatenate([randoms, scaled, ref.midpoints(name), ref.special_values()])


@pytest.mark.parametrize("fmt", FORMATS, ids=str)
def test_encoding_is_bit_exact_with_the_interpreter(fmt):
    name = fmt.name
    halves = np.arange(1 << 16, dtype=np.uint16).view(np.float16)[::7]
    got, want = _encode_on_both(halves, "*fp16", fmt)
    np.testing.assert_array_equal(got, want)
    bf16 = bf16_to_bits(_sample(name).astype(np.float32))
    got, want = _encode_on_both(bf16, "*bf16", fmt)
    np.testing.assert_array_equal(got, want)
    x32 = _sample(name).astype(np.float32)
    got, want = _encode_on_both(x32, "*fp32", fmt)
    np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(got, ref.encode(x32, name))
    x64 = np.concatenate([_sample(name), ref.midpoints(name) * (1 + 2.0**-40)])
    got, want = _encode_on_both(x64, "*fp64", fmt)
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize(
    ("src", "dst"), [(tl.float8e4nv, tl.float8e5), (tl.float8e5b16, tl.float8e4b15)]
)
def test_fp8_to_fp8_is_bit_exact_with_the_interpreter(src, dst):
    codes, out = np.arange(256, dtype=np.uint8), np.zeros(256, np.uint8)
    emulated, interpreted = _on_both(
        kernels.recode_kernel, {"codes_ptr": "*u8", "out_ptr": "*u8"},
        {"SRC": src, "DST": dst, "BLOCK": 256}, [codes, out],
    )  # fmt: skip
    np.testing.assert_array_equal(emulated[1], interpreted[1])


def test_fp8_moves_on_the_emulator_match_the_interpreter():
    x = RNG.integers(0, 256, 64, dtype=np.uint8)
    sig = {"x_ptr": "*fp8e5", "y_ptr": "*fp8e5", "n": "i32"}
    emulated, interpreted = _on_both(
        kernels.moves_kernel, sig, {"BLOCK": 64}, [x, np.zeros(64, np.uint8), 50]
    )
    np.testing.assert_array_equal(emulated[1], interpreted[1])


def test_fp8_dot_on_the_emulator_matches_the_interpreter():
    a = RNG.choice(np.arange(0x00, 0x60), (16, 16)).astype(np.uint8)
    b = RNG.choice(np.arange(0x80, 0xE0), (16, 16)).astype(np.uint8)
    c = np.zeros((16, 16), np.float32)
    constexprs = {"M": 16, "N": 16, "K": 16, "A_FMT": tl.float8e4nv, "B_FMT": tl.float8e5}
    emulated, interpreted = _on_both(
        kernels.dot_kernel,
        {"a_ptr": "*u8", "b_ptr": "*u8", "c_ptr": "*fp32"},
        constexprs,
        [a, b, c],
    )
    # 16 products of 8-bit floats sum exactly in f64: both sides round that sum once, on every
    # host (the emulated mma and the interpreter sum in f64, not with NumPy's f32 BLAS)
    exact = ref.values("float8e4nv")[a] @ ref.values("float8e5")[b]
    assert_matches_interpreter(emulated[2], interpreted[2], exact)
    np.testing.assert_array_equal(emulated[2], exact.astype(np.float32))


CONVERT_SIG = {"x_ptr": "*fp32", "codes_ptr": "*u8", "n": "i32"}


@pytest.mark.parametrize("target", ["sm_80", "sm_90a"])
@pytest.mark.parametrize("fmt", FORMATS, ids=str)
def test_ptx_assembles_and_uses_cvt_only_where_the_arch_has_it(target, fmt):
    encode = tilec.compile(
        kernels.encode_kernel, signature=CONVERT_SIG, constexprs={"FMT": fmt, "BLOCK": 256},
        backend="nvidia", target=target,
    )  # fmt: skip
    decode = tilec.compile(
        kernels.decode_kernel, signature=DECODE_SIG, constexprs={"FMT": fmt, "BLOCK": 256},
        backend="nvidia", target=target,
    )  # fmt: skip
    hardware = target == "sm_90a" and fmt in (tl.float8e4nv, tl.float8e5)
    kind = "e4m3" if fmt == tl.float8e4nv else "e5m2"
    assert (f"cvt.rn.satfinite.{kind}x2.f32" in encode.asm["ptx"]) == hardware
    assert (f"cvt.rn.f16x2.{kind}x2" in decode.asm["ptx"]) == hardware
    needs_ptxas()
    assert encode.asm["cubin"] and decode.asm["cubin"]


@pytest.mark.parametrize("target", ["gfx942", "gfx1100"])
@pytest.mark.parametrize("fmt", FORMATS, ids=str)
def test_amd_code_objects_are_built(target, fmt):
    for kernel, signature in (
        (kernels.encode_kernel, CONVERT_SIG),
        (kernels.decode_kernel, DECODE_SIG),
    ):
        compiled = tilec.compile(
            kernel, signature=signature, constexprs={"FMT": fmt, "BLOCK": 256}, backend="amd",
            target=target,
        )  # fmt: skip
        if compiled.asm.get("hsaco") is None:
            pytest.skip("no ld.lld: the amdgcn assembly was built, not linked")
        assert compiled.asm["hsaco"][:4] == b"\x7fELF"


@pytest.mark.parametrize(
    ("backend", "target", "instruction"),
    [
        ("nvidia", "sm_90a", "wgmma.mma_async.sync.aligned.m64n64k32.f32.e4m3.e5m2"),
        ("nvidia", "sm_89", "mma.sync.aligned.m16n8k32.row.col.f32.e4m3.e5m2.f32"),
        ("nvidia", "sm_80", "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32"),
        ("amd", "gfx942", "v_mfma_f32_32x32x8_f16"),
        ("amd", "gfx1100", "v_wmma_f32_16x16x16_f16"),
    ],
)
def test_fp8_dots_use_the_tensor_core_instructions(backend, target, instruction):
    """e4m3 x e5m2 on NVIDIA's float8 forms where the arch has them (wgmma k32 on sm_90a,
    mma.sync k32 on sm_89 and later), else on the f16 instructions (sm_80, AMD)."""
    constexprs = {"M": 64, "N": 64, "K": 64, "A_FMT": tl.float8e4nv, "B_FMT": tl.float8e5}
    compiled = tilec.compile(
        kernels.dot_kernel, signature={"a_ptr": "*u8", "b_ptr": "*u8", "c_ptr": "*fp32"},
        constexprs=constexprs, backend=backend, target=target,
    )  # fmt: skip
    assert instruction in (compiled.asm.get("ptx") or compiled.asm["amdgcn"])
