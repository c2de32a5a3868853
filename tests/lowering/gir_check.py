"""Helpers of the lowering tests for reductions, scans, dot, atomics, math and debug ops: lower a
gir file of tests/filecheck/lowering for NVIDIA (verified LLVM IR -> PTX -> `ptxas` when present)
or run it on the CPU (`cpu_emulator`) next to the interpreter on copies of the same arguments.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import llvmlite.binding as llvm
import numpy as np
import pytest
from cpu_emulator import HostTargetInfo, compile_kernel, launch
from numerics_check import assert_matches_interpreter

import tilec.dialects
import tilec.lowering  # noqa: F401  (registers the lowerings)
from tilec.ir.parser import parse_module
from tilec.lowering import lower_module
from tilec_interp.interpreter import execute
from tilec_nvidia.codegen import find_ptxas, llir_to_ptx, ptx_to_cubin
from tilec_nvidia.target_info import NvidiaTargetInfo

Runner = Callable[..., None]
GIR_DIR = Path(__file__).parents[1] / "filecheck" / "lowering"


def module(name: str):
    return parse_module((GIR_DIR / name).read_text(), name)


def kernel_name(mod) -> str:
    return next(op.attributes["sym_name"].value for op in mod.walk() if op.name == "func.func")


def ptx_of(name: str) -> str:
    """The PTX of gir file `name` for sm_90, after LLVM verifies the IR; assembled by `ptxas`
    when it is installed."""
    mod = module(name)
    lowered = lower_module(mod, NvidiaTargetInfo("sm_90", 32), kernel_name(mod))
    llvm.parse_assembly(lowered.llvm_ir).verify()
    ptx = llir_to_ptx(lowered.llvm_ir, "sm_90")
    if find_ptxas() is not None:
        assert ptx_to_cubin(ptx, "sm_90")
    return ptx


def run_on_cpu(name: str, args: list, grid: tuple[int, ...] = (1,)) -> None:
    mod = module(name)
    lowered = lower_module(mod, HostTargetInfo(), kernel_name(mod))
    address = compile_kernel(lowered.llvm_ir, lowered.name)
    launch(address, lowered.params, args, grid, lowered.num_warps * lowered.threads_per_warp)


def run_on_interp(name: str, args: list, grid: tuple[int, ...] = (1,)) -> None:
    mod = module(name)
    execute(mod, kernel_name(mod), grid, args)


def runner(kind: str) -> Runner:
    """`run_on_cpu`, or the GPU runner of `test_lower_gpu` (skips where there is no GPU)."""
    if kind == "cpu":
        return run_on_cpu
    import test_lower_gpu

    if test_lower_gpu.CU is None:
        pytest.skip("no NVIDIA driver or device (cuda.bindings)")
    return test_lower_gpu.Gpu().run


KINDS = ["cpu", pytest.param("gpu", marks=pytest.mark.gpu)]
"""Parametrize a test over `runner` kinds."""


def compare_with_interp(
    name: str,
    args: list,
    grid: tuple[int, ...] = (1,),
    rtol: float = 0.0,
    atol: float | dict[int, np.ndarray] = 0.0,
    run: Runner = run_on_cpu,
    exact: dict[int, np.ndarray] | None = None,
) -> list:
    """Run gir file `name` with `run` (the CPU emulator by default) and on the interpreter, each
    on its own copy of `args`; every array must agree (exactly, unless tolerances are given).
    Where they differ, the error says which side is nearer `exact[i]`, argument i's exact
    values (float64) when the test gives them (`numerics_check`); `atol` may be given per
    argument (`{i: array}`, element by element; the others 0). Returns the arrays `run`
    wrote."""
    cpu = [a.copy() if isinstance(a, np.ndarray) else a for a in args]
    ref = [a.copy() if isinstance(a, np.ndarray) else a for a in args]
    run(name, cpu, grid)
    run_on_interp(name, ref, grid)
    side = "emulator" if run is run_on_cpu else "GPU"
    for i, (got, want) in enumerate(zip(cpu, ref, strict=True)):
        if isinstance(got, np.ndarray):
            tolerance = atol.get(i, 0.0) if isinstance(atol, dict) else atol
            assert_matches_interpreter(got, want, (exact or {}).get(i), rtol, tolerance,
                                       what=f"argument {i}", name=side)  # fmt: skip
    return cpu


def needs_ptxas() -> None:
    if find_ptxas() is None:
        pytest.skip("ptxas is not installed: the PTX was generated but not assembled")
