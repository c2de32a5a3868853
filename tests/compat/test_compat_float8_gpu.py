"""The float8 kernels of test_compat_float8.py on a GPU backend (nvidia; amd with
`TILEC_TEST_BACKEND=amd`) against the interpreter: decoding every code, encoding f16 (every
pattern), bf16, f32 and f64 values, fp8 pointers, fp8 dots. On sm_90 and later e4m3/e5m2 use
the `cvt` instructions, elsewhere the integer expansion; either must give the interpreter's
codes (a NaN may come back as another NaN code of the format)."""

import compat_float8_kernels as kernels
import float8_reference as ref
import numpy as np
import pytest
from compat_helpers import GPU_BACKEND as BACKEND

import tilec
import tilec.language as tl

FORMATS = [getattr(tl, name) for name in ref.SPECS]
BLOCK = 1024

pytestmark = [pytest.mark.gpu, pytest.mark.usefixtures("gpu_backend")]


def _on_both(kernel, signature, args, grid=(1,), **constexprs) -> tuple[list, list]:
    device = [a.copy() if isinstance(a, np.ndarray) else a for a in args]
    interpreted = [a.copy() if isinstance(a, np.ndarray) else a for a in args]
    for backend, values in ((BACKEND, device), ("interp", interpreted)):
        compiled = tilec.compile(
            kernel, signature=signature, constexprs=constexprs, backend=backend
        )
        compiled.run(grid, values)
    return device, interpreted


def _same_codes(got: np.ndarray, want: np.ndarray, name: str) -> None:
    """Equal codes, except that a NaN may be any NaN code of the format."""
    table = ref.values(name)
    both_nan = np.isnan(table[got]) & np.isnan(table[want])
    np.testing.assert_array_equal(np.where(both_nan, 0, got), np.where(both_nan, 0, want))


@pytest.mark.parametrize("fmt", FORMATS, ids=str)
def test_decoding_matches_the_interpreter(fmt):
    codes = np.arange(256, dtype=np.uint8)
    outs = [np.zeros(256, np.float32), np.zeros(256, np.float16), np.zeros(256, np.float64)]
    sig = {"codes_ptr": "*u8", "f32_ptr": "*fp32", "f16_ptr": "*fp16", "f64_ptr": "*fp64"}
    device, interpreted = _on_both(kernels.decode_kernel, sig, [codes, *outs], FMT=fmt, BLOCK=256)
    for got, want in zip(device[1:], interpreted[1:], strict=True):
        nan = np.isnan(want)
        assert np.array_equal(np.isnan(got), nan)
        np.testing.assert_array_equal(
            got[~nan].view(f"u{got.itemsize}"), want[~nan].view(f"u{want.itemsize}")
        )


@pytest.mark.parametrize("fmt", FORMATS, ids=str)
@pytest.mark.parametrize("source", ["fp16", "bf16", "fp32", "fp64"])
def test_encoding_matches_the_interpreter(rng, fmt, source):
    name = fmt.name
    if source in ("fp16", "bf16"):
        x = np.arange(1 << 16, dtype=np.uint16)
        x = x.view(np.float16) if source == "fp16" else x
    else:
        with np.errstate(invalid="ignore"):
            randoms = rng.integers(0, 1 << 32, 100_000, dtype=np.uint64).astype(np.uint32)
            x = np.concatenate([
                randoms.view(np.float32), rng.standard_normal(20_000) * ref.LARGEST[name],
                ref.midpoints(name), ref.midpoints(name) * (1 + 2.0**-40), ref.special_values(),
            ]).astype(np.float32 if source == "fp32" else np.float64)  # fmt: skip
    codes = np.zeros(x.size, np.uint8)
    sig = {"x_ptr": f"*{source}", "codes_ptr": "*u8", "n": "i32"}
    grid = ((x.size + BLOCK - 1) // BLOCK,)
    device, interpreted = _on_both(
        kernels.encode_kernel, sig, [x, codes, x.size], grid, FMT=fmt, BLOCK=BLOCK
    )
    _same_codes(device[1], interpreted[1], name)


def test_fp8_pointers_match_the_interpreter(rng):
    n = 5000
    x = rng.integers(0, 256, n, dtype=np.uint8)
    scale, y = np.array([0.75], np.float32), np.zeros(n, np.uint8)
    sig = {"x_ptr": "*fp8e4nv", "scale_ptr": "*fp32", "y_ptr": "*fp8e5", "n": "i32"}
    grid = ((n + BLOCK - 1) // BLOCK,)
    device, interpreted = _on_both(kernels.scale_kernel, sig, [x, scale, y, n], grid, BLOCK=BLOCK)
    _same_codes(device[2], interpreted[2], "float8e5")


@pytest.mark.parametrize(
    ("a_fmt", "b_fmt"), [(tl.float8e4nv, tl.float8e4nv), (tl.float8e5, tl.float8e4b8)]
)
def test_fp8_dot_matches_the_interpreter(rng, a_fmt, b_fmt):
    m = n = k = 64
    a = rng.choice(np.arange(0x00, 0x60), (m, k)).astype(np.uint8)
    b = rng.choice(np.arange(0x80, 0xE0), (k, n)).astype(np.uint8)
    c = np.zeros((m, n), np.float32)
    sig = {"a_ptr": "*u8", "b_ptr": "*u8", "c_ptr": "*fp32"}
    device, interpreted = _on_both(
        kernels.dot_kernel, sig, [a, b, c], M=m, N=n, K=k, A_FMT=a_fmt, B_FMT=b_fmt
    )
    # e4m3 x e4m3 runs on Hopper's float8 wgmma (sm_90a), whose accumulation keeps about 14 bits
    # of the sum, as Triton's does (tests/nvidia/test_nvidia_fp8_wgmma.py); elsewhere exact in f32
    np.testing.assert_allclose(device[2], interpreted[2], rtol=5e-3, atol=1e-5)


@pytest.mark.parametrize("signature", ["fp8e4nv", "fp8e5", "fp8e4b15"])
def test_scalar_fp8_parameters_match_the_interpreter(signature):
    out = np.zeros(3, np.float32)
    sig = {"s": signature, "out_ptr": "*fp32"}
    device, interpreted = _on_both(kernels.scalar_kernel, sig, [1.3, out])
    np.testing.assert_array_equal(device[1], interpreted[1])


def test_fp8_moves_match_the_interpreter(rng):
    x = rng.integers(0, 256, 64, dtype=np.uint8)
    sig = {"x_ptr": "*fp8e5", "y_ptr": "*fp8e5", "n": "i32"}
    device, interpreted = _on_both(
        kernels.moves_kernel, sig, [x, np.zeros(64, np.uint8), 50], BLOCK=64
    )
    np.testing.assert_array_equal(device[1], interpreted[1])
