"""int8 `tl.dot` on NVIDIA's mma.sync is Triton 3.6's `m16n8k32.row.col.satfinite.s32.s8.s8.s32`
(Triton's own test_dot reads this spelling): each instruction's `C + A B` is clamped to the i32
range, so an accumulator at the i32 limits stays there instead of wrapping. Run lowered for
sm_80 on the CPU emulator (`mma_emulator`, which clamps as the instruction does);
tests/nvidia/test_nvidia_int8_satfinite.py runs the same kernel on the GPU."""

from __future__ import annotations

import numpy as np
from cpu_emulator import compile_kernel, launch
from mma_emulator import MmaHostTargetInfo

import tilec
import tilec.language as tl
from tilec.ir.parser import parse_module
from tilec.lowering import lower_module

SATFINITE = "mma.sync.aligned.m16n8k32.row.col.satfinite.s32.s8.s8.s32"
I32 = np.iinfo(np.int32)


@tilec.jit
def accumulate_kernel(a_ptr, b_ptr, c_ptr, N: tl.constexpr):
    rows = tl.arange(0, N)[:, None]
    cols = tl.arange(0, N)[None, :]
    acc = tl.load(c_ptr + rows * N + cols)
    acc = tl.dot(tl.load(a_ptr + rows * N + cols), tl.load(b_ptr + rows * N + cols), acc)
    tl.store(c_ptr + rows * N + cols, acc)


SIGNATURE = {"a_ptr": "*i8", "b_ptr": "*i8", "c_ptr": "*i32"}
N = 64


def saturating_case(rng) -> tuple[list, np.ndarray]:
    """Rows whose sums only grow (A >= 0, B > 0) from near the top of the i32 range, rows whose
    sums only fall from near the bottom (B < 0 there): clamping at each K step or once gives the
    same result, the order of the steps aside."""
    a = rng.integers(0, 128, (N, N)).astype(np.int8)
    b = rng.integers(1, 128, (N, N)).astype(np.int8)
    b[:, N // 2 :] = -b[:, N // 2 :]
    c = rng.integers(-(2**20), 2**20, (N, N)).astype(np.int32)
    c[: N // 2] += I32.max - 2**20  # top rows: near the top
    c[N // 2 :, : N // 2] += I32.max - 2**20
    c[: N // 2, N // 2 :] -= I32.max - 2**20  # columns of negative B: near the bottom
    c[N // 2 :, N // 2 :] -= I32.max - 2**20
    exact = c.astype(np.int64) + a.astype(np.int64) @ b.astype(np.int64)
    assert (exact > I32.max).any() and (exact < I32.min).any()
    return [a, b, c], np.clip(exact, I32.min, I32.max).astype(np.int32)


def compiled(backend: str, target: str | None = None):
    options = {} if target is None else {"target": target}
    return tilec.compile(accumulate_kernel, SIGNATURE, {"N": N}, backend=backend, **options)


def test_int8_mma_saturates_as_tritons_satfinite():
    args, expected = saturating_case(np.random.default_rng(5))
    kernel = compiled("nvidia", "sm_80")
    assert SATFINITE in kernel.asm["ptx"]
    module = parse_module(kernel.asm["gir"], "accumulate.gir")
    lowered = lower_module(module, MmaHostTargetInfo(), kernel.metadata["kernel"])
    launch(compile_kernel(lowered.llvm_ir, lowered.name), lowered.params, args, (1,), 128)
    np.testing.assert_array_equal(args[2], expected)
