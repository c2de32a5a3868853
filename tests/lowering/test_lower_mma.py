"""`tile.dot` on tensor cores: kernels compiled by the nvidia backend for sm_80 (so their gir has
`#gpu.mma` / `#gpu.dot_op` layouts), checked in PTX, assembled by ptxas for sm_80 and sm_90a,
and run on the CPU emulator with emulated `ldmatrix` / `mma.sync` (`mma_emulator`) against
NumPy: every index of the lowering (fragments, swizzle, ldmatrix addresses) is exercised."""

from __future__ import annotations

import numpy as np
import pytest
from cpu_emulator import compile_kernel, launch
from gir_check import KINDS, kernel_name, module, needs_ptxas, runner
from mma_emulator import MmaHostTargetInfo

import tilec
import tilec.language as tl
from tilec.ir.parser import parse_module
from tilec.lowering import lower_module
from tilec_nvidia.codegen import ptx_to_cubin

RNG = np.random.default_rng(7)


@tilec.jit
def matmul_kernel(a_ptr, b_ptr, c_ptr, M, N, K, stride_am, stride_ak, stride_bk, stride_bn,
                  BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):  # fmt: skip
    offs_m = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = tl.program_id(1) * BLOCK_N + tl.arange(0, BLOCK_N)
    offs_k = tl.arange(0, BLOCK_K)
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k in range(0, K, BLOCK_K):
        rk = k + offs_k
        a_mask = (offs_m[:, None] < M) & (rk[None, :] < K)
        b_mask = (rk[:, None] < K) & (offs_n[None, :] < N)
        a = tl.load(a_ptr + offs_m[:, None] * stride_am + rk[None, :] * stride_ak, mask=a_mask)
        b = tl.load(b_ptr + rk[:, None] * stride_bk + offs_n[None, :] * stride_bn, mask=b_mask)
        acc = tl.dot(a, b, acc)
    c_mask = (offs_m[:, None] < M) & (offs_n[None, :] < N)
    tl.store(c_ptr + offs_m[:, None] * N + offs_n[None, :], acc, mask=c_mask)


SIGNATURE = {"a_ptr": "*fp16", "b_ptr": "*fp16", "c_ptr": "*fp32", "M": "i32", "N": "i32",
             "K": "i32", "stride_am": "i32", "stride_ak": "i32", "stride_bk": "i32",
             "stride_bn": "i32"}  # fmt: skip


def compiled(
    dtype: str, blocks: tuple[int, int, int], num_warps: int, target: str | None = "sm_80"
):
    signature = {**SIGNATURE, "a_ptr": f"*{dtype}", "b_ptr": f"*{dtype}"}
    block_m, block_n, block_k = blocks
    return tilec.compile(
        matmul_kernel, signature, dict(BLOCK_M=block_m, BLOCK_N=block_n, BLOCK_K=block_k),
        backend="nvidia", target=target, num_warps=num_warps,
    )  # fmt: skip


def test_sm80_matmul_ptx_has_mma_sync_and_ldmatrix():
    kernel = compiled("fp16", (64, 64, 32), 4)
    assert (
        "#gpu.mma<{version = 2, warpsPerCTA = [2, 2], instrShape = [16, 8]}>" in kernel.asm["gir"]
    )
    ptx = kernel.asm["ptx"]
    assert ptx.count("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32") == 16
    assert ptx.count("ldmatrix.sync.aligned.m8n8.x4.shared.b16") == 4
    assert ptx.count("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16") == 4


@pytest.mark.parametrize("target", ["sm_80", "sm_90a"])
@pytest.mark.parametrize("dtype", ["fp16", "bf16"])
def test_mma_ptx_assembles(target: str, dtype: str):
    needs_ptxas()
    ptx = compiled(dtype, (128, 128, 32), 8, target).asm["ptx"]
    if target == "sm_90a":  # wgmma where a warpgroup fits (test_lower_wgmma), mma.sync where not
        assert "wgmma.mma_async.sync.aligned.m64n128k16" in ptx
        ptx = compiled(dtype, (32, 128, 32), 8, target).asm["ptx"]
    assert "mma.sync.aligned.m16n8k16.row.col.f32" in ptx and "ldmatrix" in ptx
    assert ptx_to_cubin(ptx, target)


def test_targets_without_mma_keep_the_fma_dot():
    kernel = compiled("fp16", (64, 64, 32), 4, "sm_75")
    assert "#gpu.mma" not in kernel.asm["gir"]
    assert "mma.sync" not in kernel.asm["ptx"] and "fma.rn.f32" in kernel.asm["ptx"]


@tilec.jit
def dot_kernel(a_ptr, b_ptr, c_ptr, M: tl.constexpr, N: tl.constexpr, K: tl.constexpr):
    rm, rn, rk = tl.arange(0, M), tl.arange(0, N), tl.arange(0, K)
    a = tl.load(a_ptr + rm[:, None] * K + rk[None, :])
    b = tl.load(b_ptr + rk[:, None] * N + rn[None, :])
    c_ptrs = c_ptr + rm[:, None] * N + rn[None, :]
    tl.store(c_ptrs, tl.dot(a, b, tl.load(c_ptrs)))


@pytest.mark.parametrize(
    ("a", "c", "sizes"),
    [("fp64", "fp64", (32, 32, 16)), ("fp16", "fp16", (32, 32, 16)), ("fp16", "fp32", (8, 32, 16)),
     ("fp16", "fp32", (32, 32, 8)), ("i8", "i32", (32, 32, 16)), ("i16", "i32", (32, 32, 32))],
)  # fmt: skip
def test_dots_without_an_instruction_keep_the_fma_path(a: str, c: str, sizes):
    m, n, k = sizes
    signature = {"a_ptr": f"*{a}", "b_ptr": f"*{a}", "c_ptr": f"*{c}"}
    kernel = tilec.compile(dot_kernel, signature, dict(M=m, N=n, K=k), backend="nvidia",
                           target="sm_90a")  # fmt: skip
    assert "#gpu.mma" not in kernel.asm["gir"] and "mma.sync" not in kernel.asm["ptx"]


def _bits(values: np.ndarray, dtype: str) -> np.ndarray:
    if dtype == "fp16":
        return values.astype(np.float16)
    return (values.astype(np.float32).view(np.uint32) >> 16).astype(np.uint16)


def _floats(stored: np.ndarray, dtype: str) -> np.ndarray:
    if dtype == "fp16":
        return stored.astype(np.float32)
    return (stored.astype(np.uint32) << 16).view(np.float32)


CASES = [  # dtype, (BLOCK_M, BLOCK_N, BLOCK_K), num_warps, (M, N, K), A stored K-major
    ("fp16", (64, 64, 32), 4, (100, 72, 80), False),
    ("bf16", (32, 64, 16), 8, (40, 64, 48), False),
    ("fp16", (16, 16, 16), 4, (16, 24, 40), False),
    ("fp16", (64, 32, 32), 4, (64, 32, 64), True),
]


@pytest.mark.parametrize(("dtype", "blocks", "num_warps", "sizes", "a_k_major"), CASES)
def test_mma_matmul_on_the_cpu_emulator(dtype, blocks, num_warps, sizes, a_k_major):
    kernel = compiled(dtype, blocks, num_warps)
    module = parse_module(kernel.asm["gir"], "matmul.gir")
    lowered = lower_module(module, MmaHostTargetInfo(), kernel.metadata["kernel"])
    address = compile_kernel(lowered.llvm_ir, lowered.name)
    m, n, k = sizes
    a = _bits(RNG.standard_normal((m, k)), dtype)
    b = _bits(RNG.standard_normal((k, n)), dtype)
    strides_a = (1, m) if a_k_major else (k, 1)
    a_memory = np.ascontiguousarray(a.T).reshape(-1) if a_k_major else a.reshape(-1)
    c = np.full(m * n, np.nan, np.float32)
    grid = (-(-m // blocks[0]), -(-n // blocks[1]))
    args = [a_memory, b.reshape(-1), c, m, n, k, *strides_a, n, 1]
    launch(address, lowered.params, args, grid, lowered.num_warps * 32)
    expected = _floats(a, dtype).astype(np.float64) @ _floats(b, dtype)
    np.testing.assert_allclose(c.reshape(m, n), expected, rtol=1e-5, atol=1e-4)


def run_mma_on_cpu(name: str, args: list, grid: tuple[int, ...] = (1,)) -> None:
    """`gir_check.run_on_cpu` with the emulated tensor-core instructions."""
    mod = module(name)
    lowered = lower_module(mod, MmaHostTargetInfo(), kernel_name(mod))
    address = compile_kernel(lowered.llvm_ir, lowered.name)
    launch(address, lowered.params, args, grid, lowered.num_warps * lowered.threads_per_warp)


def mma_runner(kind: str):
    return run_mma_on_cpu if kind == "cpu" else runner(kind)


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize(
    ("name", "dtype"), [("dot-mma-f16.gir", "fp16"), ("dot-mma-bf16.gir", "bf16")]
)
def test_gir_mma_dot(kind: str, name: str, dtype: str):
    """The gir files run (emulated or on the GPU) against NumPy: the interpreter runs tir, and
    these hold `gpu.convert_layout`s."""
    a, b = (_bits(RNG.standard_normal(2048), dtype) for _ in range(2))
    c = RNG.standard_normal(64 * 64).astype(np.float32)
    expected = _floats(a, dtype).reshape(64, 32).astype(np.float64) @ _floats(b, dtype).reshape(
        32, 64
    )
    expected += c.reshape(64, 64)
    mma_runner(kind)(name, [a, b, c])
    np.testing.assert_allclose(c.reshape(64, 64), expected, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("kind", KINDS)
def test_reductions_and_stores_of_an_mma_result(kind: str):
    a, b = (RNG.standard_normal(n).astype(np.float16) for n in (32 * 32, 32 * 64))
    rows, cols, c = np.zeros(32, np.float32), np.zeros(64, np.float32), np.zeros(2048, np.float32)
    mma_runner(kind)("dot-mma-reduce.gir", [a, b, rows, cols, c])
    product = a.reshape(32, 32).astype(np.float64) @ b.reshape(32, 64)
    np.testing.assert_allclose(c.reshape(32, 64), product, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(rows, product.sum(axis=1), rtol=1e-5, atol=1e-4)
    np.testing.assert_allclose(cols, product.max(axis=0), rtol=1e-5, atol=1e-5)


def _nvidia_available() -> bool:
    from tilec.plugin.manager import load_backends

    backend = load_backends().get("nvidia")
    return backend is not None and bool(backend.is_available())


gpu = pytest.mark.skipif(not _nvidia_available(), reason="needs an NVIDIA GPU")


def _run_on_gpu(dtype, blocks, num_warps, a, b, a_k_major=False):
    (m, k), n = a.shape, b.shape[1]
    c = np.full(m * n, np.nan, np.float32)
    grid = (-(-m // blocks[0]), -(-n // blocks[1]))
    strides_a = (1, m) if a_k_major else (k, 1)
    a_memory = np.ascontiguousarray(a.T) if a_k_major else a
    kernel = compiled(dtype, blocks, num_warps, target=None)
    assert "#gpu.mma" in kernel.asm["gir"]
    kernel.run(grid, [a_memory.reshape(-1), b.reshape(-1), c, m, n, k, *strides_a, n, 1])
    return c.reshape(m, n)


@gpu
@pytest.mark.gpu
@pytest.mark.parametrize("dtype", ["fp16", "bf16"])
def test_one_mma_fragment_order_on_the_gpu(dtype: str):
    """One warp, one m16n8k16: B = I picks A's columns, A = I gives B back, so a misplaced
    fragment element shows as a wrong (row, column)."""
    a = _bits(RNG.standard_normal((16, 16)), dtype)
    eye = _bits(np.eye(16), dtype)
    got = _run_on_gpu(dtype, (16, 8, 16), 1, a, eye[:, :8].copy())
    np.testing.assert_array_equal(got, _floats(a, dtype)[:, :8])
    b = _bits(RNG.standard_normal((16, 8)), dtype)
    np.testing.assert_array_equal(_run_on_gpu(dtype, (16, 8, 16), 1, eye, b), _floats(b, dtype))


@gpu
@pytest.mark.gpu
@pytest.mark.parametrize(("dtype", "blocks", "num_warps", "sizes", "a_k_major"), CASES)
def test_mma_matmul_on_the_gpu(dtype, blocks, num_warps, sizes, a_k_major):
    m, n, k = sizes
    a = _bits(RNG.standard_normal((m, k)), dtype)
    b = _bits(RNG.standard_normal((k, n)), dtype)
    got = _run_on_gpu(dtype, blocks, num_warps, a, b, a_k_major)
    expected = _floats(a, dtype).astype(np.float64) @ _floats(b, dtype)
    np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-4)


NON_COMMUTATIVE_REDUCE = """
#mma = #gpu.mma<{version = 2, warpsPerCTA = [2, 2], instrShape = [16, 8]}>
#slice = #gpu.slice<{dim = 0, parent = #mma}>
func.func @k() attributes {gpu.num_warps = 4 : i32, gpu.threads_per_warp = 32 : i32} {
  %c = arith.constant {value = dense<1.0> : tensor<32x32xf32, #mma>} : tensor<32x32xf32, #mma>
  %r = tile.reduce %c {axis = 0 : i32} : tensor<32xf32, #slice> {
  ^bb0(%x: f32, %y: f32):
    %s = arith.subf %x, %y : f32
    tile.reduce.return %s
  }
  tile.return
}
"""


def test_an_order_sensitive_reduction_along_mma_rows_is_rejected():
    from tilec.lowering import LoweringError
    from tilec_nvidia.target_info import NvidiaTargetInfo

    mod = parse_module(NON_COMMUTATIVE_REDUCE, "reduce.gir")
    with pytest.raises(LoweringError, match=r"convert the operand to a #gpu\.blocked layout"):
        lower_module(mod, NvidiaTargetInfo("sm_80", 32), "k")
