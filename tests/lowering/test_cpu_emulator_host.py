"""The CPU emulator's numerics do not depend on the host (issue 22): it compiles for a fixed
baseline x86-64 machine, never the host's CPU or features, so a `contract`-marked multiply
and add (what `enable_fp_fusion` asks of a GPU) still round each operation, as the interpreter
does, on a host with FMAs too; and its emulated tensor-core sums do not go through NumPy's BLAS
(whose order and FMAs follow the CPU)."""

from __future__ import annotations

import gir_check
import llvmlite.binding as llvm
import mma_emulator
import numpy as np
import pytest
from cpu_emulator import FEATURES, HostTargetInfo, compile_kernel, launch, target_machine
from numerics_check import assert_matches_interpreter

import tilec
import tilec.language as tl
from tilec.ir.parser import parse_module
from tilec.lowering import lower_module

FMA_FEATURES = "+avx,+avx2,+fma"
ONE = 1.0 + 2.0**-12
"""`ONE * ONE` is 1 + 2^-11 + 2^-24: rounded to f32 it loses the 2^-24 that an FMA keeps."""


@tilec.jit
def multiply_add(x_ptr, y_ptr, z_ptr, out_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x, y, z = tl.load(x_ptr + offs), tl.load(y_ptr + offs), tl.load(z_ptr + offs)
    tl.store(out_ptr + offs, x * y + z)


SIGNATURE = {"x_ptr": "*fp32", "y_ptr": "*fp32", "z_ptr": "*fp32", "out_ptr": "*fp32"}


def _contracted_llir() -> tuple[str, object]:
    """`x * y + z` lowered for the emulator with `contract` flags (enable_fp_fusion's)."""
    kernel = tilec.compile(multiply_add, SIGNATURE, {"BLOCK": 128}, backend="nvidia",
                           target="sm_80", num_warps=1)  # fmt: skip
    target = HostTargetInfo()
    target.fp_fusion = True
    lowered = lower_module(parse_module(kernel.asm["gir"], "fma.gir"), target, "multiply_add")
    assert "fmul contract float" in lowered.llvm_ir and "fadd contract float" in lowered.llvm_ir
    return lowered.llvm_ir, lowered


def _args() -> list[np.ndarray]:
    x = np.full(128, ONE, np.float32)
    z = np.full(128, -(1.0 + 2.0**-11), np.float32)
    return [x, x.copy(), z, np.full(128, np.nan, np.float32)]


def test_the_emulator_never_asks_for_the_host_cpu(monkeypatch):
    def refuse(*args):
        raise AssertionError("the emulator asked for the host's CPU")

    monkeypatch.setattr(llvm, "get_host_cpu_name", refuse)
    monkeypatch.setattr(llvm, "get_host_cpu_features", refuse)
    llvm_ir, lowered = _contracted_llir()
    args = _args()
    launch(compile_kernel(llvm_ir, lowered.name), lowered.params, args, (1,), 32)
    assert "-fma" in FEATURES and "-avx" in FEATURES


def test_contract_flags_do_not_fuse_on_the_emulators_machine():
    """The emulator's machine has no FMA instruction, so LLVM keeps the multiply and the add;
    the same IR for a machine with FMA features fuses them (what a host's features would do)."""
    llvm_ir, _ = _contracted_llir()
    module = llvm.parse_assembly(llvm_ir)
    assert "vfmadd" not in target_machine().emit_assembly(module)
    assert "vfmadd" in target_machine(features=FMA_FEATURES).emit_assembly(module)


def test_contracted_ir_rounds_each_operation_as_the_interpreter():
    llvm_ir, lowered = _contracted_llir()
    emulated = _args()
    launch(compile_kernel(llvm_ir, lowered.name), lowered.params, emulated, (1,), 32)
    interpreted = _args()
    tilec.compile(multiply_add, SIGNATURE, {"BLOCK": 128}, backend="interp").run((1,), interpreted)
    np.testing.assert_array_equal(interpreted[3], np.zeros(128, np.float32))
    np.testing.assert_array_equal(emulated[3], interpreted[3])
    if not llvm.get_host_cpu_features().get("fma", False):
        pytest.skip("this host has no FMA: the fused machine cannot run here")
    fused = _args()
    machine = target_machine(features=FMA_FEATURES)
    launch(compile_kernel(llvm_ir, lowered.name, machine), lowered.params, fused, (1,), 32)
    np.testing.assert_array_equal(fused[3], np.full(128, 2.0**-24, np.float32))


@tilec.jit
def f16_dot(a_ptr, b_ptr, c_ptr, N: tl.constexpr):
    rows = tl.arange(0, N)[:, None] * N + tl.arange(0, N)[None, :]
    tl.store(c_ptr + rows, tl.dot(tl.load(a_ptr + rows), tl.load(b_ptr + rows)))


def test_the_emulated_mma_sums_as_the_interpreter_on_every_host():
    """Products whose f32 sum depends on the order: 2^16 + 2^-16 - 2^16 + 2^-16 is 2^-15
    exactly, 2^-16 added in K order in f32 and 0 added pairwise, as BLAS kernels may. The
    emulated mma.sync (`ordered_dot`) and the interpreter both sum in f64 and round once, so
    both give 2^-15 whatever BLAS NumPy picked for this CPU (before, both used NumPy's f32
    BLAS: tests/lowering/test_lower_float8.py's fp8 dot differed in the last bit on an AMD EPYC
    host)."""
    a = np.zeros((16, 16), np.float16)
    b = np.zeros((16, 16), np.float16)
    a[:, :4] = [256.0, 2.0**-8, -256.0, 2.0**-8]
    b[:4, :] = np.array([256.0, 2.0**-8, 256.0, 2.0**-8])[:, None]
    signature = {"a_ptr": "*fp16", "b_ptr": "*fp16", "c_ptr": "*fp32"}
    kernel = tilec.compile(f16_dot, signature, {"N": 16}, backend="nvidia", target="sm_80",
                           num_warps=1)  # fmt: skip
    assert "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32" in kernel.asm["ptx"]
    lowered = lower_module(parse_module(kernel.asm["gir"], "f16_dot.gir"),
                           mma_emulator.MmaHostTargetInfo(), kernel.metadata["kernel"])  # fmt: skip
    emulated = [a, b, np.full((16, 16), np.nan, np.float32)]
    launch(compile_kernel(lowered.llvm_ir, lowered.name), lowered.params, emulated, (1,), 32)
    interpreted = [a, b, np.full((16, 16), np.nan, np.float32)]
    tilec.compile(f16_dot, signature, {"N": 16}, backend="interp").run((1,), interpreted)
    exact = a.astype(np.float64) @ b.astype(np.float64)
    assert (exact == 2.0**-15).all()
    assert_matches_interpreter(emulated[2], interpreted[2], exact)
    np.testing.assert_array_equal(emulated[2], exact.astype(np.float32))


def test_the_test_kernels_compute_alike_with_fma_features_forced():
    """The emulator's tests lower without `contract` (their `TargetInfo` leaves `fp_fusion`
    off), so a machine with FMA features fuses nothing more than the kernel's own `llvm.fma`
    (the FMA dot's: one rounding on either machine, libm's `fmaf` or `vfmadd`), and computes
    the same bits as the emulator's baseline machine (run where the host has FMAs)."""
    mod = gir_check.module("dot-f16.gir")
    lowered = lower_module(mod, HostTargetInfo(), gir_check.kernel_name(mod))
    assert " contract " not in lowered.llvm_ir and '@"llvm.fma.f32"' in lowered.llvm_ir
    if not llvm.get_host_cpu_features().get("fma", False):
        pytest.skip("this host has no FMA: the machine with FMA features cannot run here")
    rng = np.random.default_rng(5)
    a, b = (rng.standard_normal(2048).astype(np.float16) for _ in range(2))
    c = rng.standard_normal(64 * 64).astype(np.float16)
    results = []
    for machine in (target_machine(), target_machine(features=FMA_FEATURES)):
        args = [a, b, c.copy()]
        address = compile_kernel(lowered.llvm_ir, lowered.name, machine)
        launch(address, lowered.params, args, (1,), lowered.num_warps * lowered.threads_per_warp)
        results.append(args[2])
    np.testing.assert_array_equal(results[0], results[1])
