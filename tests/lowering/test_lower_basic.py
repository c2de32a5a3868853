"""The core LLVM lowering on hand-written gir kernels (tests/filecheck/lowering/*.gir).

Every kernel is lowered for NVIDIA (LLVM IR that LLVM verifies -> PTX -> `ptxas`, when present)
and run on the CPU (`cpu_emulator`: the same lowering with a host `TargetInfo`, every thread of a
block an OS thread), against NumPy with the interpreter's semantics.
"""

from __future__ import annotations

import re
from pathlib import Path

import llvmlite.binding as llvm
import numpy as np
import pytest
from cpu_emulator import HostTargetInfo, compile_kernel, launch

import tilec.dialects  # noqa: F401
from tilec.ir.parser import parse_module
from tilec.lowering import LoweringError, lower_module
from tilec_interp.dtypes import bf16_round, bf16_to_bits, bits_to_bf16
from tilec_nvidia.codegen import find_ptxas, llir_to_ptx, ptx_to_cubin
from tilec_nvidia.target_info import NvidiaTargetInfo

GIR_DIR = Path(__file__).parents[1] / "filecheck" / "lowering"
GIR_FILES = sorted(GIR_DIR.glob("*.gir"))
RNG = np.random.default_rng(0)


def _module(name: str):
    return parse_module((GIR_DIR / name).read_text(), name)


def _kernel_name(module) -> str:
    return next(op.attributes["sym_name"].value for op in module.walk() if op.name == "func.func")


def run_on_cpu(name: str, args: list, grid: tuple[int, ...] = (1,)) -> None:
    """Lower the kernel of gir file `name` for the host and run it; arrays are written in
    place. (`test_lower_gpu.py` runs the same checks with a runner for the GPU.)"""
    module = _module(name)
    lowered = lower_module(module, HostTargetInfo(), _kernel_name(module))
    address = compile_kernel(lowered.llvm_ir, lowered.name)
    launch(address, lowered.params, args, grid, lowered.num_warps * lowered.threads_per_warp)


# NVIDIA: verified LLVM IR, PTX, ptxas --------------------------------------------------------


@pytest.mark.parametrize("path", GIR_FILES, ids=lambda p: p.stem)
def test_lowers_to_ptx_that_ptxas_assembles(path: Path):
    """Every golden gir file, for sm_90 or the arch its RUN lines name (wgmma's: sm_90a)."""
    text = path.read_text()
    named = re.search(r"--arch (sm_\w+)", text)
    arch = named.group(1) if named else "sm_90"
    module = parse_module(text, str(path))
    lowered = lower_module(module, NvidiaTargetInfo(arch, 32), _kernel_name(module))
    llvm.parse_assembly(lowered.llvm_ir).verify()
    assert "ptx_kernel" in lowered.llvm_ir
    ptx = llir_to_ptx(lowered.llvm_ir, arch)
    assert f".entry {lowered.name}(" in ptx
    if find_ptxas() is None:
        pytest.skip("ptxas is not installed: the PTX was generated but not assembled")
    assert ptx_to_cubin(ptx, arch)


def test_vector_add_uses_128_bit_accesses_and_reports_its_abi():
    module = _module("vector_add.gir")
    lowered = lower_module(module, NvidiaTargetInfo("sm_90", 32), "add_kernel")
    ptx = llir_to_ptx(lowered.llvm_ir, "sm_90")
    assert ptx.count("ld.global.v4.b32") == 4
    assert ptx.count("st.global.v4.b32") == 2
    assert "ld.global.b32" not in ptx
    assert lowered.params == ["*fp32", "*fp32", "*fp32", "i32"]
    assert lowered.written == [2]
    assert (lowered.num_warps, lowered.threads_per_warp, lowered.shared_bytes) == (4, 32, 0)


def test_convert_layout_reports_its_shared_memory():
    lowered = lower_module(_module("convert_layout.gir"), NvidiaTargetInfo(), "convert")
    assert lowered.shared_bytes == 256 * 4
    assert lowered.written == [1, 2, 3]


# CPU emulation against NumPy -------------------------------------------------------------------


def test_vector_add_runs():
    check_vector_add_runs(run_on_cpu)


def check_vector_add_runs(run) -> None:
    n = 3 * 1024 - 16
    x, y = RNG.random(n, np.float32), RNG.random(n, np.float32)
    out = np.full(n + 16, -1.0, np.float32)
    run("vector_add.gir", [x, y, out, n], grid=(3,))
    np.testing.assert_array_equal(out[:n], x + y)
    assert (out[n:] == -1).all()


def test_masked_loads_give_other():
    check_masked_loads_give_other(run_on_cpu)


def check_masked_loads_give_other(run) -> None:
    x, y = RNG.random(128, np.float32), RNG.random(128, np.float32)
    out = np.zeros(128, np.float32)
    n, m = 48, 37
    run("masked_load_other.gir", [x, y, out, n, m])
    expected = np.where(np.arange(128) < n, x, 42.0) + np.where(np.arange(128) < m, y, -2.0)
    np.testing.assert_array_equal(out, expected.astype(np.float32))


def test_broadcast_2d_runs():
    check_broadcast_2d_runs(run_on_cpu)


def check_broadcast_2d_runs(run) -> None:
    stride = 80
    x = RNG.random(16 * stride, np.float32)
    bias, scale = RNG.random(64, np.float32), RNG.random(16, np.float32)
    out = np.zeros(16 * stride, np.float32)
    bias_out = np.zeros(64, np.float32)
    run("broadcast_2d.gir", [x, bias, scale, out, bias_out, stride])
    expected = x.reshape(16, stride)[:, :64] + bias[None, :] * scale[:, None]
    np.testing.assert_array_equal(out.reshape(16, stride)[:, :64], expected)
    np.testing.assert_array_equal(bias_out, bias * 2)


def test_convert_layout_trans_and_reshape_run():
    check_convert_layout_trans_and_reshape_run(run_on_cpu)


def check_convert_layout_trans_and_reshape_run(run) -> None:
    x = RNG.random(256, np.float32)
    out, t, flat = (np.zeros(256, np.float32) for _ in range(3))
    run("convert_layout.gir", [x, out, t, flat])
    np.testing.assert_array_equal(out, x * np.arange(256, dtype=np.float32))
    np.testing.assert_array_equal(t.reshape(16, 16), x.reshape(16, 16).T)
    np.testing.assert_array_equal(flat, x)


@pytest.mark.parametrize("flag", [3, -1])
def test_for_if_while_run(flag: int):
    check_for_if_while_run(run_on_cpu, flag)


def check_for_if_while_run(run, flag: int) -> None:
    n = 512
    x = RNG.random(n, np.float32)
    out = np.zeros(129, np.float32)
    run("control_flow.gir", [x, out, n, flag])
    acc = np.zeros(128, np.float32)
    for row in x.reshape(-1, 128):
        acc = acc + row
    expected = acc * 2 if flag > 0 else acc - 2
    for _ in range(9):  # the while loop doubles k from 1 to 512, adding 1 each time
        expected = expected + np.float32(1)
    np.testing.assert_array_equal(out[:128], expected)
    assert out[128] == 512


def test_casts_and_integer_semantics_match_the_interpreter():
    check_casts_and_integer_semantics_match_the_interpreter(run_on_cpu)


def check_casts_and_integer_semantics_match_the_interpreter(run) -> None:
    special = [np.nan, np.inf, -np.inf, 300.5, -300.5, 2.5, -2.5, -0.7, 255.9, 1e-3, 1 / 3]
    x = np.concatenate([special, RNG.normal(0, 100, 128 - len(special))]).astype(np.float32)
    a = RNG.integers(-(2**31), 2**31, 128, dtype=np.int64).astype(np.int32)
    b = RNG.integers(-40, 40, 128).astype(np.int32)
    a[:4], b[:4] = [np.iinfo(np.int32).min, 7, -7, 5], [-1, 0, 2, 33]
    outs = {
        "h": np.zeros(128, np.float16),
        "bf": np.zeros(128, np.uint16),
        "s8": np.zeros(128, np.int8),
        "u8": np.zeros(128, np.uint8),
        "div": np.zeros(128, np.int32),
        "rem": np.zeros(128, np.int32),
        "shl": np.zeros(128, np.int32),
        "shr": np.zeros(128, np.int32),
        "lt": np.zeros(128, np.uint8),
    }
    run("casts.gir", [x, a, b, *outs.values()])
    np.testing.assert_array_equal(outs["h"], x.astype(np.float16))
    # as values: the GPU's NaN is 0x7FFF, the interpreter's 0x7FC0
    np.testing.assert_array_equal(bits_to_bf16(outs["bf"]), bf16_round(x))
    np.testing.assert_array_equal(outs["s8"], _saturate(x, -128, 127))
    np.testing.assert_array_equal(outs["u8"], _saturate(x, 0, 255))
    a64, b64 = a.astype(np.int64), b.astype(np.int64)
    safe = np.where(b64 == 0, 1, b64)
    quotient = np.where(b64 == 0, 0, np.trunc(a64 / safe)).astype(np.int64)
    quotient = np.where((a64 == -(2**31)) & (b64 == -1), a64, quotient)
    np.testing.assert_array_equal(outs["div"], quotient.astype(np.int32))
    remainder = np.where(b64 == 0, 0, a64 - np.trunc(a64 / safe).astype(np.int64) * safe)
    np.testing.assert_array_equal(outs["rem"], remainder.astype(np.int32))
    amount = b.view(np.uint32).astype(np.int64)
    shl = np.where(amount >= 32, 0, (a64 << np.minimum(amount, 31)) & 0xFFFFFFFF)
    np.testing.assert_array_equal(outs["shl"], shl.astype(np.uint32).view(np.int32))
    shr = np.where(amount >= 32, np.where(a < 0, -1, 0), a64 >> np.minimum(amount, 31))
    np.testing.assert_array_equal(outs["shr"], shr.astype(np.int32))
    np.testing.assert_array_equal(outs["lt"], (a < b).astype(np.uint8))


def test_f16_bf16_f64_i1_and_unsigned_offsets_run():
    check_f16_bf16_f64_i1_and_unsigned_offsets_run(run_on_cpu)


def check_f16_bf16_f64_i1_and_unsigned_offsets_run(run) -> None:
    h = RNG.uniform(-4, 4, 256).astype(np.float16)
    bf = bf16_round(RNG.uniform(-4, 4, 256).astype(np.float32))
    bf_bits = bf16_to_bits(bf)
    d = RNG.random(64)
    flags = RNG.integers(0, 2, 128).astype(np.uint8)
    u = np.zeros(256, np.float32)
    expected_h, expected_d, expected_flags = h + np.float16(1.5), d * d, 1 - flags
    base, far = 2**31 + 5, -(2**31)  # the u32 offset is zero-extended: it lands at u[5:]
    run("dtypes.gir", [h, bf_bits, d, flags, u, base, far])
    np.testing.assert_array_equal(h, expected_h)
    np.testing.assert_array_equal(bf_bits, bf16_to_bits(bf16_round(bf * np.float32(3))))
    np.testing.assert_array_equal(d, expected_d)
    np.testing.assert_array_equal(flags, expected_flags)
    np.testing.assert_array_equal(u[5:133], (base + np.arange(128)).astype(np.float32))


def test_softmax_rows_run():
    check_softmax_rows_run(run_on_cpu)


def check_softmax_rows_run(run, rows: int = 3, n_cols: int = 1008) -> None:
    stride = 1024
    x = RNG.standard_normal((rows, stride)).astype(np.float32)
    out = np.zeros((rows, stride), np.float32)
    run("softmax_rows.gir", [out, x, stride, n_cols], grid=(rows,))
    row = x[:, :n_cols].astype(np.float64)
    e = np.exp(row - row.max(axis=1, keepdims=True))
    np.testing.assert_allclose(out[:, :n_cols], e / e.sum(axis=1, keepdims=True), rtol=1e-5)
    assert (out[:, n_cols:] == 0).all()


def _saturate(x: np.ndarray, lo: int, hi: int) -> np.ndarray:
    clean = np.where(np.isnan(x), 0, np.trunc(x.astype(np.float64)))
    return np.clip(clean, lo, hi).astype(np.int64)


# Errors ----------------------------------------------------------------------------------------


def test_bf16_on_an_arch_without_bf16_is_an_error_naming_the_op():
    module = _module("casts.gir")
    with pytest.raises(
        LoweringError,
        match=r"casts.gir:\d+:\d+: 'arith.truncf' converts bf16, which sm_75 has no instructions "
        r"for; compile for sm_80 or newer, or use f16/f32",
    ):
        lower_module(module, NvidiaTargetInfo("sm_75", 32), "casts")


def test_a_target_without_bf16_conversions_names_its_own_fix():
    """The core asks the target (`TargetInfo.unsupported_conversion`); it names no arch."""

    class NoBf16(NvidiaTargetInfo):
        def unsupported_conversion(self, dtype):
            return "use f32 on this target" if dtype == "bf16" else None

    with pytest.raises(LoweringError, match=r"no instructions for; use f32 on this target$"):
        lower_module(_module("casts.gir"), NoBf16("sm_90", 32), "casts")
    assert NvidiaTargetInfo("sm_80", 32).unsupported_conversion("bf16") is None


def test_tir_without_launch_facts_is_rejected():
    module = parse_module("func.func @k(%p: !tile.ptr<f32>) {\n  tile.return\n}\n", "k.tir")
    with pytest.raises(LoweringError, match=r"no .gpu\.num_warps. attribute"):
        lower_module(module, NvidiaTargetInfo(), "k")
    with pytest.raises(LoweringError, match=r"no function @other.*@k"):
        lower_module(module, NvidiaTargetInfo(), "other")
