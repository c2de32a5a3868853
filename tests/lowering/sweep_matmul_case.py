"""The sweep's matmul (benchmarks/sweep_kernels.py, the source tilec and Triton both compile in
benchmarks/sweep.py) for tests: the kernel with tilec's `jit`, its specialization for one shape
and config as a launch on contiguous arrays gives it, inputs and the expected C in float64.
Used by test_scratch_swizzle.py (the CPU emulator) and tests/nvidia/
test_nvidia_matmul_epilogue.py (the GPU)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
from test_lower_mma import _bits, _floats

import tilec
import tilec.language as tl

SWEEP_KERNELS = Path(__file__).resolve().parents[2] / "benchmarks" / "sweep_kernels.py"
STRIDES = [f"stride_{t}{d}" for t, dims in (("a", "zmk"), ("b", "zkn"), ("c", "zmn")) for d in dims]


def sweep_matmul():
    """benchmarks/sweep_kernels.py's sweep_matmul with tilec's `jit` and `tl`, as the sweep
    executes it."""
    namespace = {"jit": tilec.jit, "tl": tl, "__name__": "sweep_kernels_tilec"}
    exec(compile(SWEEP_KERNELS.read_text(), str(SWEEP_KERNELS), "exec"), namespace)
    return namespace["sweep_matmul"]


def compile_case(sizes, operand, out, blocks, warps, stages, bias, backend="nvidia", **options):
    """`sweep_matmul` compiled for one (M, N, K), A and B of `operand`, C and the bias of `out`
    ("fp16", "bf16", "fp32"), (BLOCK_M, BLOCK_N, BLOCK_K), and the bias + ReLU epilogue or not;
    integers equal to 1 and divisible by 16 specialized as a launch would."""
    m, n, k = sizes
    block_m, block_n, block_k = blocks
    strides = strides_of(sizes)
    signature = {"a_ptr": f"*{operand}", "b_ptr": f"*{operand}", "c_ptr": f"*{out}",
                 "bias_ptr": f"*{out}", **dict.fromkeys(("M", "N", "K", *STRIDES), "i32")}  # fmt: skip
    constexprs = dict(BLOCK_M=block_m, BLOCK_N=block_n, BLOCK_K=block_k, GROUP_M=8,
                      BIAS_RELU=bias)  # fmt: skip
    integers = {"M": m, "N": n, "K": k, **strides}
    divisible = ["a_ptr", "b_ptr", "c_ptr", "bias_ptr"]
    divisible += [name for name, value in integers.items() if value % 16 == 0]
    unit = [name for name, value in strides.items() if value == 1]
    return tilec.compile(sweep_matmul(), signature, constexprs, backend=backend,
                         num_warps=warps, num_stages=stages, divisibility=divisible,
                         equal_to_1=unit, **options)  # fmt: skip


def strides_of(sizes) -> dict[str, int]:
    m, n, k = sizes
    return dict(zip(STRIDES, (m * k, k, 1, k * n, n, 1, m * n, n, 1), strict=True))


def case_arrays(rng, sizes, operand, out, blocks):
    """(the launch's arguments, its grid, a function giving the expected C and the C written,
    both float64 (M, N)) for a bias + ReLU or plain launch: A, B random in `operand`, the bias
    in `out`, C filled with zeros."""
    m, n, k = sizes
    a = _bits(rng.standard_normal((m, k)), operand)
    b = _bits(rng.standard_normal((k, n)), operand)
    bias = rng.standard_normal(n).astype(np.float32)
    if out != "fp32":
        bias = _bits(bias, out)
    c = np.zeros(m * n, np.float32 if out == "fp32" else np.uint16 if out == "bf16" else np.float16)
    args = [a.reshape(-1), b.reshape(-1), c, bias, m, n, k, *strides_of(sizes).values()]
    grid = (-(-m // blocks[0]) * -(-n // blocks[1]), 1)

    def results(with_bias: bool):
        expected = _floats(a, operand).astype(np.float64) @ _floats(b, operand).astype(np.float64)
        if with_bias:
            bias64 = bias if out == "fp32" else _floats(bias, out)
            expected = np.maximum(expected + bias64.astype(np.float64), 0.0)
        got = c.astype(np.float64) if out == "fp32" else _floats(c, out).astype(np.float64)
        return expected, got.reshape(m, n)

    return args, grid, results
